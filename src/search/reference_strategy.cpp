// The wide reference: every structurally valid skeleton, each given its
// exact best plan by the load balancer (vpp, layer split and per-stage
// recompute; LoadBalancer::balance, itself checked against brute force over
// every split and mode in load_balancer_test.cpp), the best of them kept.
// No memory-aware initialization, no bounds between skeletons, no cache:
// nothing the autohaap strategy prunes with, so where the two agree that
// pruning lost nothing. The exhaustive reference scores every split and
// mode itself and so stops at a few GPUs; this one reaches 16–64 GPU
// clusters of two or three device types (a skeleton costs one balancing,
// about a millisecond), refused above options.reference_limit skeletons.
#include <limits>
#include <string>

#include "autohaap/error.hpp"
#include "autohaap/search/load_balancer.hpp"
#include "strategies.hpp"

namespace autohaap::strategy {

bool run_reference(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                   ProgressReporter& progress, SearchResult& result) {
  const Problem& problem = cost.problem();
  const SearchSpace space(problem);
  if (const std::string why = strategy_size_violation(problem, options, "reference", &result.candidates); !why.empty())
    throw InputError("search options", "strategy", "reference", why);
  const SkeletonList list = initialize_skeletons(space, nullptr);
  result.prune = list.report;
  // The memory pruner answers the balancer's capacity questions exactly
  // (the most layers that fit); it removes no skeleton here.
  const MemoryPruner memory(cost);
  const LoadBalancer balancer(cost, memory, nullptr);
  const ClusterSpec& cluster = cost.problem().cluster;
  return sweep_skeletons(list.skeletons, options.top_k, cluster, stop, progress, result, [&](const Skeleton& s) {
    SkeletonBest out;
    const BalanceResult r = balancer.balance(s, std::numeric_limits<double>::infinity(), [&] { return stop(); });
    out.stopped = r.status == BalanceResult::Status::stopped;
    out.evaluated = 1;
    if (r.status != BalanceResult::Status::found) return out;
    Plan plan = make_plan(problem, s, r.split.layer_end, r.split.recompute, r.split.vpp);
    plan.predicted = cost.estimate(plan);
    if (plan.predicted.fits) out.plan = std::move(plan);
    return out;
  });
}

}  // namespace autohaap::strategy
