// JSON input: how every JSON file a user or an earlier run hands in is read
// (plans, Metis profiles, batch result files), so that no content of a file
// can crash a reader or reach undefined behaviour, only be refused by name.
//
// checked_json() reads the text once, without recursion, and refuses
//   - arrays and objects nested deeper than kMaxJsonDepth (nothing that
//     walks a document afterwards — cereal's archive, the renderer of a
//     value in an error message — can then run out of stack),
//   - numbers outside the range of a double, and
//   - strings and keys holding a NUL character (\u0000), which every
//     reader, taking strings as C strings, would cut short there;
// then hands on the document with every number in the form rapidjson's own
// writer gives it. Numbers are converted exactly (std::from_chars), never
// by rapidjson's digit-string paths, which on long or extreme numbers
// (`0.0e-100`, a 1,000-digit integer, `0.1e-2147483639`) read out of bounds
// or overflow; a written number reads back as exactly the double written.
// Errors are InputError naming the file and the line and column.
// Cost: linear in the text, constant stack. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "rapidjson.hpp"

namespace autohaap {

// The deepest nesting of arrays and objects a JSON input may have. The
// deepest schema read is a plan's with its specs (root, specs, cluster,
// groups, a group, its device, its efficiency curve, a point: 8 levels); 64
// leaves room for any schema to grow and keeps a recursive
// walk of an accepted document to a few kilobytes of stack.
inline constexpr int kMaxJsonDepth = 64;

// "line L, column C" (both from 1) of byte `offset` of `text`.
std::string text_position(std::string_view text, std::size_t offset);

// `text` as every reader here may parse it, or InputError(file, "",
// "line L, column C: <what>", <what is allowed>) for a syntax error
// ("well-formed JSON"), nesting deeper than kMaxJsonDepth ("JSON nested at
// most 64 levels deep"), a number out of a double's range or a NUL in a
// string ("strings without NUL characters").
std::string checked_json(std::string_view text, const std::string& file);

// checked_json, parsed into `doc`. Returns the checked text, for a second
// reader of the same document (cereal's archive).
std::string parse_json(std::string_view text, const std::string& file, rj::Document& doc);

// A parsed JSON value as the YAML node the YAML readers walk (YamlValue,
// YamlObject, the plan reader), so that one set of typed accessors and key
// checks serves both forms: strings keep a quoted scalar's tag ("!", so a
// reader can refuse "4" where a number belongs), numbers their JSON text
// (4.0 stays 4.0, not an integer), keys given twice stay twice (and are
// refused as in YAML). Recursive: call it on documents from parse_json only,
// whose nesting is bounded.
YAML::Node yaml_of_json(const rj::Value& v);

}  // namespace autohaap
