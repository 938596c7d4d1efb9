// Idle GPUs as replica sets of a found plan's stages (search/mixed_stages.hpp):
// a case whose answer is known by hand (an idle twin of the used group
// doubles the data parallelism), the local optimum being a fixed point,
// and the finished search never slower with mixed stages than without on
// random small clusters.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/search/mixed_stages.hpp"
#include "autohaap/search/refinement.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "plan_fixtures.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

using search_fixtures::random_problem;
using search_fixtures::tiny_gpt;
using testing_fixtures::make_stage;

// Two groups of one node of four A100-40GB each, described separately (a
// problem built in code is not merged), gpt3-350m, global batch 64.
Problem twin_groups() {
  Problem p;
  p.model = catalog_model("gpt3-350m");
  p.cluster.name = "twin-a100";
  NodeGroup a = make_node_group(catalog_device("a100-40gb"), 1, 4);
  NodeGroup b = a;
  a.name = "rack-a", b.name = "rack-b";
  p.cluster.groups = {a, b};
  p.cluster.inter_group_GBps = 25;
  p.cluster.inter_group_latency_us = 10;
  p.training.global_batch = 64;
  p.training.micro_batch_sizes = {1, 2, 4, 8};
  p.training.headroom_GiB = 0;
  return p;
}

// `model` on one group of `nodes` x `per_node` `device`s, with the global
// batch and micro-batch sizes given.
Problem one_group(const char* model, const char* device, int nodes, int per_node, int global_batch,
                  std::vector<int> sizes) {
  Problem p;
  p.model = catalog_model(model);
  p.cluster.name = std::string(device) + "-group";
  p.cluster.groups = {make_node_group(catalog_device(device), nodes, per_node)};
  p.training.global_batch = global_batch;
  p.training.micro_batch_sizes = std::move(sizes);
  return p;
}

// A plan of `p` at micro-batch B holding `stage` alone.
Plan one_stage_plan(const Problem& p, int B, const StagePlan& stage) {
  Plan plan;
  plan.model = p.model.name;
  plan.cluster = p.cluster.name;
  plan.global_batch = p.training.global_batch;
  plan.micro_batch_size = B;
  plan.num_micro_batches = p.training.global_batch / B;
  plan.zero = p.training.zero;
  plan.stages = {stage};
  return plan;
}

// One stage on rack-a, 4 replicas of 1 sequence each (B = 4, 16
// micro-batches).
Plan rack_a_only(const Problem& p) {
  return one_stage_plan(p, 4, make_stage(0, "a100-40gb", 0, 1, 4, 0, p.model.layers, Recompute::none));
}

// rack-b is rack-a's twin: its 4 GPUs join the one stage as a second set
// of 4 replicas with the same share as the first (equal speed), and the
// micro-batch B is the best of every B the move allows (with sizes per
// replica, 8, 16, 32 and 64 divide the global batch and give each of the
// 8 replicas a sequence; per pipeline, 8 is the largest listed), each
// such plan built here by hand. It is faster than the plan by more
// than a third: each replica has the same work per micro-batch at half the
// micro-batches (B = 8), and a larger B only helps the GEMMs; only the
// gradient sync, now also across the fabric, grows.
TEST(MixedStages, IdleTwinGroupDoublesTheReplicas) {
  // The training file's sizes per pipeline (the default) allow B = 8 alone
  // once the stage has 8 replicas; per replica, up to 8 x 8.
  for (const bool per_replica : {false, true}) {
    SCOPED_TRACE(per_replica ? "micro_batch_per_replica" : "micro-batch sizes per pipeline");
    Problem p = twin_groups();
    p.training.micro_batch_per_replica = per_replica;
    const CostModel model(p);
    Plan plan = rack_a_only(p);
    plan.predicted = model.estimate(plan);
    ASSERT_TRUE(plan.predicted.fits);

    const Plan mixed = add_idle_replica_sets(model, plan);
    ASSERT_EQ(mixed.stages.size(), 1u);
    const StagePlan& s = mixed.stages[0];
    ASSERT_EQ(s.replicas.size(), 2u);
    EXPECT_EQ(s.replicas[0].group, 0);
    EXPECT_EQ(s.replicas[1].group, 1);
    EXPECT_EQ(s.replicas[1].first_gpu, 0);
    EXPECT_EQ(s.replicas[1].gpus, 4);
    EXPECT_EQ(s.dp, 8);
    EXPECT_EQ(s.replicas[0].sequences, mixed.micro_batch_size / 2);
    EXPECT_EQ(s.replicas[1].sequences, mixed.micro_batch_size / 2);
    EXPECT_NO_THROW(check_plan_against(mixed, p.model, p.cluster, p.seq_len(), "plan"));
    EXPECT_EQ(model.estimate(mixed).iteration_time_s, mixed.predicted.iteration_time_s);
    if (!per_replica) EXPECT_EQ(mixed.micro_batch_size, 8) << "the largest size the training file lists";

    double best = 1e300;
    for (const int B : per_replica ? std::vector<int>{8, 16, 32, 64} : std::vector<int>{8}) {
      Plan both = plan;
      both.micro_batch_size = B;
      both.num_micro_batches = 64 / B;
      StagePlan& stage = both.stages[0];
      set_replica_sets(stage, {{"a100-40gb", 0, 0, 4, B / 2}, {"a100-40gb", 1, 0, 4, B / 2}});
      const PredictedPerformance e = model.estimate(both);
      if (e.fits) best = std::min(best, e.iteration_time_s);
    }
    EXPECT_EQ(mixed.predicted.iteration_time_s, best);
    EXPECT_LT(mixed.predicted.iteration_time_s, 0.65 * plan.predicted.iteration_time_s);
  }
}

// A plan with no idle GPU, or none that helps, comes back as it was; the
// improved plan is a fixed point (no further move is faster).
TEST(MixedStages, FixedPointAndUnchangedWhenNothingIsIdle) {
  const Problem p = twin_groups();
  const CostModel model(p);
  const Plan once = add_idle_replica_sets(model, rack_a_only(p));
  const Plan twice = add_idle_replica_sets(model, once);
  EXPECT_EQ(twice.predicted.iteration_time_s, once.predicted.iteration_time_s);
  EXPECT_EQ(plan_to_yaml(twice, p), plan_to_yaml(once, p));

  // Both racks used by two stages: nothing idle.
  Plan full = rack_a_only(p);
  full.stages = {make_stage(0, "a100-40gb", 0, 1, 4, 0, 12, Recompute::none),
                 make_stage(1, "a100-40gb", 0, 1, 4, 12, 24, Recompute::none)};
  full.predicted = model.estimate(full);
  const Plan same = add_idle_replica_sets(model, full);
  EXPECT_EQ(plan_to_yaml(same, p), plan_to_yaml(full, p));
}

// The finished search (finish_plans) with mixed stages is never slower
// than without on random small two-type clusters, every plan it answers
// passes the plan checks, and mixing changes the answer on some of them.
TEST(MixedStages, FinishedSearchNeverSlowerThanWithout) {
  int changed = 0;
  for (std::uint32_t seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Problem p = random_problem(seed);
    p.training.micro_batch_sizes = {1, 2, 4, 8};
    const CostModel model(p);
    SearchOptions options;
    options.threads = 2;
    const SearchResult result = run_search(p, options);
    if (result.top.empty()) continue;
    SearchSettings with = options, without = options;
    without.mixed_stages = false;
    const std::vector<Plan> a = finish_plans(model, result, with);
    const std::vector<Plan> b = finish_plans(model, result, without);
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    EXPECT_LE(a.front().predicted.iteration_time_s, b.front().predicted.iteration_time_s);
    EXPECT_NO_THROW(check_plan_against(a.front(), p.model, p.cluster, p.seq_len(), "plan"));
    for (const StagePlan& s : b.front().stages) EXPECT_FALSE(s.has_replica_sets());
    changed += a.front().predicted.iteration_time_s < b.front().predicted.iteration_time_s;
  }
  std::printf("mixed stages faster on %d of 24 random clusters\n", changed);
}

// Micro-batch sizes the training lists but that do not divide the global
// batch are the walk's to count (micro_batch_not_dividing_batch), never
// the mixed stages' to take: GPT-3 1.3B on 4 nodes of 8 H100s under
// DeepSpeed ZeRO-2 with global batch 8 and sizes {1, 3} had a replica-set
// plan of B = 3 x 2 micro-batches (6 sequences, priced as 8), which every
// reader of the plan file then refused.
TEST(MixedStages, NeverTakeAMicroBatchThatDoesNotDivideTheBatch) {
  Problem p = one_group("gpt3-1.3b", "h100-sxm", 4, 8, 8, {1, 3});
  p.training.runtime = Runtime::deepspeed;
  p.training.zero = 2;
  const CostModel model(p);
  SearchOptions options;
  options.threads = 2;
  options.top_k = 3;
  const SearchResult result = run_search(p, options);
  ASSERT_FALSE(result.top.empty());
  const std::vector<Plan> plans = finish_plans(model, result, options);
  ASSERT_FALSE(plans.empty());
  for (const Plan& plan : plans) {
    EXPECT_EQ(plan.global_batch % plan.micro_batch_size, 0) << "B " << plan.micro_batch_size;
    EXPECT_EQ(plan.micro_batch_size * plan.num_micro_batches, plan.global_batch);
    EXPECT_NO_THROW(check_plan_against(plan, p.model, p.cluster, p.seq_len(), "plan"));
  }
}

// Sets on nodes of 3 and 4 GPUs (MI300X 8 x 3, A800 1 x 8, H20 7 x 4: GPT-3
// 350M): the answer puts its H20 stages' idle MI300Xs to work as sets, each
// inside one node or on whole nodes, as a stage of its own GPUs lies; sets
// of GPUs 2..3 on nodes of 3 had been placed (and launched as two node
// ranks on each node).
TEST(MixedStages, ASetLiesInsideOneNodeOrOnWholeNodes) {
  Problem p;
  p.model = catalog_model("gpt3-350m");
  p.cluster.name = "odd-nodes";
  NodeGroup mi = make_node_group(catalog_device("mi300x"), 8, 3), a800 = make_node_group(catalog_device("a800"), 1, 8),
            h20 = make_node_group(catalog_device("h20"), 7, 4);
  p.cluster.groups = {mi, a800, h20};
  p.cluster.inter_group_GBps = 12.5;
  p.cluster.inter_group_latency_us = 20;
  const CostModel model(p);
  SearchOptions options;
  options.threads = 2;
  const SearchResult result = run_search(p, options);
  ASSERT_FALSE(result.top.empty());
  const std::vector<Plan> plans = finish_plans(model, result, options);
  ASSERT_FALSE(plans.empty());
  int sets = 0;
  for (const StagePlan& s : plans.front().stages)
    for (const ReplicaSet& r : s.replicas) {
      ++sets;
      const int per_node = p.cluster.groups.at(r.group).gpus_per_node;
      EXPECT_TRUE(own_gpus_placement_allowed(r.first_gpu, r.gpus, per_node))
          << r.device << " GPUs " << r.first_gpu << ".." << r.first_gpu + r.gpus - 1;
    }
  EXPECT_GT(sets, 0) << "the answer mixes devices in its stages";
  EXPECT_NO_THROW(check_plan_against(plans.front(), p.model, p.cluster, p.seq_len(), "plan"));
}

// A stage of one GPU with its node's other GPU joined as a replica set is
// the stage of both GPUs with dp 2: the answer gives it as that stage (as
// the search's own space holds it), at the hand-built plan's time, so a
// top-K list cannot hold it twice (a100-80gb:1x2 beside
// a100-80gb+a100-80gb:1x(1+1), both 2.7761 s, on GPT-3 1.3B).
TEST(MixedStages, ARunOfOneGroupsGpusIsItsPlainStage) {
  Problem p = one_group("gpt3-1.3b", "a100-80gb", 1, 2, 32, {1, 4});
  p.training.recompute_modes = {Recompute::full};
  p.training.zero = 3;
  const CostModel model(p);
  Plan one = one_stage_plan(p, 4, make_stage(0, "a100-80gb", 0, 1, 1, 0, p.model.layers, Recompute::full));
  one.predicted = model.estimate(one);
  ASSERT_TRUE(one.predicted.fits);

  const Plan joined = add_idle_replica_sets(model, one);
  ASSERT_EQ(joined.stages.size(), 1u);
  const StagePlan& s = joined.stages[0];
  EXPECT_FALSE(s.has_replica_sets());
  EXPECT_EQ(s.first_gpu, 0);
  EXPECT_EQ(s.gpus, 2);
  EXPECT_EQ(s.dp, 2);
  Plan both = one;
  both.micro_batch_size = joined.micro_batch_size;
  both.num_micro_batches = 32 / both.micro_batch_size;
  both.vpp = joined.vpp;
  both.stages = {make_stage(0, "a100-80gb", 0, 1, 2, 0, p.model.layers, Recompute::full)};
  EXPECT_EQ(joined.predicted.iteration_time_s, model.estimate(both).iteration_time_s);
  EXPECT_LT(joined.predicted.iteration_time_s, one.predicted.iteration_time_s);
  EXPECT_NO_THROW(check_plan_against(joined, p.model, p.cluster, p.seq_len(), "plan"));
}

}  // namespace
}  // namespace autohaap
