// The pieces both layer balancers are built from, each against brute force:
// the stage cost table's recompute policies, the threshold split's least
// feasible bottleneck, and the split lower bound's sum term.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "autohaap/search/load_balancer.hpp"
#include "autohaap/search/split_lower_bound.hpp"
#include "autohaap/search/stage_cost_table.hpp"
#include "autohaap/search/threshold_split.hpp"
#include "autohaap/units.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

using search_fixtures::random_problem;
using search_fixtures::two_group_problem;

// Calls `visit` with the end layer per stage of every contiguous split.
void every_split(int layers, int stages, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> ends(stages);
  std::function<void(int, int)> place = [&](int i, int begin) {
    if (i == stages - 1) {
      ends[i] = layers;
      visit(ends);
      return;
    }
    for (int end = begin + 1; end <= layers - (stages - 1 - i); ++end) {
      ends[i] = end;
      place(i + 1, end);
    }
  };
  place(0, 0);
}

RecomputeChoice fastest_that_fits(const Problem& problem, int stages) {
  std::vector<Recompute> modes = problem.training.recompute_modes;
  std::sort(modes.begin(), modes.end());
  return RecomputeChoice{std::vector<std::vector<Recompute>>(stages, modes), true};
}

// What a test needs to balance the first `per_seed` skeletons of seeded
// random problems.
struct Case {
  const Problem& problem;
  const CostModel& cost;
  const MemoryPruner& memory;
  const LoadBalancer& balancer;
  const Skeleton& skeleton;
};
void each_case(std::uint32_t first_seed, std::uint32_t last_seed, std::size_t per_seed,
               const std::function<void(const Case&)>& visit) {
  for (std::uint32_t seed = first_seed; seed <= last_seed; ++seed) {
    const Problem problem = random_problem(seed);
    const CostModel cost(problem);
    const MemoryPruner memory(cost);
    const LoadBalancer balancer(cost, memory, nullptr);
    const SkeletonList list = initialize_skeletons(SearchSpace(problem), &memory);
    for (std::size_t k = 0; k < list.skeletons.size() && k < per_seed; ++k) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " skeleton " + std::to_string(list.skeletons[k].id));
      visit(Case{problem, cost, memory, balancer, list.skeletons[k]});
    }
  }
}

TEST(StageCostTable, MustFitPicksTheFastestModeThatFitsAndFixedIgnoresMemory) {
  int recomputed = 0, infeasible = 0;
  // Less and less memory: some ranges need recompute, some fit in no mode
  // (`shrunk` counts the room of a stage without data parallelism; these
  // stages have dp 2 and one communicator more, hence values below 0).
  for (const double GiB : {0.30, 0.0, -0.1, -0.2, -0.3}) {
    const Problem problem = two_group_problem(6, GiB, GiB);
    const CostModel cost(problem);
    const MemoryPruner memory(cost);
    std::atomic<std::int64_t> estimates{0};
    Skeleton s;
    s.micro_batch = 4;
    s.stages = {{0, 0, 2, 1, 2}, {1, 0, 2, 1, 2}};
    StageCostTable fitting(cost, &memory, nullptr, estimates, s, true, fastest_that_fits(problem, 2));
    StageCostTable fixed(cost, nullptr, nullptr, estimates, s, true,
                         RecomputeChoice{{{Recompute::full}, {Recompute::none}}, false});
    for (int n = 1; n <= 5; ++n) {
      const std::vector<int> ends{n, 6};
      Plan plan = make_plan(problem, s, ends, {Recompute::none, Recompute::none});
      // The first stage's modes, fastest first: the table takes the first that fits.
      std::optional<Recompute> expected;
      for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        plan.stages[0].recompute = r;
        const StageEstimate e = cost.stage(plan, 0);
        if (e.memory.total() <= e.capacity_bytes) {
          expected = r;
          break;
        }
      }
      const auto& c = fitting.at(0, 0, n);
      EXPECT_EQ(c.feasible, expected.has_value()) << GiB << " GiB, " << n << " layers";
      if (expected && c.feasible) EXPECT_EQ(c.recompute, *expected) << GiB << " GiB, " << n << " layers";
      recomputed += expected && *expected != Recompute::none;
      infeasible += !expected;
      const auto& f = fixed.at(0, 0, n);
      EXPECT_TRUE(f.feasible);
      EXPECT_EQ(f.recompute, Recompute::full);
      EXPECT_EQ(fixed.recompute_of(ends), (std::vector<Recompute>{Recompute::full, Recompute::none}));
    }
    EXPECT_GT(estimates.load(), 0);
  }
  EXPECT_GT(recomputed, 0) << "memory never calls for recompute: the case tests too little";
  EXPECT_GT(infeasible, 0) << "every range fits: the case tests too little";
}

TEST(ThresholdSplit, LeastFeasibleBottleneckIsTheBruteForceOne) {
  int compared = 0;
  each_case(1, 8, 10, [&](const Case& c) {
    const Skeleton& s = c.skeleton;
    const int p = s.num_stages(), L = c.problem.model.layers;
    std::atomic<std::int64_t> estimates{0};
    StageCostTable table(c.cost, &c.memory, nullptr, estimates, s, c.balancer.identical_layers(s),
                         fastest_that_fits(c.problem, p));
    // Brute force: over every split whose ranges all fit, the least
    // slowest pace.
    double truth = kInf;
    every_split(L, p, [&](const std::vector<int>& ends) {
      double worst = 0;
      int begin = 0;
      for (int i = 0; i < p; ++i) {
        const auto& range = table.at(i, begin, ends[i]);
        worst = range.feasible ? std::max(worst, range.pace()) : kInf;
        if (worst == kInf) return;
        begin = ends[i];
      }
      truth = std::min(truth, worst);
    });
    ThresholdSplit split(table);
    const ThresholdSplit::Start start = split.least_feasible_bottleneck({});
    if (truth == kInf) {
      EXPECT_EQ(start.status, ThresholdSplit::Start::Status::infeasible);
      return;
    }
    ASSERT_EQ(start.status, ThresholdSplit::Start::Status::found);
    EXPECT_EQ(start.T, truth);
    // The split the DP returns under it keeps every stage at or below T.
    ASSERT_LT(split.min_sum(split.bottleneck_reach(), nullptr), kInf);
    int begin = 0;
    for (int i = 0; i < p; ++i) {
      EXPECT_LE(table.at(i, begin, split.split()[i]).pace(), start.T);
      begin = split.split()[i];
    }
    ++compared;
  });
  EXPECT_GT(compared, 20);
}

TEST(SplitLowerBound, SumTermNeverExceedsAnySplitsSum) {
  int compared = 0;
  each_case(20, 26, 6, [&](const Case& c) {
    const Skeleton& s = c.skeleton;
    const int p = s.num_stages(), L = c.problem.model.layers;
    // Without recompute (the fastest mode) and memory ignored: the sum of
    // paces of every split is at least the bound.
    std::atomic<std::int64_t> estimates{0};
    StageCostTable table(c.cost, nullptr, nullptr, estimates, s, c.balancer.identical_layers(s),
                         RecomputeChoice{std::vector<std::vector<Recompute>>(p, {Recompute::none}), false});
    const StageSpeeds speeds = stage_speeds(c.cost, nullptr, Recompute::none, s, c.balancer.identical_layers(s));
    const double bound = sum_term_lower_bound(speeds, L);
    EXPECT_GT(bound, 0);
    every_split(L, p, [&](const std::vector<int>& ends) {
      double sum = 0;
      int begin = 0;
      for (int i = 0; i < p; ++i) {
        sum += table.at(i, begin, ends[i]).pace();
        begin = ends[i];
      }
      EXPECT_LE(bound, sum * (1 + 1e-12));
    });
    // The whole bound is what the balancer reports.
    EXPECT_EQ(iteration_lower_bound(speeds, c.memory.capacities(s), L, num_micro_batches(c.problem, s),
                                    c.balancer.max_vpp(s)),
              c.balancer.lower_bound(s));
    ++compared;
  });
  EXPECT_GT(compared, 10);
}

TEST(LoadBalancer, LayerFinishTimesHoldWhatAnyStageOfTheShapeHolds) {
  // Per stage of random skeletons: the finish times are k times the
  // fastest mode holding k layers, and no stage of the shape, wherever it
  // sits, holds more layers in any mode than the times run.
  int stages = 0;
  each_case(40, 46, 6, [&](const Case& c) {
    const Skeleton& s = c.skeleton;
    const int p = s.num_stages(), m = num_micro_batches(c.problem, s);
    for (int i = 0; i < p; ++i) {
      const auto finish = c.balancer.layer_finish_times(s.stages[i], s.micro_batch);
      ASSERT_TRUE(finish.has_value());
      for (Recompute mode : c.problem.training.recompute_modes) {
        const int here = c.memory.max_layers(s.stages[i], mode, s.micro_batch, i, p, m);
        EXPECT_LE(std::min(here, c.problem.model.layers), static_cast<int>(finish->size()));
        const double tau =
            layer_seconds(c.cost, nullptr, mode, s.stages[i], s.micro_batch, -1, false, false);
        for (int k = 1; k <= std::min<int>(here, static_cast<int>(finish->size())); ++k)
          EXPECT_LE((*finish)[k - 1], k * tau * (1 + 1e-12)) << "stage " << i << ", " << k << " layers";
      }
      for (std::size_t k = 1; k < finish->size(); ++k) EXPECT_LE((*finish)[k - 1], (*finish)[k]);
      ++stages;
    }
  });
  EXPECT_GT(stages, 20);
}

TEST(SplitLowerBound, LeastWholeLayerPaceMergesClassesWithinTheirCapacities) {
  // Two alike stages finishing layers at 1, 2, 3 s (they hold 3 each), and
  // a group not placed yet whose layouts hold 1 layer by 1.5 s and 2 by
  // 4 s (an envelope: it may hold none). Finish events: 1 (+2), 1.5 (+1),
  // 2 (+2), 3 (+2), 4 (+1). 7 layers are held at 3 s, 8 at 4 s, 9 never.
  const std::vector<double> alike{1, 2, 3}, open{1.5, 4};
  std::vector<FinishClass> classes{{&alike, 0.0, 2, true}, {&open, 0.0, 1, false}};
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 7, 0.0), 3.0);
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 8, 0.0), 4.0);
  EXPECT_EQ(least_whole_layer_pace(classes, 9, 0.0), std::numeric_limits<double>::infinity());
  // Starting from a pace known not to be over the answer gives the same.
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 7, 2.5), 3.0);
  // Rates alone (no capacity) would allow 7 layers by 7 / (2 + 1/1.5) =
  // 2.625 s: the capacities lift the pace. A stage that must hold a layer
  // and finishes its first at 0.5 + 5 s sets the pace at once.
  const std::vector<double> slow{5};
  classes.push_back({&slow, 0.5, 1, true});
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 7, 0.0), 5.5);
  // A stage that must hold a layer and cannot: no pace.
  const std::vector<double> none;
  classes.push_back({&none, 0.0, 1, true});
  EXPECT_EQ(least_whole_layer_pace(classes, 1, 0.0), std::numeric_limits<double>::infinity());
}

TEST(SplitLowerBound, AMergeAskedOnlyWhetherItPassesAPaceStopsPastIt) {
  // The classes above: 7 layers by 3 s, 8 by 4 s. Asked only whether the
  // pace passes 1.2 s, the merge stops at the first finish past it, 1.5 s:
  // below the answer, above 1.2. Asked about 3 s or more, the answer.
  const std::vector<double> alike{1, 2, 3}, open{1.5, 4};
  std::vector<FinishClass> classes{{&alike, 0.0, 2, true}, {&open, 0.0, 1, false}};
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 7, 0.0, 1.2), 1.5);
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 7, 0.0, 3.0), 3.0);
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 8, 0.0, 3.5), 4.0);
  EXPECT_EQ(least_whole_layer_pace(classes, 9, 0.0, 10.0), std::numeric_limits<double>::infinity());
}

TEST(SplitLowerBound, TheWholeLayerPaceIsTheBruteForceOneAndPastEnoughItsFirstFinishPast) {
  // Random classes (alike stages with edges and capacities, envelopes that
  // may hold none) against a brute force over every finish of every stage:
  // the pace is the layers-th smallest finish (at least the slowest first
  // finish of a class that must hold one); asked about `enough` below it,
  // the first finish past `enough`; from any start at or under the answer.
  std::mt19937 rng(20261207);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int past = 0, within = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 5);
    std::vector<std::vector<double>> finishes(static_cast<std::size_t>(n));
    std::vector<FinishClass> classes;
    for (int i = 0; i < n; ++i) {
      auto& f = finishes[static_cast<std::size_t>(i)];
      const double tau = 0.2 + unit(rng);
      const int size = static_cast<int>(rng() % 8);
      for (int k = 1; k <= size; ++k) f.push_back(k * tau * (1 + 0.3 * unit(rng) / k));
      std::sort(f.begin(), f.end());
      FinishClass c{&f, unit(rng) < 0.5 ? 0.0 : unit(rng), 1 + static_cast<int>(rng() % 3), unit(rng) < 0.7};
      if (unit(rng) < 0.3) c.limit = static_cast<int>(rng() % 5);
      classes.push_back(c);
    }
    std::vector<double> every;
    double slowest_one = 0;
    bool impossible = false;
    for (const FinishClass& c : classes) {
      if (c.holds_one) {
        if (c.capacity() < 1) impossible = true;
        else slowest_one = std::max(slowest_one, c.edge + c.finish->front());
      }
      for (int k = 0; k < c.capacity(); ++k)
        for (int s = 0; s < c.count; ++s) every.push_back(c.edge + (*c.finish)[static_cast<std::size_t>(k)]);
    }
    std::sort(every.begin(), every.end());
    const int layers = 1 + static_cast<int>(rng() % 12);
    const double exact = impossible || static_cast<int>(every.size()) < layers
                             ? kInf
                             : std::max(every[static_cast<std::size_t>(layers - 1)], slowest_one);
    ASSERT_EQ(least_whole_layer_pace(classes, layers, 0.0), exact) << "trial " << trial;
    if (exact == kInf) continue;
    const double below = exact * unit(rng);
    ASSERT_EQ(least_whole_layer_pace(classes, layers, below), exact) << "trial " << trial;
    const double enough = exact * 1.3 * unit(rng);
    const double asked = least_whole_layer_pace(classes, layers, std::min(below, enough), enough);
    if (exact <= enough) {
      ++within;
      ASSERT_EQ(asked, exact) << "trial " << trial;
    } else {
      ++past;
      const auto first_past = std::upper_bound(every.begin(), every.end(), enough);
      ASSERT_NE(first_past, every.end());
      ASSERT_EQ(asked, std::max(*first_past, slowest_one)) << "trial " << trial;
      ASSERT_GT(asked, enough);
      ASSERT_LE(asked, exact);
    }
  }
  EXPECT_GT(past, 300);
  EXPECT_GT(within, 300);
}

TEST(SplitLowerBound, ThePacePastWhichThePipelineBoundPassesALimit) {
  // Stage sum 20, 4 micro-batches, a 2-chunk floor of 3.5: the plain term
  // 3 P + 20 passes 41 past P = 7; the 2-chunk one, 3.5 max(P, 3.5) + 10,
  // past P = 31 / 3.5. Past the larger both do.
  const std::vector<double> two{3.5, std::numeric_limits<double>::infinity()};
  const double p = pace_passing(41.0, 20.0, 4, two);
  EXPECT_DOUBLE_EQ(p, 31.0 / 3.5);
  EXPECT_GT(pipeline_time_lower_bound(p * (1 + 1e-9), 20.0, 4, two), 41.0);
  EXPECT_LE(pipeline_time_lower_bound(p * (1 - 1e-9), 20.0, 4, two), 41.0);
  // Past 20 at every pace (the sum alone), and past 1000 at none with one
  // micro-batch (the time does not grow with the pace then): -inf and inf.
  EXPECT_EQ(pace_passing(19.0, 20.0, 4, two), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(pace_passing(1000.0, 20.0, 1, std::vector<double>{}), std::numeric_limits<double>::infinity());
  // Random cases: just past the pace the bound passes the limit, just
  // below it does not.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const int m = 1 + static_cast<int>(u(rng) * 16);
    const double sum = 1 + 50 * u(rng), limit = sum + 200 * u(rng);
    std::vector<double> floors;
    for (int w = 2; w <= 4; ++w) floors.push_back(u(rng) < 0.2 ? std::numeric_limits<double>::infinity() : 10 * u(rng));
    const double q = pace_passing(limit, sum, m, floors);
    if (std::isfinite(q) && q > 0) {
      EXPECT_GT(pipeline_time_lower_bound(q * (1 + 1e-9), sum, m, floors), limit);
      EXPECT_LE(pipeline_time_lower_bound(q * (1 - 1e-9), sum, m, floors), limit * (1 + 1e-12));
    } else if (q == -std::numeric_limits<double>::infinity()) {
      EXPECT_GT(pipeline_time_lower_bound(0.0, sum, m, floors), limit);
    }
  }
}

TEST(SplitLowerBound, AStagesLimitWhereItSitsCutsItsFinishTimes) {
  // The case above with the alike stages placed where memory lets each hold
  // 2 layers: events 1 (+2), 1.5 (+1), 2 (+2), 4 (+1). 5 layers by 2 s, 6
  // by 4 s, 7 never.
  const std::vector<double> alike{1, 2, 3}, open{1.5, 4};
  std::vector<FinishClass> classes{{&alike, 0.0, 2, true, 2}, {&open, 0.0, 1, false}};
  EXPECT_EQ(classes[0].capacity(), 2);
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 5, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 6, 0.0), 4.0);
  EXPECT_EQ(least_whole_layer_pace(classes, 7, 0.0), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(least_whole_layer_pace(classes, 6, 3.5), 4.0);
  // Where it holds none, a stage that must hold one leaves no pace.
  classes[0].limit = 0;
  EXPECT_EQ(least_whole_layer_pace(classes, 1, 0.0), std::numeric_limits<double>::infinity());
}

TEST(SplitLowerBound, InterleavedFloorsAndThePipelineTimeBound) {
  // Stage A finishes layers at 1, 2, 3 s; stage B at 0.5 + 2, 0.5 + 3 and
  // holds 2; a group not placed yet (an envelope) does not count. Over 2
  // chunks every stage holds 2 layers: the pace is at least max(2, 3.5) =
  // 3.5; over 3 or 4, B cannot: ruled out.
  const std::vector<double> a{1, 2, 3}, b{2, 3, 4}, open{0.1};
  const std::vector<FinishClass> classes{{&a, 0.0, 1, true}, {&b, 0.5, 1, true, 2}, {&open, 0.0, 1, false}};
  std::vector<double> floors;
  interleaved_pace_floors(classes, 4, floors);
  ASSERT_EQ(floors.size(), 3u);
  EXPECT_DOUBLE_EQ(floors[0], 3.5);
  EXPECT_EQ(floors[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(floors[2], std::numeric_limits<double>::infinity());
  interleaved_pace_floors(classes, 1, floors);
  EXPECT_TRUE(floors.empty());
  // Pace 3, stage sum 20, 4 micro-batches: plain (m - 1) P + S = 29; over
  // 2 chunks m P + (S - P) / 2 at P = 3.5: 14 + 8.25 = 22.25, the least.
  const std::vector<double> two{3.5, std::numeric_limits<double>::infinity()};
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(3.0, 20.0, 4, two), 22.25);
  // With a floor above the pace, the plain term can be the least: 8
  // micro-batches, plain 41, over 2 chunks 8 x 3.5 + 8.25 = 36.25; floor 5:
  // 40 + 7.5 = 47.5, so 41.
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(3.0, 20.0, 8, two), 36.25);
  const std::vector<double> high{5.0};
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(3.0, 20.0, 8, high), 41.0);
  // No floors, up to 3 chunks: the least term at 3: 12 + 17 / 3.
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(3.0, 20.0, 4, 3), 12.0 + 17.0 / 3.0);
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(3.0, 20.0, 4, 1), 29.0);
}

TEST(SplitLowerBound, ThePacedSumOfClassesLiftsThePrefixBound) {
  // A stage of 1 s a layer and one of 2 s, no edges, 6 layers, 4
  // micro-batches. Finish events 1, 2, 2, 3, 4, 4: the least whole-layer
  // pace is 4 (the fast stage holds 4, the slow 2), where the stages sum
  // to 4 + 4 = 8: (4 - 1) x 4 + 8 = 20. The unpaced sum (each stage one
  // layer, the other four at 1 s) is 7, and at the next pace, 5, even that
  // gives 15 + 7 = 22: the bound is 20, which the split (4, 2) attains;
  // the unpaced bound at the same pace is 12 + 7 = 19.
  const std::vector<double> fast{1, 2, 3, 4, 5, 6}, slow{2, 4, 6, 8, 10, 12};
  const std::vector<FinishClass> classes{{&fast, 0.0, 1, true}, {&slow, 0.0, 1, true}};
  const double unpaced = 1 + 2 + 4 * 1;
  EXPECT_NEAR(paced_classes_lower_bound(classes, 6, 4, 4.0, 0.0, unpaced, {}, true), 20.0, 1e-9);
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(4.0, unpaced, 4, 1), 19.0);
  // Started below the least pace (where the stages cannot hold every
  // layer, the unpaced sum holds) the answer is the same.
  EXPECT_NEAR(paced_classes_lower_bound(classes, 6, 4, 1.0, 0.0, unpaced, {}, true), 20.0, 1e-9);
  // A fixed part (the open last position's edge) adds to every pace's sum.
  EXPECT_NEAR(paced_classes_lower_bound(classes, 6, 4, 4.0, 0.5, unpaced + 0.5, {}, true), 20.5, 1e-9);
}

TEST(SplitLowerBound, ThePacedSumOfClassesNeverExceedsAnySplit) {
  // Random stages of linear finish times (each holding up to its cap),
  // some alike (a class of several), and an envelope that may hold none,
  // here a stage whose time is its finish of what it holds (0 for none).
  // Over every split the plain time (m - 1) max t + sum t, and over w
  // chunks m max(P, F_w) + (sum - max(P, F_w)) / w: the paced bound is
  // never above the least, and never below the unpaced one at the least
  // pace.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int tighter = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int layers = 2 + static_cast<int>(u(rng) * 9);
    const int m = 1 + static_cast<int>(u(rng) * 12);
    const int kinds = 1 + static_cast<int>(u(rng) * 3);
    std::vector<std::vector<double>> finish;
    std::vector<double> edge, tau;
    std::vector<int> count;
    for (int k = 0; k < kinds + 1; ++k) {
      tau.push_back(0.5 + 2 * u(rng));
      edge.push_back(k < kinds && u(rng) < 0.5 ? u(rng) : 0.0);
      count.push_back(k < kinds ? 1 + static_cast<int>(u(rng) * 2) : 1);
      const int cap = 1 + static_cast<int>(u(rng) * layers);
      finish.emplace_back();
      // Leaner modes past half the cap: a layer costs more there.
      for (int j = 1; j <= cap; ++j) finish.back().push_back(j * tau.back() * (2 * j > cap + 1 ? 1.3 : 1.0));
    }
    std::vector<FinishClass> classes;
    std::vector<int> stage_kind;  // per stage: its class
    for (int k = 0; k <= kinds; ++k) {
      classes.push_back({&finish[k], edge[k], count[k], k < kinds});
      for (int c = 0; c < count[k]; ++c) stage_kind.push_back(k);
    }
    const int stages = static_cast<int>(stage_kind.size());
    if (stages - 1 > layers) continue;
    std::vector<double> floors{u(rng) < 0.5 ? 3 * u(rng) : std::numeric_limits<double>::infinity()};
    const bool plain = u(rng) < 0.7;
    // Brute force: every count per stage within its cap (the envelope's may
    // be 0), summing to the layers.
    double least = std::numeric_limits<double>::infinity(), least_pace = least;
    std::vector<int> held(stages, 0);
    std::function<void(int, int)> place = [&](int i, int left) {
      if (i == stages) {
        if (left != 0) return;
        double pace = 0, sum = 0;
        for (int s = 0; s < stages; ++s) {
          const int k = stage_kind[s];
          const double t = held[s] == 0 ? 0.0 : edge[k] + finish[k][held[s] - 1];
          pace = std::max(pace, t);
          sum += t;
        }
        least = std::min(least, pipeline_time_lower_bound(pace, sum, m, floors, plain));
        least_pace = std::min(least_pace, pace);
        return;
      }
      const int k = stage_kind[i];
      const int lowest = k < kinds ? 1 : 0;
      for (int h = lowest; h <= std::min<int>(left, static_cast<int>(finish[k].size())); ++h) {
        held[i] = h;
        place(i + 1, left - h);
      }
    };
    place(0, layers);
    if (!std::isfinite(least)) continue;
    // The unpaced sum: each stage that must hold one its edge and first
    // layer, the rest at the least per-layer time.
    double unpaced = 0, least_tau = std::numeric_limits<double>::infinity();
    int must = 0;
    for (int k = 0; k <= kinds; ++k) {
      least_tau = std::min(least_tau, finish[k].front());
      if (k < kinds) unpaced += count[k] * (edge[k] + finish[k].front()), must += count[k];
    }
    unpaced += (layers - must) * least_tau;
    const double start = least_pace * u(rng);  // any pace not above the least
    const double bound = paced_classes_lower_bound(classes, layers, m, start, 0.0, unpaced, floors, plain);
    EXPECT_LE(bound, least * (1 + 1e-9)) << "trial " << trial;
    EXPECT_GE(bound * (1 + 1e-9), pipeline_time_lower_bound(start, unpaced, m, floors, plain)) << "trial " << trial;
    if (bound > pipeline_time_lower_bound(least_pace, unpaced, m, floors, plain) * (1 + 1e-9)) ++tighter;
  }
  // The point of it: often above the unpaced bound at the least pace.
  EXPECT_GT(tighter, 300);
}

TEST(SplitLowerBound, WholeLayersAndThePaceLiftTheBoundAboveTheFractionalOne) {
  // Two stages of identical layers, 1 s and 2 s a layer, no edges, 4
  // layers, 2 micro-batches. Fractionally T/1 + T/2 >= 4 at T = 8/3; in
  // whole layers the stages finish their layers at 1, 2, 3, ... and 2, 4,
  // ...: the 4th smallest is 3. Sum term: each stage one layer (1 + 2),
  // the other two on the faster (2): 5. Bound 5 + (2 - 1) x 3 = 8, which
  // the split (3, 1) attains (paces 3 and 2: 3 + 5).
  StageSpeeds speeds;
  speeds.edge = {0, 0};
  speeds.layer = {1, 2};
  EXPECT_NEAR(iteration_lower_bound(speeds, {10, 10}, 4, 2), 8.0, 1e-9);
  // The first stage holds at most 2 layers: finish times 1, 2 and 2, 4,
  // 6: the 4th is 4, so 5 + 4 = 9 with the unpaced sum. At pace 4 the sum
  // cannot put both extra layers on the faster stage (it holds 2):
  // 1 + 2 + 1 + 2 = 6, so the tighter bound is 6 + 4 = 10, the only
  // split's (2, 2) time.
  EXPECT_NEAR(iteration_lower_bound(speeds, {2, 10}, 4, 2), 9.0, 1e-9);
  const StageTiers capped = {{{2, 1.0}}, {{10, 2.0}}};
  EXPECT_NEAR(iteration_lower_bound(speeds, capped, 4, 2), 10.0, 1e-9);
  // Memory forces a leaner mode: the first stage holds 1 layer at 1 s or
  // 3 at 1.5 s each (full recompute). Its finish times 1, 3, 4.5 and the
  // other's 2, 4, 6: the 4th is 4. The sum counts layers at their fastest
  // times: at pace 4 the first stage holds 2, so 1 + 2 + 1 + 2 = 6 and
  // 4 + 6 = 10; at pace 4.5 it holds 3, so 1 + 2 + 2 x 1 = 5 and
  // 4.5 + 5 = 9.5, the bound, below the best split's 11 ((2, 2): 3 and 4,
  // or (3, 1): 4.5 and 2). The fastest mode alone would say 8.
  const StageTiers lean = {{{1, 1.0}, {3, 1.5}}, {{10, 2.0}}};
  EXPECT_NEAR(iteration_lower_bound(speeds, lean, 4, 2), 9.5, 1e-9);
  EXPECT_NEAR(iteration_lower_bound(speeds, {3, 10}, 4, 2), 8.0, 1e-9);
  // Interleaved over 2 chunks every stage holds at least 2 layers, so the
  // pace is at least the slower stage's two (4): 2 x 4 + (5 - 4) / 2 = 8.5,
  // above the plain 8, which stays the bound (a pace of 3 would have said
  // 2 x 3 + (5 - 3) / 2 = 7). The best interleaved split, (2, 2), takes 9.
  // Over 3 or 4 chunks the floors (6 and 8) are higher still.
  EXPECT_NEAR(iteration_lower_bound(speeds, {3, 10}, 4, 2, 2), 8.0, 1e-9);
  EXPECT_NEAR(iteration_lower_bound(speeds, {4, 10}, 4, 2, 4), 8.0, 1e-9);
  // Edges delay a stage's finish times: the last stage's 0.5 s head makes
  // them 2.5, 4.5, ...: 1, 2, 2.5, 3 -> 3 again, and the sum gains 0.5.
  speeds.edge = {0, 0.5};
  EXPECT_NEAR(iteration_lower_bound(speeds, {10, 10}, 4, 2), 8.5, 1e-9);
}

}  // namespace
}  // namespace autohaap
