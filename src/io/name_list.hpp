// Name lists for error messages: the "allowed" part of an InputError when a
// value must be one of a set of names (catalog entries, keys, enum values).
// Internal to src/io. Cost: O(names x name length^2) for the typo hint,
// only on the error path.
#pragma once

#include <string>
#include <vector>

namespace autohaap::detail {

// "a, b, c".
std::string join_names(const std::vector<std::string>& names);

// The candidate within edit distance 2 of `typo` (the closest, the first on
// ties), or "" when none is that close: a name of two or three letters
// within one edit only, since two edits turn it into many others.
std::string closest_name(const std::vector<std::string>& candidates, const std::string& typo);

// join_names(names), followed by " (did you mean 'x'?)" when `given`
// looks like a typo of x.
std::string names_with_hint(const std::vector<std::string>& names, const std::string& given);

}  // namespace autohaap::detail
