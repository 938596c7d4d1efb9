// Statistics over measured samples: the one median the cost model's profile
// corrections and the device-measurement reader both take (a median, not a
// mean, so one disturbed timing does not move a fitted figure).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace autohaap {

// The median of `v` (the mean of the middle two for an even count).
// Precondition: `v` is not empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace autohaap
