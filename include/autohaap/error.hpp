// InputError: the one way bad input is reported. It names the file, the key
// path inside it, the offending value and what is allowed, so a user can fix
// the input without reading code. The CLI turns it into exit code 2.
#pragma once

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
  static std::string compose(const std::string& file, const std::string& key, const std::string& value,
                             const std::string& allowed) {
    std::string m = file.empty() ? std::string("<input>") : file;
    if (!key.empty()) m += ": " + key;
    m += ": got '" + value + "'";
    if (!allowed.empty()) m += "; allowed: " + allowed;
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
