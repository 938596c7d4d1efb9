#include "name_list.hpp"

#include <algorithm>
#include <cctype>

namespace autohaap::detail {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

namespace {

// Levenshtein distance, case-insensitive: `Nodes` for `nodes` is a typo too.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(const std::vector<std::string>& candidates, const std::string& typo) {
  constexpr std::size_t kMaxEdits = 2;
  std::string best;
  std::size_t best_distance = kMaxEdits + 1;
  for (const auto& c : candidates) {
    // Two edits turn any name of three letters into many others: a short
    // name is hinted one edit away only (`vp` for `vpp`).
    const std::size_t d = edit_distance(c, typo);
    if (c.size() <= kMaxEdits + 1 && (c.size() < 2 || d > 1)) continue;
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string names_with_hint(const std::vector<std::string>& names, const std::string& given) {
  std::string out = join_names(names);
  if (const std::string hint = closest_name(names, given); !hint.empty()) out += " (did you mean '" + hint + "'?)";
  return out;
}

}  // namespace autohaap::detail
