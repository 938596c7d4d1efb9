// InputError: the one way bad input is reported. It names the file, the key
// path inside it, the offending value and what is allowed, so a user can fix
// the input without reading code. The CLI turns it into exit code 2.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace autohaap {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string key, std::string value, std::string allowed)
      : std::runtime_error(compose(file, key, value, allowed)),
        file_(std::move(file)), key_(std::move(key)), value_(std::move(value)), allowed_(std::move(allowed)) {}

  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }
  const std::string& value() const { return value_; }
  const std::string& allowed() const { return allowed_; }

 private:
  // The message keeps to one line whatever the input held: control
  // characters are escaped (\n, \xNN) and a value past kShownValueBytes is
  // cut, saying how long it was (a binary file given as YAML would
  // otherwise be quoted into the terminal). What is allowed may quote the
  // input too (a plan's own model name), so it is escaped alike and cut
  // at kShownAllowedBytes, which the longest list of names fits.
  static constexpr std::size_t kShownValueBytes = 200;
  static constexpr std::size_t kShownAllowedBytes = 2000;
  static std::string printable(const std::string& text, std::size_t most = std::string::npos) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < most; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\r') out += "\\r";
      else if (c < 0x20 || c == 0x7f) out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
      else out += static_cast<char>(c);
    }
    if (text.size() > most) out += "... (" + std::to_string(text.size()) + " bytes)";
    return out;
  }
  static std::string compose(const std::string& file, const std::string& key, const std::string& value,
                             const std::string& allowed) {
    std::string m = file.empty() ? std::string("<input>") : printable(file);
    if (!key.empty()) m += ": " + printable(key);
    m += ": got '" + printable(value, kShownValueBytes) + "'";
    if (!allowed.empty()) m += "; allowed: " + printable(allowed, kShownAllowedBytes);
    return m;
  }
  std::string file_, key_, value_, allowed_;
};

// Exit codes shared by every command (DESIGN.md "Exit codes").
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,     // unexpected internal error
  kExitInvalidInput = 2,
  kExitInfeasible = 3,
  kExitInterrupted = 4,
};

}  // namespace autohaap
