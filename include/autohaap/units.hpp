// Units: the one definition of the byte multiples the specs, the cost model
// and the reports convert between (device memory and plan memory figures
// are given in GiB, the cost model works in bytes), and of the time no plan
// reaches. Constants only: free to include anywhere, thread-safe, no cost.
#pragma once

#include <limits>

namespace autohaap {

// Bytes in one GiB (2^30).
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Bytes in one MiB (2^20): what PyTorch's allocator and nvidia-smi report.
inline constexpr double kMiB = 1024.0 * 1024.0;

// Seconds no plan reaches: the time of an infeasible stage or split, the
// bound before anything is found.
inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace autohaap
