#include "json_input.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "autohaap/error.hpp"
#include "document_writer.hpp"

namespace autohaap {
namespace {

using Stream = rj::EncodedInputStream<rj::UTF8<>, rj::MemoryStream>;
using CanonicalWriter = rj::Writer<rj::StringBuffer, rj::UTF8<>, rj::UTF8<>, rj::CrtAllocator, rj::kWriteNanAndInfFlag>;

// Digits of an integer rapidjson reads exactly and safely (uint64 has 20).
constexpr std::size_t kMaxIntegerDigits = 20;

// Characters of a number token, NaN and Infinity included: none of them
// can stand just before a number in JSON.
bool number_char(char c) { return std::strchr("0123456789+-.eEINafinty", c) != nullptr && c != '\0'; }

// SAX handler: copies the document to `out` (numbers canonical, see the
// header), counting nesting; returning false ends the parse, with `refusal`
// saying why.
class Canonicalizer : public rj::BaseReaderHandler<rj::UTF8<>, Canonicalizer> {
 public:
  Canonicalizer(std::string_view text, const Stream& stream, rj::StringBuffer& out)
      : text_(text), stream_(stream), writer_(out) {}

  std::string refusal, allowed;
  std::size_t refused_at = 0;

  bool StartObject() { return open() && writer_.StartObject(); }
  bool StartArray() { return open() && writer_.StartArray(); }
  bool EndObject(rj::SizeType n) { return --depth_, writer_.EndObject(n); }
  bool EndArray(rj::SizeType n) { return --depth_, writer_.EndArray(n); }
  bool Key(const char* s, rj::SizeType n, bool) { return without_nul(s, n) && writer_.Key(s, n); }
  bool String(const char* s, rj::SizeType n, bool) { return without_nul(s, n) && writer_.String(s, n); }
  bool Null() { return writer_.Null(); }
  bool Bool(bool b) { return writer_.Bool(b); }

  // Every number arrives here (kParseNumbersAsStringsFlag); its text is
  // taken from the input, which ends where the stream stands now.
  bool RawNumber(const char*, rj::SizeType, bool) {
    const std::size_t end = stream_.Tell();
    std::size_t begin = end;
    while (begin > 0 && number_char(text_[begin - 1])) --begin;
    const std::string_view token = text_.substr(begin, end - begin);
    const bool integer = token.find_first_of(".eEIN") == std::string_view::npos;
    const std::size_t digits = token.size() - (token.front() == '-' ? 1 : 0);
    if (integer && digits <= kMaxIntegerDigits)
      return writer_.RawValue(token.data(), token.size(), rj::kNumberType);
    double value = 0;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || ptr != token.data() + token.size()) {
      refused_at = begin;
      refusal = "the number " + std::string(token.substr(0, 40)) + (token.size() > 40 ? "..." : "");
      allowed = "numbers within the range of a double (magnitude 2.2e-308 to 1.8e308, or 0)";
      return false;
    }
    return writer_.Double(value);
  }

 private:
  bool open() {
    if (++depth_ <= kMaxJsonDepth) return true;
    refused_at = stream_.Tell();
    refusal = "arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    allowed = "JSON nested at most " + std::to_string(kMaxJsonDepth) + " levels deep";
    return false;
  }

  // Readers take strings as C strings (cereal's archive among them): a
  // NUL inside one would end it there, silently.
  bool without_nul(const char* s, rj::SizeType n) {
    if (std::memchr(s, '\0', n) == nullptr) return true;
    refused_at = stream_.Tell();
    refusal = "a string with a NUL character (\\u0000)";
    allowed = "strings without NUL characters";
    return false;
  }

  std::string_view text_;
  const Stream& stream_;
  CanonicalWriter writer_;
  int depth_ = 0;
};

}  // namespace

std::string text_position(std::string_view text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string checked_json(std::string_view text, const std::string& file) {
  rj::MemoryStream memory(text.data(), text.size());
  Stream stream(memory);
  rj::StringBuffer out;
  Canonicalizer canonical(text, stream, out);
  rj::Reader reader;
  // No kParseFullPrecisionFlag, and numbers as text: rapidjson converts none.
  reader.Parse<rj::kParseIterativeFlag | rj::kParseNumbersAsStringsFlag | rj::kParseNanAndInfFlag>(stream, canonical);
  if (!canonical.refusal.empty())
    throw InputError(file, "", text_position(text, canonical.refused_at) + ": " + canonical.refusal, canonical.allowed);
  if (reader.HasParseError()) {
    throw InputError(file, "",
                     text_position(text, reader.GetErrorOffset()) + ": " + rj::GetParseError_En(reader.GetParseErrorCode()),
                     "well-formed JSON");
  }
  return std::string(out.GetString(), out.GetSize());
}

std::string parse_json(std::string_view text, const std::string& file, rj::Document& doc) {
  std::string checked = checked_json(text, file);
  doc.Parse(checked.data(), checked.size());
  // The checked text is well-formed: rapidjson's own writer wrote it.
  if (doc.HasParseError()) throw InputError(file, "", rj::GetParseError_En(doc.GetParseError()), "well-formed JSON");
  return checked;
}

YAML::Node yaml_of_json(const rj::Value& v) {
  if (v.IsObject()) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto& member : v.GetObject())
      map.force_insert(std::string(member.name.GetString(), member.name.GetStringLength()), yaml_of_json(member.value));
    return map;
  }
  if (v.IsArray()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const rj::Value& item : v.GetArray()) list.push_back(yaml_of_json(item));
    return list;
  }
  if (v.IsString()) {
    YAML::Node text(std::string(v.GetString(), v.GetStringLength()));
    text.SetTag("!");
    return text;
  }
  if (v.IsNull()) return YAML::Node(YAML::NodeType::Null);
  if (v.IsDouble() && !std::isfinite(v.GetDouble())) return YAML::Node(detail::number_text(v.GetDouble()));
  rj::StringBuffer buffer;
  rj::Writer<rj::StringBuffer> writer(buffer);
  v.Accept(writer);
  return YAML::Node(std::string(buffer.GetString(), buffer.GetSize()));
}

}  // namespace autohaap
