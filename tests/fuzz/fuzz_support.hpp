// What the fuzz targets share: the rule that decides what is a finding, and
// a private folder for readers that take only a path.
//
// A reader given any bytes must either return or throw its documented
// refusal (InputError; CacheFileError for the latency cache). Anything else
// is a finding: another exception type (reported here with its message,
// then abort), a crash, a hang, a huge allocation, or a report of
// AddressSanitizer or UndefinedBehaviorSanitizer (libFuzzer stops on each
// and writes the input to crash-*, timeout-* or oom-*).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

#include "autohaap/error.hpp"

namespace autohaap::fuzz {

// The fuzz input as a string.
inline std::string bytes_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A folder of this process's own, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("autohaap-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(scratch_dir(), ec); });
    return d;
  }();
  return dir;
}

// Replaces scratch_dir()/name (sub-folders created) with `bytes`; returns its path.
inline std::string write_scratch(const std::string& name, const std::string& bytes) {
  const std::filesystem::path p = scratch_dir() / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  return p.string();
}

// Aborts with `what`: a broken promise, not a refusal.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace detail {
template <class Read>
void accept(Read& read) {
  read();
}
template <class Refusal, class... More, class Read>
void accept(Read& read) {
  try {
    accept<More...>(read);
  } catch (const Refusal&) {
    // The documented refusal of bad input.
  }
}
}  // namespace detail

// Runs `read`; the exceptions listed (InputError by default) are refusals,
// any other is a finding.
template <class... Refusals, class Read>
void read_or_refuse(Read&& read) {
  try {
    if constexpr (sizeof...(Refusals) == 0) {
      detail::accept<InputError>(read);
    } else {
      detail::accept<Refusals...>(read);
    }
  } catch (const std::exception& e) {
    finding(std::string("undocumented exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding("undocumented exception of unknown type");
  }
}

}  // namespace autohaap::fuzz
