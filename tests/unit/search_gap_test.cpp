// The anytime search: the proven lower bound (SearchStats::bound_s, the
// progress reports' bound_s) never exceeds the exhaustive optimum, wherever
// the search is stopped; --gap stops once the gap is proven and returns a
// plan within it; run to the end the bound is the answer (gap 0), for any
// thread count.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "autohaap/search/parallel.hpp"
#include "autohaap/search/searcher.hpp"
#include "initialization_bench.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

using search_fixtures::best_time;
using search_fixtures::random_problem;
using search_fixtures::two_group_problem;

constexpr double kSlack = 1e-9;

double optimum(const Problem& problem) {
  SearchOptions options;
  options.strategy = "exhaustive";
  options.threads = 2;
  const SearchResult r = run_search(problem, options);
  return r.top.empty() ? std::numeric_limits<double>::infinity() : best_time(r);
}

// Seeded random small problems with a plan, each with its exhaustive
// optimum: up to `count` of seeds 500-599 whose exhaustive candidates are at
// most `max_candidates`.
struct SmallCase {
  std::uint32_t seed;
  Problem problem;
  double optimum;
};
std::vector<SmallCase> small_cases(int count, std::int64_t max_candidates) {
  std::vector<SmallCase> out;
  for (std::uint32_t seed = 500; static_cast<int>(out.size()) < count && seed < 600; ++seed) {
    Problem problem = random_problem(seed);
    if (exhaustive_candidates(problem) > max_candidates) continue;
    const double opt = optimum(problem);
    if (std::isfinite(opt)) out.push_back({seed, std::move(problem), opt});
  }
  return out;
}

TEST(SearchGap, GapOfBestAndBound) {
  EXPECT_DOUBLE_EQ(search_gap(10, 8), 0.2);
  EXPECT_DOUBLE_EQ(search_gap(4, 4), 0.0);
  EXPECT_DOUBLE_EQ(search_gap(4, 5), 0.0);  // a bound above the best: the best is proven optimal
  EXPECT_DOUBLE_EQ(search_gap(10, 0), 1.0);  // nothing proven
  EXPECT_DOUBLE_EQ(search_gap(std::numeric_limits<double>::infinity(), 3), 1.0);  // no plan
}

// What the bound is read from: with items finished out of order, the first
// one still open, never one past it (an open skeleton's bound still counts).
TEST(SearchGap, TheFrontierWaitsForTheFirstOpenItem) {
  parallel::InOrderFrontier frontier(5);
  EXPECT_EQ(frontier.finish(1), 0u);
  EXPECT_EQ(frontier.finish(2), 0u);
  EXPECT_EQ(frontier.finish(0), 3u);
  EXPECT_EQ(frontier.finish(4), 3u);
  EXPECT_EQ(frontier.finish(3), 5u);
}

// Stops the search after `skeletons` skeletons (cancel flag raised from the
// progress callback, every skeleton reported), recording every report.
struct Stopped {
  SearchResult result;
  std::vector<SearchProgress> seen;
};

Stopped stop_after(const Problem& problem, std::int64_t skeletons, int threads) {
  Stopped out;
  std::atomic<bool> cancel{false};
  SearchOptions options;
  options.threads = threads;
  options.cancel = &cancel;
  options.progress_interval_s = 0;
  options.progress = [&](const SearchProgress& p) {
    out.seen.push_back(p);
    if (p.done >= skeletons) cancel = true;
  };
  out.result = run_search(problem, options);
  return out;
}

TEST(SearchGap, BoundNeverExceedsTheOptimumWhereverTheSearchStops) {
  int cases = 0, stopped_with_gap = 0;
  // 24 cases: bounds that price each schedule's own tail leave most small
  // cases a single skeleton under the optimum, so a stop lands with a
  // gap on only a few of them.
  for (const SmallCase& c : small_cases(24, 300000)) {
    const std::uint32_t seed = c.seed;
    const Problem& problem = c.problem;
    const double opt = c.optimum;
    ++cases;
    for (int threads : {1, 2}) {
      for (std::int64_t n : {1, 2, 3, 5, 9}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + ", threads " + std::to_string(threads) + ", stop after " +
                     std::to_string(n));
        const Stopped s = stop_after(problem, n, threads);
        for (const SearchProgress& p : s.seen) {
          EXPECT_LE(p.bound_s, opt * (1 + kSlack));
          EXPECT_GE(p.best_iteration_s, opt * (1 - kSlack));
        }
        const SearchResult& r = s.result;
        ASSERT_FALSE(r.top.empty());
        const double best = best_time(r);
        EXPECT_LE(r.stats.bound_s, opt * (1 + kSlack));
        EXPECT_GE(best, opt * (1 - kSlack));
        EXPECT_DOUBLE_EQ(r.stats.gap, search_gap(best, r.stats.bound_s));
        EXPECT_EQ(r.top.front().search.bound_s, r.stats.bound_s);
        if (r.status == PlanStatus::found) {
          // It ended before the stop was seen: proven optimal.
          EXPECT_EQ(r.stats.gap, 0);
          EXPECT_EQ(r.stats.bound_s, best);
        } else {
          EXPECT_EQ(r.status, PlanStatus::stopped_with_plan);
          if (r.stats.gap > 0) ++stopped_with_gap;
        }
      }
    }
  }
  EXPECT_GE(cases, 6);
  // The stops did land before the bound met the best plan.
  EXPECT_GT(stopped_with_gap, 0);
}

TEST(SearchGap, StoppedInInitializationProvesNothing) {
  std::atomic<bool> cancel{true};
  SearchOptions options;
  options.cancel = &cancel;
  const SearchResult r = run_search(two_group_problem(8), options);
  EXPECT_EQ(r.status, PlanStatus::stopped_no_plan);
  EXPECT_EQ(r.stats.bound_s, 0);
  EXPECT_EQ(r.stats.gap, 1);
}

// What a search stopped during initialization still proves: the per-layer
// rate bound, below the optimum, above zero for identical layers.
TEST(SearchGap, TheRateBoundHoldsBeforeAnySkeletonIsListed) {
  int cases = 0;
  for (const SmallCase& c : small_cases(8, 300000)) {
    const std::uint32_t seed = c.seed;
    const Problem& problem = c.problem;
    const double opt = c.optimum;
    ++cases;
    const CostModel cost(problem);
    const MemoryPruner memory(cost);
    LatencyCache cache;
    const PreparedSearch prepared = prepare_search(cost, memory, cache, {});
    EXPECT_GT(prepared.rate_bound_s, 0) << seed;
    EXPECT_LE(prepared.rate_bound_s, opt) << seed;
    // Every listed skeleton's own bound is at least as tight.
    for (const Skeleton& s : prepared.skeletons) EXPECT_GE(s.lower_bound_s, prepared.rate_bound_s) << seed;
  }
  EXPECT_GE(cases, 6);
}

// A gap the rate bound already proves ends the initialization once a plan
// within it is in hand (a --gap of 0.99 on six groups walked all of it,
// 21 s, where the first probes answer in 1 s); one it cannot prove runs on.
TEST(SearchGap, AGapTheRateBoundProvesEndsTheInitialization) {
  const Problem problem = two_group_problem(8);
  search_fixtures::InitializationBench bench(problem);
  PrepareOptions prepare;
  prepare.top_k = 1;
  prepare.gap = 0.99;
  const PreparedSearch prepared = bench.prepare(prepare);
  ASSERT_FALSE(prepared.probes.empty());
  EXPECT_TRUE(prepared.stopped);
  EXPECT_TRUE(prepared.gap_reached);
  EXPECT_LE(search_gap(prepared.probes.front().predicted.iteration_time_s, prepared.rate_bound_s), 0.99);

  SearchOptions options;
  options.gap = 0.99;
  const SearchResult r = run_search(problem, options);
  ASSERT_FALSE(r.top.empty());
  EXPECT_EQ(r.status, PlanStatus::gap_reached);
  EXPECT_EQ(r.stats.bound_s, prepared.rate_bound_s);
  EXPECT_LE(r.stats.gap, 0.99);

  options.gap = 1e-9;
  const SearchResult exact = run_search(problem, options);
  EXPECT_EQ(exact.status, PlanStatus::found);
  EXPECT_EQ(exact.stats.gap, 0);
  EXPECT_LE(best_time(exact), best_time(r));
}

TEST(SearchGap, GapZeroRunsToTheExactOptimum) {
  for (std::uint32_t seed : {101u, 107u, 113u}) {
    const Problem problem = random_problem(seed);
    if (exhaustive_candidates(problem) > 300000) continue;
    const double opt = optimum(problem);
    SearchOptions options;
    options.threads = 2;
    options.gap = 0;
    const SearchResult r = run_search(problem, options);
    if (!std::isfinite(opt)) {
      EXPECT_TRUE(r.top.empty()) << seed;
      continue;
    }
    ASSERT_FALSE(r.top.empty()) << seed;
    EXPECT_EQ(r.status, PlanStatus::found) << seed;
    EXPECT_NEAR(best_time(r), opt, kSlack * opt) << seed;
    EXPECT_EQ(r.stats.gap, 0) << seed;
    EXPECT_EQ(r.stats.bound_s, best_time(r)) << seed;
  }
}

TEST(SearchGap, AGapStopsAsSoonAsItIsProvenAndTheAnswerIsWithinIt) {
  int early = 0, cases = 0;
  for (const SmallCase& c : small_cases(6, 100000)) {
    const std::uint32_t seed = c.seed;
    const Problem& problem = c.problem;
    const double opt = c.optimum;
    ++cases;
    SearchOptions full;
    full.threads = 1;
    const SearchResult to_end = run_search(problem, full);
    for (double gap : {1.0, 0.2, 0.02}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", gap " + std::to_string(gap));
      SearchOptions options = full;
      options.gap = gap;
      const SearchResult r = run_search(problem, options);
      ASSERT_FALSE(r.top.empty());
      const double best = best_time(r);
      // Within the gap of the true optimum, and the proof holds.
      EXPECT_LE((best - opt) / best, gap + kSlack);
      EXPECT_LE(r.stats.bound_s, opt * (1 + kSlack));
      EXPECT_LE(r.stats.gap, gap + kSlack);
      EXPECT_EQ(exit_code(r.status), kExitOk);
      EXPECT_LE(r.stats.evaluated, to_end.stats.evaluated);
      if (r.status == PlanStatus::gap_reached) {
        ++early;
      } else {
        EXPECT_EQ(r.status, PlanStatus::found);
        EXPECT_EQ(r.stats.gap, 0);
      }
      // A gap of 1 holds for any plan: one thread stops right after the
      // first plan estimated, unless that was the end anyway.
      if (gap == 1.0 && r.status == PlanStatus::gap_reached) EXPECT_EQ(r.stats.evaluated, 1);
    }
  }
  EXPECT_GE(cases, 4);
  EXPECT_GT(early, 0);
}

TEST(SearchGap, RunToTheEndTheBoundIsTheSameForAnyThreadCount) {
  for (std::uint32_t seed : {503u, 509u, 521u}) {
    const Problem problem = random_problem(seed);
    std::vector<SearchResult> results;
    for (int threads : {1, 2, 4}) {
      SearchOptions options;
      options.threads = threads;
      options.top_k = 3;
      results.push_back(run_search(problem, options));
    }
    for (const SearchResult& r : results) {
      ASSERT_EQ(r.top.empty(), results[0].top.empty()) << seed;
      if (r.top.empty()) continue;
      EXPECT_EQ(r.status, PlanStatus::found) << seed;
      EXPECT_EQ(r.stats.bound_s, best_time(results[0])) << seed;
      EXPECT_EQ(r.stats.gap, 0) << seed;
    }
  }
}

}  // namespace
}  // namespace autohaap
