// YamlValue / YamlObject: strict, typed access to a parsed YAML document.
//
// Every value remembers the file it came from and its key path inside it
// (`groups[1].nodes`), so any conversion or range failure becomes one
// InputError naming file, key path, offending value and what is allowed.
// YamlObject rejects duplicate keys on construction and, through
// check_keys(), any key outside an allowed set: a misspelt optional key must
// never fall back silently to its default.
//
// Used by the spec loader (io/spec_loader.hpp) and by any other reader of
// user YAML (plans, manifests). Not thread-safe to share a single instance
// across threads while reading (yaml-cpp nodes are not); cost is a map
// lookup per access, O(keys) for check_keys.
#pragma once

#include <cstdint>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace autohaap {

// The range a number must lie in. Each bound carries the wording used in
// error messages ("a positive integer", "a number in (0, 1]").
enum class Bound { any, non_negative, positive, fraction };

class YamlObject;

class YamlValue {
 public:
  YamlValue(YAML::Node node, std::string file, std::string path)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

  const YAML::Node& node() const { return node_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  bool is_scalar() const { return node_.IsScalar(); }
  bool is_list() const { return node_.IsSequence(); }
  bool is_map() const { return node_.IsMap(); }

  int as_int(Bound bound = Bound::any) const;
  double as_double(Bound bound = Bound::any) const;
  bool as_bool() const;
  std::string as_string() const;   // a non-empty scalar without NUL characters
  YamlObject as_object() const;
  std::vector<YamlValue> as_list() const;  // any length; elements carry path[i]

  // The value as a user would write it, for error messages: the scalar
  // itself, a flow-style rendering of a list or map, or "null".
  std::string text() const;
  // Throws InputError(file, path, text(), allowed).
  [[noreturn]] void fail(const std::string& allowed) const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string path_;
};

class YamlObject {
 public:
  // Throws InputError when `node` is not a map or repeats a key.
  YamlObject(YAML::Node node, std::string file, std::string path);

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  // "path.key", or just "key" at the top level.
  std::string key_path(std::string_view key) const;

  bool has(const std::string& key) const;
  std::vector<std::string> keys() const;  // in file order
  // Rejects the first key not in `allowed`, naming the allowed keys and the
  // closest one when the unknown key looks like a typo.
  void check_keys(const std::vector<std::string>& allowed) const;

  // A required key: missing => InputError(file, key path, "(missing)", ...).
  YamlValue at(const std::string& key, const std::string& expected) const;
  std::optional<YamlValue> find(const std::string& key) const;

  // Typed shortcuts. The three-argument forms are optional keys.
  int get_int(const std::string& key, Bound bound) const;
  int get_int(const std::string& key, Bound bound, int fallback) const;
  double get_double(const std::string& key, Bound bound) const;
  double get_double(const std::string& key, Bound bound, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string path_;
};

// The scalar rules every reader of user YAML or JSON applies (YamlValue
// here; the plan reader, io/plan_io.cpp):
// - Integers are written in decimal: optional sign, digits, no leading
//   zero. yaml-cpp follows YAML 1.1 and reads 010 as octal 8 and 0x10 as
//   16, where YAML 1.2's core schema reads 010 as 10, so a node count of
//   "010" would silently be 8; anything else is refused, not guessed.
bool is_decimal_integer(std::string_view text);
// - Other numbers are decimal too: digits with an optional sign, point
//   and exponent (no hexadecimal float, no inf or nan).
bool is_decimal_number(std::string_view text);
// - A number or a boolean is a plain scalar: a quoted "8" is a string to
//   YAML, as a JSON string is (io/json_input.cpp tags both "!"), though
//   yaml-cpp converts it all the same; so is `!!str 8` or any other
//   explicitly tagged scalar.
bool is_plain_scalar(const YAML::Node& node);
// - Booleans are YAML 1.2's true/false (any of three casings). yaml-cpp
//   also takes YAML 1.1's yes/no/on/off/y/n, so a name or a country code
//   ("no") would become a flag. nullopt for anything else.
std::optional<bool> yaml12_bool(std::string_view text);
// - Text is well-formed UTF-8 (RFC 3629, Sec. 4): no stray continuation
//   byte, overlong form, UTF-16 surrogate or code point past U+10FFFF.
//   Names are written into JSON plans and reports, whose readers reject
//   anything else.
bool is_valid_utf8(std::string_view text);
// The code point of the UTF-8 sequence at text[i] (i < text.size()),
// advancing i past it, at least one byte; -1 where the sequence breaks
// those rules.
long next_utf8_code_point(std::string_view text, std::size_t& i);

// Words for an error message's "allowed" part, e.g. "a positive integer".
std::string describe_int(Bound bound);
std::string describe_double(Bound bound);

// Parses a whole YAML file; a missing file or malformed YAML becomes an
// InputError (malformed: key "line L, column C", value = parser message;
// nested past the parser's depth limit: value and allowed name the limit;
// larger than kMaxYamlFileBytes: refused before it is parsed).
// The one way user YAML is parsed.
YAML::Node load_yaml_file(const std::string& path);

// The largest YAML file read: yaml-cpp's tree takes about 300 bytes of
// memory a byte of text (a 10 MB training file of a 5-million-entry list
// took 3.2 GB and 20 s before it was refused), and the largest spec or plan
// written on purpose (a model of 1,024 listed layers, a plan of 1,024
// stages with its specs) is a few hundred kilobytes.
inline constexpr std::uintmax_t kMaxYamlFileBytes = 4u << 20;
// The same for text in memory; `source` names it in messages.
YAML::Node parse_yaml(const std::string& text, const std::string& source);

}  // namespace autohaap
