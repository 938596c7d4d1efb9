#include "autohaap/io/yaml_value.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "autohaap/error.hpp"
#include "name_list.hpp"

namespace autohaap {

namespace {

bool within(double v, Bound bound) {
  switch (bound) {
    case Bound::any: return true;
    case Bound::non_negative: return v >= 0;
    case Bound::positive: return v > 0;
    case Bound::fraction: return v > 0 && v <= 1;
  }
  return false;
}

std::string line_column(const YAML::Mark& mark) {
  // yaml-cpp counts from 0; editors count from 1.
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

// Where a YAML document begins and whether it holds anything: an empty
// document (a trailing '---', a lone '~') holds nothing.
class DocumentContent final : public YAML::EventHandler {
 public:
  bool has_content = false;
  YAML::Mark first;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { note(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    note(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(mark);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& mark) {
    if (!has_content) first = mark;
    has_content = true;
  }
};

// A file is one document: a second one ('---' and another model) would be
// silently ignored, and `validate` would call the file valid. The
// documents after the first are walked as parser events, a fixed number of
// them, and a file with more is refused: yaml-cpp's LoadAll, which loops
// until the parser reports no more documents, never returns on some
// malformed streams (a "document" that consumes no token).
void refuse_later_documents(const std::string& text, const std::string& source) {
  constexpr int kLaterDocumentsLookedAt = 8;
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentContent first;
  if (!parser.HandleNextDocument(first)) return;
  for (int k = 0; k < kLaterDocumentsLookedAt; ++k) {
    DocumentContent later;
    if (!parser.HandleNextDocument(later)) return;
    if (later.has_content)
      throw InputError(source, line_column(later.first), "a second YAML document",
                       "one document (nothing after a second '---')");
  }
  // Past the documents looked at, one not read could hold anything.
  throw InputError(source, "", "more than " + std::to_string(kLaterDocumentsLookedAt + 1) + " YAML documents",
                   "one document (nothing after a second '---')");
}

}  // namespace

// Not quoted and not tagged (yaml_value.hpp, the scalar rules): yaml-cpp
// gives a plain scalar the non-specific tag "?", one built in code none.
bool is_plain_scalar(const YAML::Node& node) {
  return node.IsScalar() && (node.Tag().empty() || node.Tag() == "?");
}

std::string describe_int(Bound bound) {
  switch (bound) {
    case Bound::any: return "an integer";
    case Bound::non_negative: return "an integer >= 0";
    case Bound::positive: return "a positive integer";
    case Bound::fraction: return "an integer in (0, 1]";
  }
  return "an integer";
}

std::string describe_double(Bound bound) {
  switch (bound) {
    case Bound::any: return "a number";
    case Bound::non_negative: return "a number >= 0";
    case Bound::positive: return "a positive number";
    case Bound::fraction: return "a number in (0, 1]";
  }
  return "a number";
}

// ------------------------------------------------------ scalar rules
// (yaml_value.hpp says why each)

bool is_decimal_integer(std::string_view text) {
  std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  if (i == text.size()) return false;
  if (text[i] == '0' && i + 1 != text.size()) return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool is_decimal_number(std::string_view text) {
  std::size_t i = 0, digits = 0;
  auto digit = [&] { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  for (; digit(); ++i) ++digits;
  if (i < text.size() && text[i] == '.')
    for (++i; digit(); ++i) ++digits;
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    std::size_t exponent = 0;
    for (; digit(); ++i) ++exponent;
    if (exponent == 0) return false;
  }
  return i == text.size();
}

long next_utf8_code_point(std::string_view text, std::size_t& i) {
  const unsigned char lead = static_cast<unsigned char>(text[i++]);
  if (lead < 0x80) return lead;
  // Continuation bytes after the lead: C2-DF one, E0-EF two, F0-F4 three;
  // 80-C1 (a stray continuation, an overlong 2-byte form) and F5-FF none.
  const int extra = lead >= 0xf0 && lead < 0xf5 ? 3 : lead >= 0xe0 ? (lead < 0xf0 ? 2 : -1) : lead >= 0xc2 ? 1 : -1;
  if (extra < 0) return -1;
  long cp = lead & (0x3f >> extra);
  for (int k = 0; k < extra; ++k) {
    if (i >= text.size() || (static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (static_cast<unsigned char>(text[i++]) & 0x3f);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
  const long least[] = {0, 0x80, 0x800, 0x10000};
  if (cp < least[extra] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return -1;
  return cp;
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();)
    if (next_utf8_code_point(text, i) < 0) return false;
  return true;
}

std::optional<bool> yaml12_bool(std::string_view text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

// ---------------------------------------------------------------- YamlValue

std::string YamlValue::text() const {
  if (!node_ || node_.IsNull()) return "null";
  if (node_.IsScalar()) return node_.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node_;
  return out.c_str();
}

void YamlValue::fail(const std::string& allowed) const { throw InputError(file_, path_, text(), allowed); }

int YamlValue::as_int(Bound bound) const {
  int v = 0;
  // convert<int> demands the whole scalar be an integer: "3.5", "4x" and
  // out-of-range numbers fail instead of being truncated.
  if (!is_plain_scalar(node_) || !is_decimal_integer(node_.Scalar()))
    fail(describe_int(bound) + ", written in decimal and not quoted");
  // A decimal integer beyond what any key allows: say so (each key's own,
  // smaller range is checked where the spec is).
  if (!YAML::convert<int>::decode(node_, v))
    fail(describe_int(bound) + " of at most " + std::to_string(std::numeric_limits<int>::max()) +
         " in magnitude (each key's own range is smaller)");
  if (!within(v, bound)) fail(describe_int(bound) + ", written in decimal and not quoted");
  return v;
}

double YamlValue::as_double(Bound bound) const {
  double v = 0;
  if (!is_plain_scalar(node_) || !YAML::convert<double>::decode(node_, v) || !std::isfinite(v) || !within(v, bound))
    fail(describe_double(bound) + ", not quoted");
  return v;
}

bool YamlValue::as_bool() const {
  if (is_plain_scalar(node_))
    if (const auto v = yaml12_bool(node_.Scalar())) return *v;
  fail("true or false, not quoted");
}

std::string YamlValue::as_string() const {
  if (!node_.IsScalar() || node_.Scalar().empty()) fail("a non-empty string");
  // A tag that makes the scalar something else (`!!binary aGk=` is the
  // bytes "hi", `!!int 4` a number) is not text: taken as its letters, it
  // named what the file did not mean. Plain, quoted and `!!str` are text.
  const std::string& tag = node_.Tag();
  if (!(tag.empty() || tag == "?" || tag == "!" || tag == "tag:yaml.org,2002:str"))
    fail("a string, untagged or tagged !!str (not " + tag + ")");
  // A NUL ("\0" in a quoted scalar) would end the string in every JSON
  // file it is written to (io/json_input.hpp).
  if (node_.Scalar().find('\0') != std::string::npos) fail("a string without NUL characters");
  if (!is_valid_utf8(node_.Scalar())) fail("text in UTF-8");
  return node_.Scalar();
}

YamlObject YamlValue::as_object() const { return YamlObject(node_, file_, path_); }

std::vector<YamlValue> YamlValue::as_list() const {
  if (!node_.IsSequence()) fail("a list");
  std::vector<YamlValue> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], file_, path_ + "[" + std::to_string(i) + "]");
  return out;
}

// --------------------------------------------------------------- YamlObject

YamlObject::YamlObject(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap()) YamlValue(node_, file_, path_).fail("a map of key: value");
  // yaml-cpp keeps both copies of a repeated key and lookups see the first;
  // a user editing the second would be ignored without a word.
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) YamlValue(kv.first, file_, path_).fail("plain keys");
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second) throw InputError(file_, key_path(key), key, "each key at most once");
  }
}

std::string YamlObject::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool YamlObject::has(const std::string& key) const { return static_cast<bool>(node_[key]); }

std::vector<std::string> YamlObject::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.Scalar());
  return out;
}

void YamlObject::check_keys(const std::vector<std::string>& allowed) const {
  for (const auto& kv : node_) {
    const std::string& key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      throw InputError(file_, key_path(key), key, "keys " + detail::names_with_hint(allowed, key));
  }
}

std::optional<YamlValue> YamlObject::find(const std::string& key) const {
  const YAML::Node child = node_[key];
  if (!child) return std::nullopt;
  return YamlValue(child, file_, key_path(key));
}

YamlValue YamlObject::at(const std::string& key, const std::string& expected) const {
  auto v = find(key);
  if (!v) throw InputError(file_, key_path(key), "(missing)", "required: " + expected);
  return *v;
}

int YamlObject::get_int(const std::string& key, Bound bound) const {
  return at(key, describe_int(bound)).as_int(bound);
}

int YamlObject::get_int(const std::string& key, Bound bound, int fallback) const {
  auto v = find(key);
  return v ? v->as_int(bound) : fallback;
}

double YamlObject::get_double(const std::string& key, Bound bound) const {
  return at(key, describe_double(bound)).as_double(bound);
}

double YamlObject::get_double(const std::string& key, Bound bound, double fallback) const {
  auto v = find(key);
  return v ? v->as_double(bound) : fallback;
}

bool YamlObject::get_bool(const std::string& key, bool fallback) const {
  auto v = find(key);
  return v ? v->as_bool() : fallback;
}

std::string YamlObject::get_string(const std::string& key) const { return at(key, "a non-empty string").as_string(); }

std::string YamlObject::get_string(const std::string& key, const std::string& fallback) const {
  auto v = find(key);
  return v ? v->as_string() : fallback;
}

// ------------------------------------------------------------------ parsing

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  try {
    YAML::Node document = YAML::Load(text);
    refuse_later_documents(text, source);
    return document;
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's parser recurses per level and stops at its own limit, with
    // a message that says only "bad file".
    throw InputError(source, line_column(e.mark),
                     "lists and maps nested " + std::to_string(e.depth()) + " levels deep",
                     "YAML nested less than " + std::to_string(e.depth()) + " levels deep");
  } catch (const YAML::ParserException& e) {
    throw InputError(source, line_column(e.mark), e.msg, "well-formed YAML");
  }
}

YAML::Node load_yaml_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    const char* what = std::filesystem::is_directory(path, ec) ? "a directory"
                       : std::filesystem::exists(path, ec)     ? "not a regular file"
                                                               : "no such file";
    throw InputError(path, "", what, "an existing YAML file");
  }
  const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxYamlFileBytes)
    throw InputError(path, "", std::to_string(bytes) + " bytes",
                     "a YAML file of at most " + std::to_string(kMaxYamlFileBytes >> 20) + " MiB");
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "unreadable", "a readable YAML file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_yaml(text.str(), path);
}

}  // namespace autohaap
