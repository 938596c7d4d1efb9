#include "autohaap/batch/selection.hpp"

#include <charconv>

#include "autohaap/error.hpp"

namespace autohaap {
namespace {

bool parse_integer(std::string_view s, long long& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

EntrySelection parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  long long i = -1, n = 0;
  if (slash == std::string::npos || !parse_integer(std::string_view(text).substr(0, slash), i) ||
      !parse_integer(std::string_view(text).substr(slash + 1), n) || n < 1 || i < 0 || i >= n)
    throw InputError("command line", "--shard", text, "I/N with integers 0 <= I < N, e.g. 0/4");
  return EntrySelection::shard(i, n);
}

std::vector<std::size_t> select_entries(std::size_t count, const EntrySelection& s) {
  std::vector<std::size_t> out;
  switch (s.kind) {
    case EntrySelection::Kind::all:
      for (std::size_t i = 0; i < count; ++i) out.push_back(i);
      break;
    case EntrySelection::Kind::index:
      if (s.index < 0 || static_cast<unsigned long long>(s.index) >= count)
        throw InputError("command line", "--index", std::to_string(s.index),
                         count == 0 ? "no index (the manifest has no entries)"
                                    : "an entry index from 0 to " + std::to_string(count - 1));
      out.push_back(static_cast<std::size_t>(s.index));
      break;
    case EntrySelection::Kind::shard:
      if (s.shards < 1 || s.index < 0 || s.index >= s.shards)
        throw InputError("command line", "--shard", std::to_string(s.index) + "/" + std::to_string(s.shards),
                         "I/N with integers 0 <= I < N");
      for (std::size_t i = static_cast<std::size_t>(s.index); i < count; i += static_cast<std::size_t>(s.shards))
        out.push_back(i);
      break;
  }
  return out;
}

std::string describe(const EntrySelection& s) {
  switch (s.kind) {
    case EntrySelection::Kind::all: return "all";
    case EntrySelection::Kind::index: return "index " + std::to_string(s.index);
    case EntrySelection::Kind::shard: return "shard " + std::to_string(s.index) + "/" + std::to_string(s.shards);
  }
  return "?";
}

}  // namespace autohaap
