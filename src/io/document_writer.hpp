// DocumentWriter: one sequence of calls that writes a document as YAML or
// as JSON, for the files whose two forms carry the same keys (plan files,
// io/plan_io.cpp, and the specs they embed, io/spec_writer.hpp).
//
// The root is a mapping. Inside a mapping, key() names the next value,
// mapping or list; inside a list, values come without keys. YAML: block
// style, two-space indent; a list begun `inline` on one line ([0, 12]);
// names a YAML reader would take for a number, a boolean or null ("2024",
// "yes") double-quoted; numbers in the shortest text that reads back as the
// same double, non-finite ones as .inf/-.inf/.nan. JSON: cereal's archive
// layout (two-space indent, one list item a line), numbers as rapidjson
// writes them (exact round trip), non-finite ones as Infinity/NaN.
//
// Internal to src/io. Cost: linear in the output. Not thread-safe per
// instance.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace autohaap::detail {

class DocumentWriter {
 public:
  virtual ~DocumentWriter() = default;
  virtual void key(std::string_view key) = 0;
  virtual void begin_map() = 0;
  virtual void end_map() = 0;
  virtual void begin_list(bool inline_list) = 0;
  virtual void end_list() = 0;
  virtual void value(int v) = 0;
  virtual void value(long long v) = 0;
  virtual void value(double v) = 0;
  virtual void value(bool v) = 0;
  virtual void value(const std::string& v) = 0;
  void value(const char* v) { value(std::string(v)); }
};

// The document `write` makes of the root mapping, ending in a newline.
std::string yaml_document(const std::function<void(DocumentWriter&)>& write);
std::string json_document(const std::function<void(DocumentWriter&)>& write);

// The shortest text that reads back as the same double (YAML spellings for
// the non-finite values).
std::string number_text(double v);

}  // namespace autohaap::detail
