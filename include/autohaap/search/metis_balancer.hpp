// Metis-style layer balancer (Um et al., USENIX ATC 2024): for a skeleton
// with a given recompute mode per stage, the contiguous layer split that
// minimizes the slowest stage's time alone (the least feasible bottleneck of
// threshold_split.hpp), then the least sum of stage times under it. Memory
// is not checked (the Metis strategy finds overflow by scoring the plan),
// and no latency cache is used: the baseline as published.
//
// Thread safety: const methods; many threads may balance at once. Cost: the
// stage estimates the bottleneck walk touches, O(stages * layers) for
// identical layers.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/search/load_balancer.hpp"
#include "autohaap/search/search_space.hpp"
#include "autohaap/search/stage_cost_table.hpp"

namespace autohaap {

class MetisBalancer {
 public:
  explicit MetisBalancer(const CostModel& cost);

  // The split minimizing the slowest stage's time with stage i in
  // recompute[i]; no split (even layers, infinite time) when none exists.
  BalancedSplit balance(const Skeleton& skeleton, const std::vector<Recompute>& recompute) const;

  // Stage estimates computed.
  std::int64_t stage_estimates() const { return stage_estimates_.load(std::memory_order_relaxed); }

 private:
  const CostModel& cost_;
  IdenticalLayers identical_;
  mutable std::atomic<std::int64_t> stage_estimates_{0};
};

}  // namespace autohaap
