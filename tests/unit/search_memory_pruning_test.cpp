// Memory-aware initialization: capacities agree with the cost model's
// memory, every raw skeleton is counted under exactly one rule, structural
// rules remove what they say, and an impossible model is explained.
#include <gtest/gtest.h>

#include <cstdio>

#include <cereal/archives/binary.hpp>
#include <sstream>

#include "autohaap/io/search_serialization.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/parallel.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

using search_fixtures::two_group_problem;

// two_group_problem(8) with the devices' room for a stage without tensor or
// data parallelism (one NCCL communicator, not the fixture's three), so
// memory binds for the tp = dp = 1 slots these tests probe.
Problem tight_two_group_problem() {
  Problem p = two_group_problem(8);
  for (NodeGroup& g : p.cluster.groups) g.device.memory_GiB -= 2 * CostParameters{}.nccl_GiB_per_communicator;
  return p;
}

TEST(MemoryPruning, CapacityIsTheMostLayersThatFit) {
  const Problem problem = tight_two_group_problem();
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  int binding = 0;
  for (int group : {0, 1}) {
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
      for (int B : {1, 4}) {
        for (int stage = 0; stage < 3; ++stage) {
          const StageSlot slot{group, 0, 1, 1, 1};
          const int p = 3, m = problem.training.global_batch / B;
          const int cap = memory.max_layers(slot, r, B, stage, p, m);
          const StageShape shape{group, 1, 1, r};
          auto fits = [&](int n) {
            return cost.stage_memory(shape, B, 0, n, stage, p, m).total() <= cost.capacity_bytes(group);
          };
          if (cap > 0) {
            EXPECT_TRUE(fits(cap));
          }
          if (cap < problem.model.layers) {
            EXPECT_FALSE(fits(cap + 1));
          }
          binding += cap < problem.model.layers;
        }
      }
    }
  }
  EXPECT_GT(binding, 10);  // the fixture's memory really binds
}

// A layer list under DeepSpeed: a stage that sends keeps its last layer's
// output per micro-batch in flight, so memory does not grow with the range
// and a range can fit where a shorter one from the same start does not. A
// stage's capacity is the longest range that fits where the stage may sit
// (the first stage from layer 0, the last to the end, a middle one
// anywhere), found by trying every range; a bisection on the prefix had
// called a stage that fits [0, 2) unable to hold one layer, and the model
// infeasible on two T4s where the exhaustive search ran it.
TEST(MemoryPruning, LayerListCapacityIsTheLongestRangeThatFits) {
  int compared = 0, longer_fits = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    const Problem problem = search_fixtures::rising_and_falling_outputs(
        {.fast_GiB = 3, .slow_GiB = 2, .wide_MB = 1000, .activation_max_MB = 3000, .runtime = Runtime::deepspeed}, seed);
    const CostModel cost(problem);
    const MemoryPruner memory(cost);
    const int L = problem.model.layers;
    for (int group : {0, 1}) {
      for (Recompute r : {Recompute::none, Recompute::full}) {
        for (int stage = 0; stage < 3; ++stage) {
          const StageSlot slot{group, 0, 1, 1, 1};
          const int p = 3, B = 2, m = problem.training.global_batch / B;
          const StageShape shape{group, 1, 1, r};
          auto fits = [&](int begin, int end) {
            return cost.stage_memory(shape, B, begin, end, stage, p, m).total() <= cost.capacity_bytes(group);
          };
          int longest = 0;
          for (int begin = 0; begin < L; ++begin) {
            for (int end = begin + 1; end <= L; ++end) {
              const bool placed = (stage > 0 || begin == 0) && (stage < p - 1 || end == L);
              if (placed && fits(begin, end)) longest = std::max(longest, end - begin);
              longer_fits += placed && end + 1 <= L && !fits(begin, end) && fits(begin, end + 1);
            }
          }
          EXPECT_EQ(memory.max_layers(slot, r, B, stage, p, m), longest) << "seed " << seed << " stage " << stage;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 480);
  EXPECT_GT(longer_fits, 0) << "no range fits where a shorter one does not: the case is not exercised";
}

TEST(MemoryPruning, LeanerRecomputeHoldsMoreLayers) {
  const Problem problem = tight_two_group_problem();
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  const StageSlot slot{1, 0, 1, 1, 1};
  const int none = memory.max_layers(slot, Recompute::none, 4, 0, 2, 4);
  const int selective = memory.max_layers(slot, Recompute::selective, 4, 0, 2, 4);
  const int full = memory.max_layers(slot, Recompute::full, 4, 0, 2, 4);
  EXPECT_LE(none, selective);
  EXPECT_LT(selective, full);
  EXPECT_EQ(memory.max_layers_leanest(slot, 4, 0, 2, 4), full);
  // Fewer micro-batches in flight (a later stage of 1F1B) also hold more.
  EXPECT_GE(memory.max_layers(slot, Recompute::none, 4, 1, 2, 4), none);
}

TEST(MemoryPruning, InFlightCapacityIsAMiddleStagesAndBoundsEveryPlaceWithAsMany) {
  // What a pipeline's prefix is bounded with: a stage keeping f micro-batches
  // in flight holds what a middle stage with f in flight holds, no fewer than
  // the first stage with f in flight (its embedding only adds), and less the
  // more are in flight.
  const Problem problem = tight_two_group_problem();
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  int binding = 0;
  for (int group : {0, 1}) {
    const StageSlot slot{group, 0, 1, 1, 1};
    for (int B : {1, 4}) {
      const int m = problem.training.global_batch / B;
      int previous = problem.model.layers;
      for (int f = 1; f <= std::min(m, 6); ++f) {
        const int held = memory.max_layers_in_flight_leanest(slot, B, f);
        // Stage 2 of f + 3 with f micro-batches: a middle stage, f in flight.
        EXPECT_EQ(held, memory.max_layers_leanest(slot, B, 2, f + 3, f)) << "f " << f;
        if (f >= 2) {
          // Stage 1 of f + 1 with every micro-batch: also f in flight. The
          // first of f stages keeps f too, and holds the embedding.
          EXPECT_EQ(held, memory.max_layers_leanest(slot, B, 1, f + 1, m)) << "f " << f;
          EXPECT_GE(held, memory.max_layers_leanest(slot, B, 0, f, m)) << "first stage, f " << f;
        }
        EXPECT_LE(held, previous);
        previous = held;
        binding += held < problem.model.layers;
      }
    }
  }
  EXPECT_GT(binding, 4);
}

TEST(MemoryPruning, EveryRawSkeletonIsCountedOnce) {
  for (std::uint32_t seed = 1; seed < 15; ++seed) {
    const Problem problem = search_fixtures::random_problem(seed);
    const CostModel cost(problem);
    const MemoryPruner memory(cost);
    const SearchSpace space(problem);
    const SkeletonList with_memory = initialize_skeletons(space, &memory);
    const SkeletonList structural = initialize_skeletons(space, nullptr);
    EXPECT_EQ(with_memory.report.considered, static_cast<std::int64_t>(space.raw_size()));
    EXPECT_EQ(with_memory.report.considered, with_memory.report.kept + with_memory.report.removed_initially());
    EXPECT_EQ(structural.report.considered, structural.report.kept + structural.report.removed_initially());
    // The memory rules only remove from what the structural rules keep.
    EXPECT_EQ(structural.report.kept, with_memory.report.kept +
                                          with_memory.report.count(PruneRule::stage_cannot_hold_one_layer) +
                                          with_memory.report.count(PruneRule::capacity_below_layers));
    EXPECT_TRUE(std::is_sorted(with_memory.skeletons.begin(), with_memory.skeletons.end(),
                               [](const Skeleton& a, const Skeleton& b) { return a.id < b.id; }));
    for (const Skeleton& s : with_memory.skeletons) EXPECT_FALSE(memory.check(s).has_value());
  }
}

TEST(MemoryPruning, StructuralRulesRemoveWhatTheySay) {
  Problem problem = two_group_problem(8, 8.0, 8.0, 4, 1, 4);
  problem.model.heads = 6;  // tp 4 cannot split 6 heads
  problem.model.kv_heads = 6;
  problem.training.micro_batch_sizes = {1, 3};  // 3 does not divide 16
  // 510 tokens split into no 2·cp equal chunks: no stage can take context
  // parallelism, so a dp that does not divide B stays pruned.
  problem.training.seq_len = 510;
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  const SearchSpace space(problem);
  const SkeletonList list = initialize_skeletons(space, &memory);
  const PruneReport& r = list.report;
  // Half the raw space has B = 3.
  EXPECT_EQ(r.count(PruneRule::micro_batch_not_dividing_batch), r.considered / 2);
  EXPECT_GT(r.count(PruneRule::tp_not_dividing_heads), 0);
  EXPECT_GT(r.count(PruneRule::dp_not_dividing_micro_batch), 0);  // with B = 1 only dp = 1 stays
  EXPECT_EQ(r.count(PruneRule::tp_exceeds_node), 0);              // every tp divides 4
  for (const Skeleton& s : list.skeletons) {
    EXPECT_EQ(s.micro_batch, 1);
    for (const StageSlot& slot : s.stages) {
      EXPECT_EQ(slot.dp, 1);
      EXPECT_NE(slot.tp, 4);
    }
  }
  EXPECT_EQ(to_string(PruneRule::tp_not_dividing_heads), std::string("tp_not_dividing_heads"));
  EXPECT_EQ(r.rows().size(), static_cast<std::size_t>(kPruneRuleCount));
}

// The rules a search keeps per (group, B) (LayoutRules, filled on first
// use from any thread) are layout_rule's, and structural_layouts with them
// keeps the same layouts and counts the same removals as without, on every
// (group order, B) of random spaces and of one where every rule bites.
TEST(MemoryPruning, KeptLayoutRulesAreTheRulesAndCountAlike) {
  std::vector<Problem> problems;
  for (std::uint32_t seed = 1; seed < 9; ++seed) problems.push_back(search_fixtures::random_problem(seed));
  Problem biting = two_group_problem(8, 8.0, 8.0, 4, 1, 4);
  biting.model.heads = biting.model.kv_heads = 6;
  biting.training.micro_batch_sizes = {1, 3};
  biting.training.seq_len = 510;
  problems.push_back(biting);
  int broken = 0;
  for (const Problem& problem : problems) {
    const SearchSpace space(problem);
    const LayoutRules rules(space);
    const int num_b = static_cast<int>(space.micro_batches().size());
    // Asked from two threads at once first: each row is filled once.
    parallel::for_each(problem.cluster.groups.size() * num_b, [&](std::size_t k) {
      const int group = static_cast<int>(k / num_b), b = static_cast<int>(k % num_b);
      for (int li = 0; li < static_cast<int>(space.layouts(group).size()); ++li) rules.rule(group, li, b);
    });
    for (int g = 0; g < static_cast<int>(problem.cluster.groups.size()); ++g)
      for (int b = 0; b < num_b; ++b)
        for (int li = 0; li < static_cast<int>(space.layouts(g).size()); ++li) {
          const auto expected = layout_rule(problem, space.layouts(g)[li], space.micro_batches()[b]);
          EXPECT_EQ(rules.rule(g, li, b), expected);
          broken += expected.has_value();
        }
    for (int o = 0; o < static_cast<int>(space.group_orders().size()); ++o)
      for (int b = 0; b < num_b; ++b) {
        PruneReport plain, kept;
        EXPECT_EQ(structural_layouts(space, o, b, plain), structural_layouts(space, o, b, kept, &rules));
        EXPECT_EQ(plain.removed, kept.removed);
      }
  }
  EXPECT_GT(broken, 10);
}

TEST(MemoryPruning, TpBeyondANodeAndTooManyStagesAreRemoved) {
  // 2 nodes x 2 GPUs and a 3-layer model: tp 4 would cross nodes; 4 stages
  // of one GPU exceed 3 layers.
  Problem problem = two_group_problem(3, 8.0, 8.0, 2, 2, 2);
  problem.cluster.groups.erase(problem.cluster.groups.begin());
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  const SkeletonList list = initialize_skeletons(SearchSpace(problem), &memory);
  EXPECT_GT(list.report.count(PruneRule::tp_exceeds_node), 0);
  EXPECT_GT(list.report.count(PruneRule::more_stages_than_layers), 0);
  for (const Skeleton& s : list.skeletons) {
    EXPECT_LE(s.num_stages(), 3);
    for (const StageSlot& slot : s.stages) EXPECT_LE(slot.tp, 2);
  }
}

TEST(MemoryPruning, ImpossibleModelIsExplained) {
  Problem problem = two_group_problem(8, 0.5, 0.5);
  problem.model.hidden = 8192;
  problem.model.ffn_hidden = 32768;
  problem.model.heads = 64;
  problem.model.kv_heads = 64;
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  const SkeletonList list = initialize_skeletons(SearchSpace(problem), &memory);
  EXPECT_TRUE(list.skeletons.empty());
  const std::string reason = infeasible_reason(cost, list.report);
  // 8 layers of ~805M parameters at 16 bytes each over 4 GPUs: ~24 GiB.
  EXPECT_NE(reason.find("tiny-gpt does not fit"), std::string::npos) << reason;
  EXPECT_NE(reason.find("over all 4 GPUs"), std::string::npos) << reason;
  char has[64];
  std::snprintf(has, sizeof has, "has %.1f GiB", problem.cluster.groups[0].device.memory_GiB);
  EXPECT_NE(reason.find(has), std::string::npos) << reason;
}

TEST(MemoryPruning, ReasonNamesAStructuralRuleWhenThatIsTheCause) {
  Problem problem = two_group_problem(8);
  problem.training.micro_batch_sizes = {3, 5};
  const CostModel cost(problem);
  const SkeletonList list = initialize_skeletons(SearchSpace(problem), nullptr);
  EXPECT_TRUE(list.skeletons.empty());
  const std::string reason = infeasible_reason(cost, list.report);
  EXPECT_NE(reason.find("micro-batch size does not divide the global batch"), std::string::npos) << reason;
}

TEST(MemoryPruning, ReasonCountsEveryOtherRuleThatRemovedSkeletons) {
  // gpt3-1.3b on three groups of nodes of 1,000 GPUs (a space too large for
  // the power-of-two shares of a node, SearchSpace's kSmallSpaceSkeletons):
  // no rule removes them all; the reason names the largest and counts the
  // rest, as --explain's table does.
  Problem problem = load_problem("gpt3-1.3b", "a100x8", "");
  problem.cluster.groups[0].nodes = 4;
  problem.cluster.groups[0].gpus_per_node = 1000;
  problem.cluster.groups.resize(3, problem.cluster.groups[0]);
  const CostModel cost(problem);
  const SkeletonList list = initialize_skeletons(SearchSpace(problem), nullptr);
  EXPECT_TRUE(list.skeletons.empty());
  const PruneReport& r = list.report;
  const std::string reason = infeasible_reason(cost, r);
  ASSERT_GT(r.count(PruneRule::tp_not_dividing_heads), r.count(PruneRule::dp_not_dividing_micro_batch));
  ASSERT_GT(r.count(PruneRule::dp_not_dividing_micro_batch), 0);
  const std::size_t others = reason.find("(tp_not_dividing_heads); the others: ");
  ASSERT_NE(others, std::string::npos) << reason;
  for (const PruneRule rule : {PruneRule::tp_exceeds_node, PruneRule::dp_not_dividing_micro_batch}) {
    ASSERT_GT(r.count(rule), 0);
    EXPECT_NE(reason.find(std::string(to_string(rule)) + " " + std::to_string(r.count(rule)), others), std::string::npos) << reason;
  }
}

TEST(MemoryPruning, ReportsMergeAndSerialize) {
  PruneReport a, b;
  a.considered = 10;
  a.kept = 4;
  a.add(PruneRule::tp_exceeds_node, 6);
  b.add(PruneRule::lower_bound_above_best, 3);
  b.add(PruneRule::no_feasible_split, 1);
  a.merge(b);
  EXPECT_EQ(a.removed_initially(), 6);
  EXPECT_EQ(a.skipped_in_search(), 4);
  std::stringstream bytes;
  {
    cereal::BinaryOutputArchive out(bytes);
    out(a);
  }
  PruneReport back;
  {
    cereal::BinaryInputArchive in(bytes);
    in(back);
  }
  EXPECT_EQ(back.considered, 10);
  EXPECT_EQ(back.kept, 4);
  EXPECT_EQ(back.removed, a.removed);
}

}  // namespace
}  // namespace autohaap
