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
namespace {

// The structurally valid skeletons, counted (streaming) up to `most` + 1:
// a refused problem must not first materialize them.
std::int64_t count_skeletons(const SearchSpace& space, std::int64_t most) {
  std::int64_t total = 0;
  const int num_b = static_cast<int>(space.micro_batches().size());
  for (std::size_t task = 0; task < space.group_orders().size() * num_b && total <= most; ++task) {
    PruneReport scratch;
    SkeletonWalk walk;
    walk.visit = [&](Skeleton&&) { ++total; };
    walk.stop = [&] { return total > most; };
    enumerate_skeletons(space, nullptr, static_cast<int>(task / num_b), static_cast<int>(task % num_b), scratch, walk);
  }
  return total;
}

}  // namespace

bool run_reference(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                   ProgressReporter& progress, SearchResult& result) {
  const Problem& problem = cost.problem();
  const SearchSpace space(problem);
  const std::int64_t count = count_skeletons(space, options.reference_limit);
  result.candidates = count;
  if (count > options.reference_limit) {
    throw InputError("search options", "strategy", "reference",
                     "a problem of at most " + std::to_string(options.reference_limit) +
                         " structurally valid skeletons for the wide reference (a check of 16-64 GPU cases); "
                         "this one has more: use --strategy autohaap, whose answer is the same optimum with a proof");
  }
  const SkeletonList list = initialize_skeletons(space, nullptr);
  result.prune = list.report;
  // The memory pruner answers the balancer's capacity questions exactly
  // (the most layers that fit); it removes no skeleton here.
  const MemoryPruner memory(cost);
  const LoadBalancer balancer(cost, memory, nullptr);
  Incumbent incumbent(options.top_k);
  return sweep_skeletons(list.skeletons, stop, progress, incumbent, result, [&](const Skeleton& s) {
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
