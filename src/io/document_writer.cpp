#include "document_writer.hpp"

#include "rapidjson.hpp"  // rapidjson as cereal configures it

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>

namespace autohaap::detail {
namespace {

// Names go out quoted when a YAML reader would otherwise take them for a
// number, a boolean or null (a cluster called "2024" or "yes"): our readers
// ask for strings, but scripts reading the files with other parsers do not.
void emit_name(YAML::Emitter& out, const std::string& name) {
  bool ambiguous = false;
  try {
    const YAML::Node as_plain = YAML::Load(name);
    double number;
    bool flag;
    ambiguous = !as_plain.IsScalar() || YAML::convert<double>::decode(as_plain, number) ||
                YAML::convert<bool>::decode(as_plain, flag);
  } catch (const YAML::Exception&) {
    // Not valid as a plain scalar at all; the emitter quotes it by itself.
  }
  if (ambiguous && !name.empty()) out << YAML::DoubleQuoted;
  out << name;
}

class YamlWriter final : public DocumentWriter {
 public:
  YamlWriter() { out_ << YAML::BeginMap; }
  std::string finish() {
    out_ << YAML::EndMap;
    return std::string(out_.c_str()) + "\n";
  }
  void key(std::string_view key) override { out_ << YAML::Key << std::string(key) << YAML::Value; }
  void begin_map() override { out_ << YAML::BeginMap; }
  void end_map() override { out_ << YAML::EndMap; }
  void begin_list(bool inline_list) override {
    if (inline_list) out_ << YAML::Flow;
    out_ << YAML::BeginSeq;
  }
  void end_list() override { out_ << YAML::EndSeq; }
  void value(int v) override { out_ << v; }
  void value(long long v) override { out_ << v; }
  void value(double v) override { out_ << number_text(v); }
  void value(bool v) override { out_ << v; }
  void value(const std::string& v) override { emit_name(out_, v); }
  using DocumentWriter::value;

 private:
  YAML::Emitter out_;
};

// Through cereal's archive, so plan files keep the layout they always had.
class JsonWriter final : public DocumentWriter {
 public:
  // cereal's "precision" option caps decimal places, which would round
  // small numbers away; rapidjson's default (no cap) keeps the round trip
  // exact. Two-space indent, as in the YAML form.
  explicit JsonWriter(std::ostream& os)
      : ar_(os, Options(rj::Writer<rj::StringBuffer>::kDefaultMaxDecimalPlaces, Options::IndentChar::space, 2)) {}
  void key(std::string_view key) override { key_ = std::string(key); }
  void begin_map() override {
    name_next();
    ar_.startNode();
  }
  void end_map() override { ar_.finishNode(); }
  void begin_list(bool) override {
    name_next();
    ar_.startNode();
    ar_.makeArray();
  }
  void end_list() override { ar_.finishNode(); }
  void value(int v) override { put(v); }
  void value(long long v) override { put(static_cast<std::int64_t>(v)); }
  void value(double v) override { put(v); }
  void value(bool v) override { put(v); }
  void value(const std::string& v) override { put(v); }
  using DocumentWriter::value;

 private:
  using Options = cereal::JSONOutputArchive::Options;
  // The pending key names the next node (none inside a list).
  void name_next() {
    held_ = std::move(key_);  // cereal keeps the pointer until it writes the name
    key_.reset();
    ar_.setNextName(held_ ? held_->c_str() : nullptr);
  }
  template <class T>
  void put(const T& v) {
    name_next();
    ar_.writeName();
    ar_.saveValue(v);
  }
  cereal::JSONOutputArchive ar_;
  std::optional<std::string> key_, held_;
};

}  // namespace

std::string number_text(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, result.ptr);
}

std::string yaml_document(const std::function<void(DocumentWriter&)>& write) {
  YamlWriter w;
  write(w);
  return w.finish();
}

std::string json_document(const std::function<void(DocumentWriter&)>& write) {
  std::ostringstream os;
  {
    JsonWriter w(os);
    write(w);
  }  // the archive closes the document when it goes out of scope
  return os.str() + "\n";
}

}  // namespace autohaap::detail
