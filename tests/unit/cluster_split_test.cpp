// Groups also searched as two halves (search/cluster_split.hpp): which
// orders the space offers, that a plan on halves costs on the cluster given
// what it cost on the split one, and that the halves' plans (two layouts on
// one group, one device type at both ends) are found where the space
// without them has none as fast, checked against the exhaustive strategy
// and a brute force over the space without halves.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/search/cluster_merge.hpp"
#include "autohaap/search/cluster_split.hpp"
#include "autohaap/search/load_balancer.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_space.hpp"
#include "autohaap/search/searcher.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

using search_fixtures::named;
using search_fixtures::shrunk;
using search_fixtures::tiny_gpt;

Problem tiny_on_slow_fabric(std::vector<NodeGroup> groups, int layers) {
  Problem p;
  p.model = tiny_gpt(layers);
  p.cluster.name = "tiny";
  p.cluster.groups = std::move(groups);
  p.cluster.inter_group_GBps = 1.0;  // a slow fabric between groups: where a plan crosses it matters
  p.cluster.inter_group_latency_us = 20;
  p.training.global_batch = 16;
  p.training.micro_batch_sizes = {1, 2, 4};
  p.training.headroom_GiB = 0;
  p.training.precision = Precision::fp16;
  return p;
}

SearchResult search_with(const Problem& problem, const std::string& strategy) {
  SearchOptions options;
  options.strategy = strategy;
  options.threads = 2;
  options.mixed_stages = false;
  return run_search(problem, options);
}

// The best iteration time over the space without halves: every structurally
// valid skeleton of SearchSpace(problem) (which halves nothing itself)
// given its exact best split by the load balancer, as the reference
// strategy prices one.
double best_without_halves(const Problem& problem) {
  const SearchSpace space(problem);
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  const LoadBalancer balancer(cost, memory, nullptr);
  double best = std::numeric_limits<double>::infinity();
  for (const Skeleton& s : initialize_skeletons(space, nullptr).skeletons) {
    const BalanceResult r = balancer.balance(s, std::numeric_limits<double>::infinity(), [] { return false; });
    if (r.status != BalanceResult::Status::found) continue;
    Plan plan = make_plan(problem, s, r.split.layer_end, r.split.recompute, r.split.vpp);
    const PredictedPerformance predicted = cost.estimate(plan);
    if (predicted.fits) best = std::min(best, predicted.iteration_time_s);
  }
  return best;
}

TEST(ClusterSplit, OffersAGroupWholeOrAsBothHalvesTheFirstHalfFirst) {
  const NodeGroup a = make_node_group(shrunk("a100-80gb", 0.45), 4, 1);
  const NodeGroup v = make_node_group(shrunk("v100-32gb", 0.30), 1, 2);
  const ClusterSplit split = split_groups(tiny_on_slow_fabric({a, v}, 6));
  ASSERT_EQ(split.halved, std::vector<int>{0});
  const std::vector<NodeGroup>& g = split.problem.cluster.groups;
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[2].nodes, 2);
  EXPECT_EQ(g[3].nodes, 2);
  EXPECT_EQ(g[2].half_of, 0);
  EXPECT_EQ(g[3].half_of, 0);
  EXPECT_EQ(g[2].half, 1);
  EXPECT_EQ(g[3].half, 2);
  EXPECT_EQ(split.origin[3].group, 0);
  EXPECT_EQ(split.origin[3].first_gpu, 2);
  // The one-node V100 group has no halves; the space's orders: each group
  // whole, or the A100s' two halves in order, anything between them.
  const SearchSpace space(split.problem);
  const std::set<std::vector<int>> orders(space.group_orders().begin(), space.group_orders().end());
  const std::set<std::vector<int>> expected{{0},    {1},    {0, 1},    {1, 0},    {2, 3},
                                            {1, 2, 3}, {2, 1, 3}, {2, 3, 1}};
  EXPECT_EQ(orders, expected);
  // Halves hold every skeleton of the space without them, and more.
  const Problem given = tiny_on_slow_fabric({a, v}, 6);
  const SearchSpace plain(given);
  EXPECT_GT(space.raw_size(), plain.raw_size());
  EXPECT_EQ(space.shares(), plain.shares());
}

TEST(ClusterSplit, NothingIsHalvedOnManyGroupsOrOddNodes) {
  const NodeGroup a = make_node_group(shrunk("a100-80gb", 0.45), 3, 1);  // odd
  const NodeGroup one = make_node_group(shrunk("v100-32gb", 0.30), 1, 4);
  EXPECT_FALSE(split_groups(tiny_on_slow_fabric({a, one}, 6)).split());
  const NodeGroup two = make_node_group(shrunk("h100-sxm", 0.45), 2, 1);
  const ClusterSplit four = split_groups(tiny_on_slow_fabric({two, named(two, "b"), named(two, "c"), named(two, "d")}, 6));
  EXPECT_FALSE(four.split()) << "more than kMostSplitGroups groups";
  EXPECT_EQ(four.problem.cluster.groups.size(), 4u);
}

// Every skeleton that uses halves, priced on the split cluster and, moved
// back, on the cluster given: the same iteration time to the bit, and a
// plan the given cluster's checks accept. Also on a merged group, whose
// halves are its parts (a link between them crosses the fabric).
TEST(ClusterSplit, APlanOnHalvesCostsWhatItCostsOnTheGroupItCameFrom) {
  const NodeGroup a = make_node_group(shrunk("a100-80gb", 0.45), 2, 2);
  const NodeGroup v = make_node_group(shrunk("v100-32gb", 0.30), 2, 1);
  const Problem given = tiny_on_slow_fabric({a, v}, 6);
  const ClusterMerge merge = merge_identical_groups(tiny_on_slow_fabric({a, named(a, "a1"), v}, 6).cluster);
  Problem merged = given;
  merged.cluster = merge.cluster;
  ASSERT_EQ(merged.cluster.groups[0].parts, 2);
  Problem unmerged = tiny_on_slow_fabric({a, named(a, "a1"), v}, 6);
  int priced = 0;
  for (const bool parts : {false, true}) {
    const Problem& problem = parts ? merged : given;
    const ClusterSplit split = split_groups(problem);
    ASSERT_EQ(split.halved, (std::vector<int>{0, 1})) << parts;
    const SearchSpace space(split.problem);
    const CostModel on_split(split.problem);
    const CostModel on_given(parts ? unmerged : given);
    for (const Skeleton& s : initialize_skeletons(space, nullptr).skeletons) {
      const bool halves = std::any_of(s.stages.begin(), s.stages.end(), [&](const StageSlot& slot) {
        return split.problem.cluster.groups[slot.group].half_of >= 0;
      });
      if (!halves || s.num_stages() > 6) continue;
      Plan plan = make_plan(split.problem, s, even_split(6, s.num_stages()),
                            std::vector<Recompute>(s.num_stages(), Recompute::full));
      plan.predicted = on_split.estimate(plan);
      Plan back = unsplit_plan(plan, split);
      if (parts) back = unmerge_plan(back, merge);
      const Problem& original = parts ? unmerged : given;
      ASSERT_NO_THROW(check_plan_against(back, original.model, original.cluster, original.seq_len(), "plan"));
      ASSERT_EQ(on_given.estimate(back).iteration_time_s, plan.predicted.iteration_time_s) << s.id << " " << parts;
      ++priced;
    }
  }
  EXPECT_GT(priced, 100);
}

// One device type at both ends of the pipeline: with tied embeddings the
// first and last stages reduce the embedding's gradient together, over the
// group's own NICs when both sit in it, over the fabric between groups
// when not. GPT-3 350M, global batch 8, on 2 one-GPU nodes of H200 and 2
// of H100: the reference strategy and the search agree on the optimum over
// the space with halves, 19% faster than every plan without them, with the
// H200s' halves at both ends.
TEST(ClusterSplit, TheSearchPutsOneGroupAtBothEndsWhereThatIsFastest) {
  Problem p;
  p.model = catalog_model("gpt3-350m");
  p.cluster.name = "h200-h100";
  p.cluster.groups = {make_node_group(catalog_device("h200"), 2, 1), make_node_group(catalog_device("h100-sxm"), 2, 1)};
  p.cluster.inter_group_GBps = 12.5;
  p.cluster.inter_group_latency_us = 20;
  p.training.global_batch = 8;
  const SearchResult searched = search_with(p, "autohaap"), reference = search_with(p, "reference");
  ASSERT_FALSE(searched.top.empty());
  ASSERT_FALSE(reference.top.empty());
  const double best = searched.top[0].predicted.iteration_time_s;
  EXPECT_EQ(best, reference.top[0].predicted.iteration_time_s);
  const Plan& plan = searched.top[0];
  ASSERT_EQ(plan.stages.size(), 4u);
  EXPECT_EQ(plan.stages.front().group, 0);
  EXPECT_EQ(plan.stages.back().group, 0);
  EXPECT_EQ(plan.stages[1].group, 1);
  EXPECT_LT(best, best_without_halves(p) * (1 - 0.15));
  EXPECT_EQ(CostModel(p).estimate(plan).iteration_time_s, best);
}

// Stages of two (tp, dp) on one group: Llama 3 70B on 32 nodes of 8
// A100-80GB (NICs of 25 GB/s a GPU) runs faster as 2 stages of tp 4 x dp 8
// then 2 of tp 2 x dp 16 than in any one layout of the group, and the same
// nodes described as two identical groups (merged, then halved by their
// parts) give the same answer.
TEST(ClusterSplit, OneGroupHoldsStagesOfTwoLayoutsWhereThatIsFastest) {
  NodeGroup a = make_node_group(catalog_device("a100-80gb"), 32, 8);
  a.inter_node_GBps = 25;
  Problem one;
  one.model = catalog_model("llama3-70b");
  one.cluster.name = "a100";
  one.cluster.groups = {a};
  one.cluster.inter_group_GBps = 25;
  one.cluster.inter_group_latency_us = a.inter_node_latency_us;
  SearchOptions options;
  options.threads = 2;
  const SearchResult found = run_search(one, options);
  ASSERT_FALSE(found.top.empty());
  const Plan& plan = found.top[0];
  std::set<std::pair<int, int>> layouts;
  for (const StagePlan& s : plan.stages) layouts.insert({s.tp, s.cp * s.dp});
  EXPECT_GE(layouts.size(), 2u);
  EXPECT_EQ(found.top[0].search.gap, 0);
  EXPECT_LT(plan.predicted.iteration_time_s, best_without_halves(one) * (1 - 0.01));
  Problem two = one;
  NodeGroup half = a;
  half.nodes = 16;
  two.cluster.groups = {named(half, "rack0"), named(half, "rack1")};
  const SearchResult described = run_search(two, options);
  ASSERT_FALSE(described.top.empty());
  EXPECT_NEAR(described.top[0].predicted.iteration_time_s, plan.predicted.iteration_time_s,
              1e-9 * plan.predicted.iteration_time_s);
}

// The top K are K plans of the cluster as given. A plan on a group's two
// halves with the same stages as a plan on the whole group is that plan:
// counted apart, the twins had taken places in the K kept, the K-th best's
// bound pruned plans of the true top K, and the list shrank when the twins
// became one (two V100 nodes, -k 5: ranks 4 and 5 were the 13th and 17th
// plans, and the exhaustive strategy listed 3). Every strategy's K best
// are now the first K of its longer list.
TEST(ClusterSplit, TheTopKArePlansOfTheClusterAsGiven) {
  const std::string dir = std::string(AUTOHAAP_TEST_DATA_DIR) + "/split/";
  const Problem p = load_problem(dir + "topk-model.yaml", dir + "topk-cluster.yaml", dir + "topk-training.yaml");
  ASSERT_TRUE(split_groups(p).split());
  // The times of a strategy's K best, each plan once.
  auto times = [&](const std::string& strategy, int k) {
    SearchOptions options;
    options.strategy = strategy;
    options.threads = 2;
    options.mixed_stages = false;
    options.top_k = k;
    const std::vector<Plan> top = run_search(p, options).top;
    std::vector<double> out;
    for (std::size_t i = 0; i < top.size(); ++i) {
      out.push_back(top[i].predicted.iteration_time_s);
      for (std::size_t j = 0; j < i; ++j)
        EXPECT_FALSE(same_skeleton(top[i], top[j]))
            << strategy << " lists one plan twice, as " << j + 1 << " and " << i + 1;
    }
    return out;
  };
  const std::vector<double> all = times("reference", 20);
  ASSERT_GE(all.size(), 10u);
  const std::vector<double> first_five(all.begin(), all.begin() + 5);
  EXPECT_EQ(times("autohaap", 20), all);
  for (const std::string strategy : {"autohaap", "exhaustive", "reference"})
    EXPECT_EQ(times(strategy, 5), first_five) << strategy;
}

}  // namespace
}  // namespace autohaap
