// The search space: which layouts a group offers, the canonical order and
// ids of skeletons, and the split helpers.
#include "autohaap/search/search_space.hpp"

#include <gtest/gtest.h>

#include <cereal/archives/binary.hpp>
#include <limits>
#include <set>
#include <sstream>

#include "autohaap/io/search_serialization.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

Problem problem_with(std::vector<NodeGroup> groups) {
  Problem p = search_fixtures::two_group_problem(8);
  p.cluster.groups = std::move(groups);
  return p;
}

TEST(SearchSpace, StagesFitInANodeOrAreWholeNodes) {
  // 3 nodes x 8 GPUs, a small space: used whole (24 GPUs: stages of 1, 2,
  // 4, 8 or 24 — so 3 stages of 8 — but never 3, 6 or 12, which would
  // straddle nodes), by its first 2 nodes (16 GPUs: stages of 1, 2, 4, 8
  // or 16), its first node, and that node's first 1 to 7 GPUs (in stages
  // that divide the node: 6 GPUs as 6 of 1 or 3 of 2).
  const Problem p = problem_with({make_node_group(catalog_device("a100-80gb"), 3, 8)});
  const SearchSpace space(p);
  std::set<int> sizes, counts, used;
  for (const GroupLayout& l : space.layouts(0)) {
    sizes.insert(l.gpus_per_stage);
    counts.insert(l.stages);
    used.insert(l.stages * l.gpus_per_stage);
    EXPECT_EQ(l.tp * l.dp, l.gpus_per_stage);
  }
  EXPECT_EQ(used, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 8, 16, 24}));
  EXPECT_EQ(sizes, (std::set<int>{1, 2, 4, 8, 16, 24}));
  EXPECT_TRUE(counts.count(3));
  // Every divisor of the stage size is a tp. 24 GPUs: 1 + 2 + 3 + 4 + 8
  // layouts (sizes 24, 8, 4, 2, 1); 16: 5 + 4 + 3 + 2 + 1; 8: 4 + 3 + 2 +
  // 1; 4: 3 + 2 + 1; 2: 2 + 1; 1, 3, 5 and 7: 1 each; 6: 1 + 2.
  EXPECT_EQ(space.layouts(0).size(), 18u + 15u + 10u + 6u + 3u + 4u * 1u + 3u);
  // Listed by GPUs used, ascending.
  for (std::size_t i = 1; i < space.layouts(0).size(); ++i) {
    const GroupLayout &a = space.layouts(0)[i - 1], &b = space.layouts(0)[i];
    EXPECT_LE(a.stages * a.gpus_per_stage, b.stages * b.gpus_per_stage);
  }

  // A fleet-sized space (seven groups of 4 nodes: more than
  // kSmallSpaceSkeletons raw skeletons with the shares): 4 nodes, a power
  // of two a plan can fill, are used whole only.
  const Problem seven = problem_with(std::vector<NodeGroup>(7, make_node_group(catalog_device("a100-80gb"), 4, 8)));
  const SearchSpace seven_space(seven);
  ASSERT_GT(seven_space.raw_size(), kSmallSpaceSkeletons);
  for (const GroupLayout& l : seven_space.layouts(0)) EXPECT_EQ(l.stages * l.gpus_per_stage, 32);
}

TEST(SearchSpace, GroupsWithNoRunnableLayoutAlsoOfferTheNodesThatHaveOne) {
  // 2 nodes of 7 GPUs (a power of two, fewer GPUs than a plan can use) for
  // an 8-layer model and B <= 4: stages of 1 GPU are 14, more than the
  // layers; of 7 GPUs (a node) tp 7 divides no head count and dp 7 no B;
  // 14 GPUs have dp 14 or tp beyond a node. So the whole group runs no
  // plan, and its first node (7 stages of 1 GPU) is offered too.
  const Problem p = problem_with({make_node_group(catalog_device("a100-80gb"), 2, 7)});
  ASSERT_EQ(p.model.layers, 8);
  std::set<int> used;
  const SearchSpace space(p);
  for (const GroupLayout& l : space.layouts(0)) used.insert(l.stages * l.gpus_per_stage);
  // (and, the space being small, 1 to 6 GPUs of the first node)
  EXPECT_EQ(used, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 14}));
  bool one_node_of_single_gpu_stages = false;
  for (const GroupLayout& l : space.layouts(0))
    one_node_of_single_gpu_stages |= l.stages == 7 && l.gpus_per_stage == 1;
  EXPECT_TRUE(one_node_of_single_gpu_stages);

  // 4 nodes of 7: 28 and 14 GPUs run nothing either, so the prefix is
  // halved down to the one node that does.
  const Problem four = problem_with({make_node_group(catalog_device("a100-80gb"), 4, 7)});
  std::set<int> four_used;
  const SearchSpace four_space(four);
  for (const GroupLayout& l : four_space.layouts(0)) four_used.insert(l.stages * l.gpus_per_stage);
  EXPECT_EQ(four_used, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 28}));
}

TEST(SearchSpace, GroupsLargerThanAnyPlanOfferWhatAPlanCanUse) {
  // 171 nodes of 8 GPUs (1368 = 2^3 * 3^2 * 19 GPUs) for a model of 8
  // layers and micro-batches of at most 4 sequences: a plan uses at most
  // 8 stages x tp 8 x dp 4 = 256 GPUs, so the group also offers its first
  // 32 nodes (256 GPUs), and, the space being small, every share below
  // that runs a layout: 1 to 7 GPUs of a node, and the node counts whose
  // GPUs factor into stages x tp x dp (not 9 nodes: 72 GPUs would need a
  // dp of 9 or stages past the layers).
  const Problem p = problem_with({make_node_group(catalog_device("a100-80gb"), 171, 8)});
  ASSERT_EQ(p.model.layers, 8);
  ASSERT_EQ(p.training.micro_batch_sizes, (std::vector<int>{1, 2, 4}));
  std::set<int> used;
  const SearchSpace space(p);
  for (const GroupLayout& l : space.layouts(0)) used.insert(l.stages * l.gpus_per_stage);
  EXPECT_EQ(used, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224,
                                 256, 1368}));
}

TEST(SearchSpace, GroupOrdersAreEveryOrderedSubset) {
  const Problem p = search_fixtures::two_group_problem(8);
  const SearchSpace space(p);
  const std::vector<std::vector<int>> expected = {{0}, {1}, {0, 1}, {1, 0}};
  EXPECT_EQ(space.group_orders(), expected);
  std::vector<NodeGroup> three(3, p.cluster.groups[0]);
  const Problem with_three = problem_with(three);  // a space keeps a reference to its problem
  EXPECT_EQ(SearchSpace(with_three).group_orders().size(), 3u + 6u + 6u);
}

TEST(SearchSpace, IdsFollowTheCanonicalOrderAndCoverTheRawSpace) {
  const Problem p = search_fixtures::two_group_problem(8);
  const SearchSpace space(p);
  std::uint64_t expected_id = 0;
  std::set<std::uint64_t> seen;
  for (int o = 0; o < static_cast<int>(space.group_orders().size()); ++o) {
    const auto& order = space.group_orders()[o];
    for (int b = 0; b < static_cast<int>(space.micro_batches().size()); ++b) {
      EXPECT_EQ(space.first_id(o, b), expected_id);
      std::vector<int> digits(order.size(), 0);
      while (true) {
        const Skeleton s = space.make(o, b, digits);
        EXPECT_EQ(s.id, expected_id++);
        EXPECT_EQ(s.micro_batch, space.micro_batches()[b]);
        seen.insert(s.id);
        int j = static_cast<int>(order.size()) - 1;
        while (j >= 0 && ++digits[j] == static_cast<int>(space.layouts(order[j]).size())) digits[j--] = 0;
        if (j < 0) break;
      }
    }
  }
  EXPECT_EQ(expected_id, space.raw_size());
  EXPECT_EQ(seen.size(), space.raw_size());
}

TEST(SearchSpace, LocateIsMakesInverse) {
  // Every skeleton of three groups' space is found where make() built it,
  // and every order where group_orders() lists it; what make() cannot build
  // is not found.
  Problem p = search_fixtures::two_group_problem(8);
  p.cluster.groups.push_back(p.cluster.groups.front());
  const SearchSpace space(p);
  int located = 0;
  for (int o = 0; o < static_cast<int>(space.group_orders().size()); ++o) {
    const auto& order = space.group_orders()[o];
    EXPECT_EQ(space.order_index(order), o);
    for (int b = 0; b < static_cast<int>(space.micro_batches().size()); ++b) {
      std::vector<int> layout(order.size());
      for (std::size_t j = 0; j < order.size(); ++j)
        layout[j] = static_cast<int>((o + b + 3 * j) % space.layouts(order[j]).size());
      const auto at = space.locate(space.make(o, b, layout));
      ASSERT_TRUE(at.has_value());
      EXPECT_EQ(at->order, o);
      EXPECT_EQ(at->micro_batch, b);
      EXPECT_EQ(at->layout, layout);
      ++located;
    }
  }
  EXPECT_GT(located, 30);
  EXPECT_FALSE(space.order_index({0, 0}).has_value());
  EXPECT_FALSE(space.order_index({}).has_value());
  // A group's stages apart, a stage off its place, an unlisted B.
  Skeleton apart = space.make(*space.order_index({0, 1}), 0, {0, 0});
  const StageSlot other_group{2, 0, apart.stages.front().gpus, apart.stages.front().tp, apart.stages.front().dp};
  apart.stages.push_back(apart.stages.front());
  apart.stages.insert(apart.stages.begin() + 1, other_group);
  EXPECT_FALSE(space.locate(apart).has_value());
  Skeleton moved = space.make(0, 0, {0});
  moved.stages.front().first_gpu += 1;
  EXPECT_FALSE(space.locate(moved).has_value());
  Skeleton odd_batch = space.make(0, 0, {0});
  odd_batch.micro_batch = 3;
  EXPECT_FALSE(space.locate(odd_batch).has_value());
}

TEST(SearchSpace, SkeletonStagesTileEachGroupInOrder) {
  const Problem p = search_fixtures::two_group_problem(8, 1, 1, 4, 2, 2);
  const SearchSpace space(p);
  // Order {1, 0}: the slow group first. Pick 2 stages of 2 (tp 2) on group 1
  // and 4 stages of 1 on group 0.
  const int order = 3;
  ASSERT_EQ(space.group_orders()[order], (std::vector<int>{1, 0}));
  auto find = [&](int group, int stages, int tp) {
    const auto& ls = space.layouts(group);
    for (int i = 0; i < static_cast<int>(ls.size()); ++i) {
      if (ls[i].stages == stages && ls[i].tp == tp) return i;
    }
    return -1;
  };
  const Skeleton s = space.make(order, 1, {find(1, 2, 2), find(0, 4, 1)});
  ASSERT_EQ(s.num_stages(), 6);
  EXPECT_EQ(s.micro_batch, 2);
  const std::vector<StageSlot> expected = {{1, 0, 2, 2, 1}, {1, 2, 2, 2, 1}, {0, 0, 1, 1, 1},
                                           {0, 1, 1, 1, 1}, {0, 2, 1, 1, 1}, {0, 3, 1, 1, 1}};
  EXPECT_EQ(s.stages, expected);
}

TEST(SearchSpace, CountSplitsIsBinomial) {
  EXPECT_EQ(count_splits(8, 1), 1);
  EXPECT_EQ(count_splits(8, 8), 1);
  EXPECT_EQ(count_splits(8, 3), 21);           // C(7, 2)
  EXPECT_EQ(count_splits(126, 6), 234531275);  // C(125, 5)
  EXPECT_EQ(count_splits(64, 8), 553270671);   // C(63, 7)
  EXPECT_EQ(count_splits(4, 5), 0);
  EXPECT_EQ(count_splits(1000, 500), std::numeric_limits<std::int64_t>::max());
}

TEST(SearchSpace, EvenSplitGivesTheRemainderToTheFirstStages) {
  EXPECT_EQ(even_split(10, 4), (std::vector<int>{3, 6, 8, 10}));
  EXPECT_EQ(even_split(8, 4), (std::vector<int>{2, 4, 6, 8}));
  EXPECT_EQ(even_split(5, 1), (std::vector<int>{5}));
}

TEST(SearchSpace, MakePlanFillsEveryStageField) {
  const Problem p = search_fixtures::two_group_problem(8);
  Skeleton s;
  s.micro_batch = 4;
  s.stages = {{1, 0, 2, 1, 2}, {0, 0, 2, 2, 1}};
  const Plan plan = make_plan(p, s, {3, 8}, {Recompute::full, Recompute::none});
  EXPECT_EQ(plan.num_micro_batches, 4);
  EXPECT_EQ(plan.micro_batch_size, 4);
  EXPECT_EQ(plan.zero, p.training.zero);
  ASSERT_EQ(plan.stages.size(), 2u);
  EXPECT_EQ(plan.stages[0].device, "v100-32gb");
  EXPECT_EQ(plan.stages[0].dp, 2);
  EXPECT_EQ(plan.stages[0].layer_end, 3);
  EXPECT_EQ(plan.stages[1].layer_begin, 3);
  EXPECT_EQ(plan.stages[1].recompute, Recompute::none);
  EXPECT_EQ(plan.stages[0].recompute, Recompute::full);
}

TEST(SearchSpace, SkeletonsSurviveSerialization) {
  // A distributed driver ships skeleton lists between ranks.
  const Problem p = search_fixtures::two_group_problem(8);
  const SearchSpace space(p);
  // Order 2 is groups {0, 1}, order 3 {1, 0}; the layout indices are each
  // group's last and first layouts (an index past a group's layouts would
  // read outside its list).
  const int last0 = static_cast<int>(space.layouts(0).size()) - 1, last1 = static_cast<int>(space.layouts(1).size()) - 1;
  ASSERT_GE(last0, 1);
  ASSERT_GE(last1, 1);
  std::vector<Skeleton> sent = {space.make(2, 1, {last0, last1}), space.make(3, 0, {0, 1})};
  sent[0].lower_bound_s = 0.125;
  sent[1].work = 42;
  std::stringstream bytes;
  {
    cereal::BinaryOutputArchive out(bytes);
    out(sent);
  }
  std::vector<Skeleton> received;
  {
    cereal::BinaryInputArchive in(bytes);
    in(received);
  }
  ASSERT_EQ(received.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(received[i].id, sent[i].id);
    EXPECT_EQ(received[i].micro_batch, sent[i].micro_batch);
    EXPECT_EQ(received[i].stages, sent[i].stages);
    EXPECT_EQ(received[i].lower_bound_s, sent[i].lower_bound_s);
    EXPECT_EQ(received[i].work, sent[i].work);
  }
}

}  // namespace
}  // namespace autohaap
