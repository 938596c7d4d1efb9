#include "autohaap/search/metis_balancer.hpp"

#include <limits>

#include "autohaap/search/threshold_split.hpp"

namespace autohaap {

MetisBalancer::MetisBalancer(const CostModel& cost) : cost_(cost), identical_(cost.problem()) {}

BalancedSplit MetisBalancer::balance(const Skeleton& skeleton, const std::vector<Recompute>& recompute) const {
  RecomputeChoice choice;
  choice.must_fit = false;
  for (Recompute r : recompute) choice.modes.push_back({r});
  StageCostTable table(cost_, nullptr, nullptr, stage_estimates_, skeleton, identical_.on(skeleton),
                       std::move(choice));
  ThresholdSplit split(table);
  BalancedSplit out;
  out.recompute = recompute;
  const ThresholdSplit::Start start = split.least_feasible_bottleneck({});
  if (start.status == ThresholdSplit::Start::Status::found &&
      split.min_sum(split.bottleneck_reach(), nullptr) < std::numeric_limits<double>::infinity()) {
    out.layer_end = split.split();
    out.iteration_time_s = table.iteration_time(out.layer_end);
  } else {
    out.layer_end = even_split(cost_.problem().model.layers, skeleton.num_stages());
    out.iteration_time_s = std::numeric_limits<double>::infinity();
  }
  return out;
}

}  // namespace autohaap
