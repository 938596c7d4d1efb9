// `search --runnable megatron`: the search restricted to plans stock
// Megatron-LM runs (specs/runnable_by.hpp). Checked against the exhaustive
// reference of the same restricted space on random small mixed clusters,
// against the Megatron export's own blockers, and against the unrestricted
// search (a restriction can never be faster).
#include <gtest/gtest.h>

#include <algorithm>

#include "autohaap/io/megatron_export.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/runtime_price.hpp"
#include "autohaap/search/searcher.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

using search_fixtures::random_problem;
using search_fixtures::shrunk;
using search_fixtures::two_group_problem;

SearchResult runnable_search(const Problem& problem, const std::string& strategy, int top_k = 1) {
  SearchOptions options;
  options.strategy = strategy;
  options.threads = 2;
  options.top_k = top_k;
  return run_search(problem, options);
}

Problem megatron(Problem p) {
  p.runnable_by = RunnableBy::megatron;
  p.training.zero = std::min(p.training.zero, kMegatronMaxZero);
  p.training.recompute_modes = {Recompute::none, Recompute::selective, Recompute::full};
  return p;
}

bool one_shape(const Plan& plan) {
  const StagePlan& s0 = plan.stages.front();
  return std::all_of(plan.stages.begin(), plan.stages.end(), [&](const StagePlan& s) {
    return s.tp == s0.tp && s.dp == s0.dp && s.cp == s0.cp && s.recompute == s0.recompute;
  });
}

TEST(RunnableSearch, FindsTheExhaustiveOptimumOfTheRestrictedSpace) {
  int compared = 0, restricted_slower = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    const Problem problem = megatron(random_problem(seed));
    if (exhaustive_candidates(problem) > 300000) continue;
    const SearchResult exhaustive = runnable_search(problem, "exhaustive");
    const SearchResult autohaap = runnable_search(problem, "autohaap");
    ASSERT_EQ(exhaustive.top.empty(), autohaap.top.empty()) << seed;
    if (exhaustive.top.empty()) continue;
    ++compared;
    const double t = autohaap.top[0].predicted.iteration_time_s;
    EXPECT_NEAR(t, exhaustive.top[0].predicted.iteration_time_s, 1e-9 * t) << seed;
    for (const SearchResult* r : {&exhaustive, &autohaap}) {
      const Plan& plan = r->top[0];
      EXPECT_TRUE(one_shape(plan)) << seed;
      // What the search returns, the Megatron export runs.
      EXPECT_TRUE(megatron_blockers(plan, problem).empty()) << seed;
    }
    // The unrestricted space contains the restricted one.
    Problem any = problem;
    any.runnable_by = RunnableBy::any;
    const SearchResult free = runnable_search(any, "autohaap");
    ASSERT_FALSE(free.top.empty()) << seed;
    EXPECT_LE(free.top[0].predicted.iteration_time_s, t * (1 + 1e-9)) << seed;
    if (free.top[0].predicted.iteration_time_s < t * (1 - 1e-9)) ++restricted_slower;
  }
  EXPECT_GE(compared, 15);
  // Not a vacuous restriction: on some clusters the runtime costs time.
  EXPECT_GE(restricted_slower, 1);
}

TEST(RunnableSearch, NotRunnableCountsTheMixedShapes) {
  // 2 fast GPUs in one node, 2 slow in one node: each group may be cut into
  // 1 stage of 2 GPUs (tp 1 or 2) or 2 stages of 1 GPU. Of the skeletons
  // with both groups, only the pairs of equal shape remain.
  const Problem problem = megatron(two_group_problem(8));
  const SearchSpace space(problem);
  const SkeletonList restricted = initialize_skeletons(space, nullptr);
  Problem any = problem;
  any.runnable_by = RunnableBy::any;
  const SearchSpace free_space(any);
  const SkeletonList free = initialize_skeletons(free_space, nullptr);
  EXPECT_GT(restricted.report.count(PruneRule::not_runnable), 0);
  EXPECT_EQ(free.report.count(PruneRule::not_runnable), 0);
  // Every skeleton is counted once: kept or removed under one rule.
  EXPECT_EQ(restricted.report.kept + restricted.report.removed_initially(), restricted.report.considered);
  // The restricted list is the unrestricted one without the mixed shapes.
  std::int64_t one_shape_skeletons = 0;
  for (const Skeleton& s : free.skeletons) {
    const bool same = std::all_of(s.stages.begin(), s.stages.end(), [&](const StageSlot& x) {
      return x.gpus == s.stages[0].gpus && x.tp == s.stages[0].tp;
    });
    one_shape_skeletons += same;
  }
  EXPECT_EQ(static_cast<std::int64_t>(restricted.skeletons.size()), one_shape_skeletons);
  EXPECT_EQ(restricted.report.count(PruneRule::not_runnable),
            static_cast<std::int64_t>(free.skeletons.size()) - one_shape_skeletons);
}

TEST(RunnableSearch, Fp8PlansDoNotMixFp8AndOtherDevices) {
  Problem p = two_group_problem(8, 2.0, 2.0);
  p.cluster.groups = {make_node_group(shrunk("h100-sxm", 2.0), 1, 2), make_node_group(shrunk("a100-80gb", 2.0), 1, 2)};
  p.training.precision = Precision::fp8;
  const Problem problem = megatron(p);
  const SearchResult r = runnable_search(problem, "autohaap");
  ASSERT_FALSE(r.top.empty());
  const Plan& plan = r.top[0];
  const std::string& device = plan.stages.front().device;
  for (const StagePlan& s : plan.stages) EXPECT_EQ(s.device, device);
  EXPECT_TRUE(megatron_blockers(plan, problem).empty());
  // Unrestricted, both devices serve (the A100 in BF16).
  Problem any = problem;
  any.runnable_by = RunnableBy::any;
  const SearchResult free = runnable_search(any, "autohaap");
  ASSERT_FALSE(free.top.empty());
  EXPECT_LE(free.top[0].predicted.iteration_time_s, plan.predicted.iteration_time_s * (1 + 1e-9));
}

TEST(RunnableSearch, RuntimePriceOrdersTheComparisons) {
  const Problem problem = megatron(two_group_problem(8, 0.6, 0.6));
  SearchOptions options;
  options.threads = 2;
  const SearchResult r = run_search(problem, options);
  ASSERT_FALSE(r.top.empty());
  const RuntimePrice price = runtime_price(problem, options, r.top[0]);
  ASSERT_TRUE(price.unrestricted);
  EXPECT_LE(price.unrestricted->predicted.iteration_time_s, r.top[0].predicted.iteration_time_s * (1 + 1e-12));
  EXPECT_EQ(price.fastest_device, "a100-80gb");
  EXPECT_EQ(price.fastest_device_gpus, 2);
  // A uniform plan over every GPU is Megatron-runnable: the runnable best
  // (its refined answer) is never slower than it.
  if (price.uniform_all_gpus) {
    EXPECT_EQ(price.uniform_all_gpus->num_gpus(), problem.cluster.total_gpus());
    EXPECT_TRUE(one_shape(*price.uniform_all_gpus));
  }
  if (price.uniform_fastest_device)
    for (const StagePlan& s : price.uniform_fastest_device->stages) EXPECT_EQ(s.device, "a100-80gb");
  const std::string table = format_runtime_price(price, r.top[0], RunnableBy::megatron);
  EXPECT_NE(table.find("unrestricted best"), std::string::npos);
  EXPECT_NE(table.find("megatron-runnable best"), std::string::npos);
  EXPECT_NE(table.find("a100-80gb alone (2 GPUs)"), std::string::npos);
}

}  // namespace
}  // namespace autohaap
