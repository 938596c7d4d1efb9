// Megatron-LM export: arguments of plans Megatron-LM can run, the reasons
// for plans it cannot, and the nearest plan it can.
#include <gtest/gtest.h>

#include <algorithm>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/hostfile.hpp"
#include "autohaap/io/megatron_export.hpp"
#include "autohaap/io/megatron_layout.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/plan_builder.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {
namespace {

using Args = std::vector<std::pair<std::string, std::string>>;

Problem problem(const std::string& model, const std::string& cluster) {
  return Problem{catalog_model(model), catalog_cluster(cluster), TrainingSpec{}, {}};
}

Plan uniform(const Problem& pb, int tp, int pp, int dp, int b, Recompute r = Recompute::none) {
  UniformPlanRequest req;
  req.tp = tp, req.pp = pp, req.dp = dp, req.micro_batch_per_replica = b, req.recompute = r;
  return make_uniform_plan(pb, req);
}

// The value of `flag`, "" for a switch, or "<absent>".
std::string value(const Args& args, const std::string& flag) {
  for (const auto& [f, v] : args) {
    if (f == flag) return v;
  }
  return "<absent>";
}

// Moves layers so stage i holds counts[i].
void split(Plan& plan, const std::vector<int>& counts) {
  int begin = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    plan.stages[i].layer_begin = begin;
    plan.stages[i].layer_end = begin += counts[i];
  }
}

TEST(MegatronExport, UniformPlanGivesItsArguments) {
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  const Plan plan = uniform(pb, 2, 4, 2, 2);
  EXPECT_TRUE(megatron_blockers(plan, pb).empty());
  const Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--tensor-model-parallel-size"), "2");
  EXPECT_EQ(value(a, "--pipeline-model-parallel-size"), "4");
  EXPECT_EQ(value(a, "--micro-batch-size"), "2");  // per replica: B = 4 over dp 2
  EXPECT_EQ(value(a, "--global-batch-size"), "512");
  EXPECT_EQ(value(a, "--num-layers"), "24");
  EXPECT_EQ(value(a, "--hidden-size"), "2048");
  EXPECT_EQ(value(a, "--ffn-hidden-size"), "8192");
  EXPECT_EQ(value(a, "--num-attention-heads"), "16");
  EXPECT_EQ(value(a, "--seq-length"), "2048");
  EXPECT_EQ(value(a, "--sequence-parallel"), "");
  EXPECT_EQ(value(a, "--use-distributed-optimizer"), "");  // ZeRO-1 by default
  EXPECT_EQ(value(a, "--bf16"), "");
  EXPECT_EQ(value(a, "--recompute-granularity"), "<absent>");
  EXPECT_EQ(value(a, "--decoder-first-pipeline-num-layers"), "<absent>");
  EXPECT_EQ(value(a, "--group-query-attention"), "<absent>");
  // GPT trains with dropout, Megatron's default.
  EXPECT_EQ(value(a, "--attention-dropout"), "<absent>");

  const std::string text = format_megatron_arguments(plan, pb);
  EXPECT_NE(text.find("--tensor-model-parallel-size 2 \\\n"), std::string::npos);
  EXPECT_NE(text.find("4 stages x (tp 2 x dp 2) = 16 GPUs of a100-40gb"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.substr(text.rfind('\n', text.size() - 2)).find("--optimizer adam\n"), std::string::npos);
}

TEST(MegatronExport, LlamaAndRecomputeFlags) {
  const Problem pb = problem("llama3-8b", "a100x8");
  const Plan full = uniform(pb, 4, 2, 1, 1, Recompute::full);
  ASSERT_TRUE(megatron_blockers(full, pb).empty());
  const Args a = megatron_arguments(full, pb);
  EXPECT_EQ(value(a, "--group-query-attention"), "");
  EXPECT_EQ(value(a, "--num-query-groups"), "8");
  EXPECT_EQ(value(a, "--position-embedding-type"), "rope");
  EXPECT_EQ(value(a, "--swiglu"), "");
  EXPECT_EQ(value(a, "--normalization"), "RMSNorm");
  EXPECT_EQ(value(a, "--untie-embeddings-and-output-weights"), "");
  // Llama trains without dropout, as the plan was costed; Megatron's
  // defaults (0.1) would add its masks.
  EXPECT_EQ(value(a, "--attention-dropout"), "0.0");
  EXPECT_EQ(value(a, "--hidden-dropout"), "0.0");
  EXPECT_EQ(value(a, "--recompute-granularity"), "full");
  EXPECT_EQ(value(a, "--recompute-method"), "uniform");
  EXPECT_EQ(value(a, "--recompute-num-layers"), "1");
  const Args sel = megatron_arguments(uniform(pb, 4, 2, 1, 1, Recompute::selective), pb);
  EXPECT_EQ(value(sel, "--recompute-granularity"), "selective");
  EXPECT_EQ(value(sel, "--recompute-method"), "<absent>");
  EXPECT_EQ(value(a, "--optimizer"), "adam");
  EXPECT_EQ(value(a, "--use-bnb-optimizer"), "<absent>");
  // 8-bit Adam is Megatron-DeepSpeed's bitsandbytes flag: stock
  // Megatron-LM's --optimizer has none, and its parser stops at an unknown
  // flag, so the export is refused whatever the layout.
  Problem eight = pb;
  eight.training.optimizer = Optimizer::adam8bit;
  EXPECT_FALSE(megatron_training_blocker(eight, 0).empty());
  const std::vector<std::string> why = megatron_blockers(full, eight);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("adam8bit"), std::string::npos);
  EXPECT_TRUE(megatron_training_blocker(pb, 1).empty());
  // SGD runs without the distributed optimizer only (zero 0).
  Problem sgd = pb;
  sgd.training.optimizer = Optimizer::sgd;
  EXPECT_TRUE(megatron_training_blocker(sgd, 0).empty());
  EXPECT_NE(megatron_training_blocker(sgd, 1).find("DistributedOptimizer"), std::string::npos);
}

// The gradients' reduce type and the loss as costed: Megatron-LM reduces
// bf16 training's gradients in fp32 unless --grad-reduce-in-bf16, fp16
// training's in fp16 unless --accumulate-allreduce-grads-in-fp32, and
// fuses the cross-entropy only with --cross-entropy-loss-fusion (the
// exports of each pair had been identical, the plans costed apart).
TEST(MegatronExport, GradientReduceTypeAndLossFusionAsCosted) {
  Problem pb = problem("llama3-8b", "a100x8");
  const Plan plan = uniform(pb, 2, 2, 2, 1);
  EXPECT_EQ(value(megatron_arguments(plan, pb), "--grad-reduce-in-bf16"), "<absent>");
  EXPECT_EQ(value(megatron_arguments(plan, pb), "--cross-entropy-loss-fusion"), "<absent>");
  pb.training.grad_reduce_dtype = Precision::bf16;
  pb.training.fused_cross_entropy = true;
  EXPECT_EQ(value(megatron_arguments(plan, pb), "--grad-reduce-in-bf16"), "");
  EXPECT_EQ(value(megatron_arguments(plan, pb), "--cross-entropy-loss-fusion"), "");
  pb.training.precision = Precision::fp16;
  pb.training.grad_reduce_dtype = Precision::fp32;
  EXPECT_EQ(value(megatron_arguments(plan, pb), "--accumulate-allreduce-grads-in-fp32"), "");
  pb.training.grad_reduce_dtype.reset();  // fp16's own: Megatron's default
  EXPECT_EQ(value(megatron_arguments(plan, pb), "--accumulate-allreduce-grads-in-fp32"), "<absent>");
  // A type Megatron-LM does not reduce in, and a model it has no flag for.
  pb.training.grad_reduce_dtype = Precision::bf16;
  ASSERT_EQ(megatron_blockers(plan, pb).size(), 1u);
  EXPECT_NE(megatron_blockers(plan, pb)[0].find("gradients reduced in bf16 under fp16 training"), std::string::npos);
  pb.training.grad_reduce_dtype.reset();
  // A plan costed under another runtime runs on Megatron-LM, not as costed:
  // its arguments say so.
  const std::string said = "# costed under runtime deepspeed";
  EXPECT_EQ(format_megatron_arguments(plan, pb).find(said), std::string::npos);
  pb.training.runtime = Runtime::deepspeed;
  EXPECT_NE(format_megatron_arguments(plan, pb).find(said), std::string::npos);
  pb.training.runtime = Runtime::megatron;
  pb.model.embedding_norm = true;
  ASSERT_EQ(megatron_blockers(plan, pb).size(), 1u);
  EXPECT_NE(megatron_blockers(plan, pb)[0].find("embedding_norm"), std::string::npos);
}

TEST(MegatronExport, UnevenEdgeStagesUseDecoderFirstAndLast) {
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 1, 4, 2, 1);
  split(plan, {5, 6, 6, 7});
  ASSERT_TRUE(megatron_blockers(plan, pb).empty());
  Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--decoder-first-pipeline-num-layers"), "5");
  EXPECT_EQ(value(a, "--decoder-last-pipeline-num-layers"), "7");

  split(plan, {6, 6, 6, 6});
  a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--decoder-first-pipeline-num-layers"), "<absent>");
  EXPECT_EQ(value(a, "--decoder-last-pipeline-num-layers"), "<absent>");

  Plan two = uniform(pb, 1, 2, 2, 1);
  split(two, {10, 14});
  a = megatron_arguments(two, pb);
  EXPECT_EQ(value(a, "--decoder-first-pipeline-num-layers"), "10");  // the rest goes to the last stage
  EXPECT_EQ(value(a, "--decoder-last-pipeline-num-layers"), "<absent>");
}

TEST(MegatronExport, UnevenMiddleStagesWriteTheLayout) {
  // Megatron-Core's --pipeline-model-parallel-layout takes any split; the
  // edge-stage flags are not given beside it (Megatron refuses the mix).
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 1, 4, 2, 1);
  split(plan, {6, 5, 7, 6});
  ASSERT_TRUE(megatron_blockers(plan, pb).empty());
  const Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--pipeline-model-parallel-layout"), "\"Et*6|t*5|t*7|t*6L\"");
  EXPECT_EQ(value(a, "--decoder-first-pipeline-num-layers"), "<absent>");
  EXPECT_EQ(value(a, "--decoder-last-pipeline-num-layers"), "<absent>");
  EXPECT_EQ(parse_megatron_layout("Et*6|t*5|t*7|t*6L", 4).stage_layers(), (std::vector<int>{6, 5, 7, 6}));
}

TEST(MegatronExport, AStageOfTheEmbeddingOrTheOutputLayerAloneWritesTheLayout) {
  // A first stage of no transformer layer holds the embedding alone ("E"),
  // a last one the output layer alone ("L"); a middle one would hold
  // nothing, which Megatron-LM cannot run.
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 1, 4, 2, 1);
  split(plan, {0, 12, 12, 0});
  ASSERT_NO_THROW(check_plan_against(plan, pb.model, pb.cluster, pb.seq_len(), "test"));
  ASSERT_TRUE(megatron_blockers(plan, pb).empty());
  const Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--pipeline-model-parallel-layout"), "\"E|t*12|t*12|L\"");
  EXPECT_EQ(value(a, "--decoder-first-pipeline-num-layers"), "<absent>");
  EXPECT_EQ(parse_megatron_layout("E|t*12|t*12|L", 4).stage_layers(), (std::vector<int>{0, 12, 12, 0}));

  split(plan, {12, 0, 6, 6});
  ASSERT_NO_THROW(check_plan_against(plan, pb.model, pb.cluster, pb.seq_len(), "test"));
  const auto why = megatron_blockers(plan, pb);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("stage 1 holds no transformer layer"), std::string::npos) << why[0];
}

TEST(MegatronExport, HeterogeneousPlanListsEveryDifference) {
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 2, 3, 2, 1);
  plan.stages[0].tp = 4, plan.stages[0].gpus = 8, plan.stages[0].dp = 2;  // GPUs 0-7
  plan.stages[1].first_gpu = 8, plan.stages[1].tp = 2, plan.stages[1].dp = 4, plan.stages[1].gpus = 8;
  plan.stages[1].recompute = Recompute::selective;
  plan.stages[2].group = 1, plan.stages[2].device = "v100-32gb", plan.stages[2].first_gpu = 0;
  plan.stages[2].tp = 4, plan.stages[2].dp = 4, plan.stages[2].gpus = 16;
  plan.micro_batch_size = 8, plan.num_micro_batches = 64;
  check_plan_against(plan, pb.model, pb.cluster, pb.seq_len(), "test");
  // The device types may differ (the launcher places the stages); tp, dp
  // and the recompute mode may not.
  const auto why = megatron_blockers(plan, pb);
  ASSERT_EQ(why.size(), 3u);
  EXPECT_NE(why[0].find("tp 4 (stages 0, 2), tp 2 (stage 1)"), std::string::npos) << why[0];
  EXPECT_NE(why[1].find("dp 2 (stage 0), dp 4 (stages 1–2)"), std::string::npos) << why[1];
  EXPECT_NE(why[2].find("none (stages 0, 2), selective (stage 1)"), std::string::npos) << why[2];
}

TEST(MegatronExport, ZeroBeyondOneAndGenericModelsAreNotExpressible) {
  Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 2, 4, 2, 2);
  plan.zero = 3;
  const auto why = megatron_blockers(plan, pb);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("ZeRO stage 3 shards gradients and weights"), std::string::npos);

  pb.model.family = ModelFamily::generic;
  plan.zero = 1;
  EXPECT_EQ(megatron_blockers(plan, pb).size(), 1u);
  EXPECT_FALSE(nearest_megatron_plan(pb, plan));
}

TEST(MegatronExport, DevicesWithoutBf16GetFp16) {
  Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 2, 1, 8, 1);
  plan.stages[0].group = 1, plan.stages[0].device = "v100-32gb";
  ASSERT_FALSE(pb.cluster.groups[1].device.has_bf16);
  const Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--fp16"), "");
  EXPECT_EQ(value(a, "--bf16"), "<absent>");
  EXPECT_NE(format_megatron_arguments(plan, pb).find("# no BF16 on v100-32gb (stage 0): every rank trains in FP16"),
            std::string::npos);
}

TEST(MegatronExport, NearestPlanIsExpressibleAndUsesNoMoreGpus) {
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 2, 3, 2, 1);
  plan.stages[2].group = 1, plan.stages[2].device = "v100-32gb", plan.stages[2].first_gpu = 0;
  plan.stages[2].tp = 4, plan.stages[2].gpus = 8;
  const auto nearest = nearest_megatron_plan(pb, plan);
  ASSERT_TRUE(nearest);
  EXPECT_TRUE(megatron_blockers(nearest->plan, nearest->problem).empty());
  const int budget = 8;  // the plan uses 8 A100s and 8 V100s
  EXPECT_LE(nearest->plan.num_gpus(), budget);
  EXPECT_GT(2 * nearest->plan.num_gpus(), budget);
  EXPECT_TRUE(nearest->plan.predicted.fits);
  EXPECT_GT(nearest->plan.predicted.iteration_time_s, 0);
  EXPECT_NO_THROW(check_plan_against(nearest->plan, pb.model, pb.cluster, pb.seq_len(), "nearest"));
}

TEST(MegatronExport, NearestOfAnExpressiblePlanIsNoSlower) {
  // The plan itself is one of the candidates.
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  const Plan plan = uniform(pb, 2, 4, 2, 2);
  const CostModel model(pb);
  const auto nearest = nearest_megatron_plan(pb, plan);
  ASSERT_TRUE(nearest);
  EXPECT_LE(nearest->plan.predicted.iteration_time_s, model.estimate(plan).iteration_time_s * (1 + 1e-12));
  EXPECT_EQ(nearest->plan.stages.front().device, "a100-40gb");
}

// ------------------------------------------------- stages on different GPUs

// llama3-8b on mixed-h100-a100 (2 x 8 H100, 4 x 8 A100): tp 4 x dp 2 on
// every stage, two H100 stages then two A100 stages on the A100 group's
// nodes 1 and 2, the faster GPUs holding more layers, the middle uneven.
Plan h100_then_a100(const Problem& pb) {
  Plan plan = uniform(pb, 4, 4, 2, 1);
  const int firsts[4] = {0, 8, 8, 16};
  for (int i = 0; i < 4; ++i) {
    StagePlan& s = plan.stages[i];
    s.group = i < 2 ? 0 : 1;
    s.device = pb.cluster.groups[s.group].device.name;
    s.first_gpu = firsts[i];
  }
  split(plan, {9, 10, 7, 6});
  check_plan_against(plan, pb.model, pb.cluster, pb.seq_len(), "test");
  return plan;
}

// Megatron-LM's rank order (tensor-parallel fastest, then context-parallel,
// then data-parallel, then pipeline) applied to a node-by-node launch in
// node_order: node k starts at the ranks of the nodes before it. Every rank
// must land on a node of its stage's device group, and on the GPU the
// hostfile gives it.
void expect_launch_puts_stages_on_their_groups(const Plan& plan, const ClusterSpec& cluster) {
  const StagePlan& s0 = plan.stages.front();
  const int tp = s0.tp, cp = s0.cp, dp = s0.dp;
  const std::vector<HostSlot> slots = host_slots(plan, cluster);
  const std::vector<NodeLaunch> nodes = node_order(plan, cluster);
  int next_rank = 0;  // what torchrun --node-rank k hands out: the ranks after nodes 0..k-1
  for (const NodeLaunch& n : nodes) {
    EXPECT_EQ(n.first_rank, next_rank) << n.node;
    const int local = static_cast<int>(n.local_gpus.size());
    EXPECT_EQ(n.last_rank, next_rank + local - 1) << n.node;
    for (int j = 0; j < local; ++j) {
      const int rank = next_rank + j;
      const int tp_rank = rank % tp, cp_rank = rank / tp % cp, dp_rank = rank / (tp * cp) % dp;
      const int pp_rank = rank / (tp * cp * dp);
      const StagePlan& stage = plan.stages.at(pp_rank);
      EXPECT_EQ(cluster.groups.at(stage.group).device.name, n.device) << "rank " << rank << " on " << n.node;
      EXPECT_EQ(n.group, slots[rank].group);
      EXPECT_EQ(n.node, slots[rank].node);
      EXPECT_EQ(n.local_gpus[j], slots[rank].local_gpu);
      EXPECT_EQ(slots[rank].stage, pp_rank);
      EXPECT_EQ(slots[rank].tp_rank, tp_rank);
      EXPECT_EQ(slots[rank].cp_rank, cp_rank);
      EXPECT_EQ(slots[rank].dp_rank, dp_rank);
      // The stage's GPUs [first_gpu, first_gpu + gpus) of its group hold it.
      const int gpn = cluster.groups.at(stage.group).gpus_per_node;
      const int gpu = n.node_index * gpn + n.local_gpus[j];
      EXPECT_GE(gpu, stage.first_gpu);
      EXPECT_LT(gpu, stage.first_gpu + stage.gpus);
    }
    next_rank += local;
  }
  EXPECT_EQ(next_rank, plan.num_gpus());
}

TEST(MegatronMixedDevices, OneTpAndDpOverH100AndA100Exports) {
  const Problem pb = problem("llama3-8b", "mixed-h100-a100");
  const Plan plan = h100_then_a100(pb);
  EXPECT_TRUE(megatron_blockers(plan, pb).empty());
  const Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--tensor-model-parallel-size"), "4");
  EXPECT_EQ(value(a, "--pipeline-model-parallel-size"), "4");
  EXPECT_EQ(value(a, "--micro-batch-size"), "1");
  EXPECT_EQ(value(a, "--bf16"), "");  // both have BF16
  const std::string layout = value(a, "--pipeline-model-parallel-layout");
  EXPECT_EQ(layout, "\"Et*9|t*10|t*7|t*6L\"");
  const MegatronLayout parsed = parse_megatron_layout(layout.substr(1, layout.size() - 2), 4);
  EXPECT_EQ(parsed.vpp, 1);
  EXPECT_EQ(parsed.stage_layers(), (std::vector<int>{9, 10, 7, 6}));

  const std::string text = format_megatron_arguments(plan, pb);
  EXPECT_NE(text.find("= 32 GPUs on h100-sxm (stages 0–1), a100-80gb (stages 2–3)"), std::string::npos) << text;
  EXPECT_NE(text.find("in the order of `autohaap export PLAN --to nodelist`"), std::string::npos) << text;

  // Launch order: the H100 nodes 0 and 1, then the A100 nodes 1 and 2.
  const std::vector<NodeLaunch> nodes = node_order(plan, pb.cluster);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].node, "h100-sxm-node0");
  EXPECT_EQ(nodes[1].node, "h100-sxm-node1");
  EXPECT_EQ(nodes[2].node, "a100-80gb-node1");
  EXPECT_EQ(nodes[2].node_index, 1);
  EXPECT_EQ(nodes[3].node, "a100-80gb-node2");
  EXPECT_EQ(nodes[3].stages, (std::vector<int>{3}));
  EXPECT_EQ(nodes[3].first_rank, 24);
  expect_launch_puts_stages_on_their_groups(plan, pb.cluster);
  EXPECT_NE(format_nodelist(plan, pb.cluster)
                .find("a100-80gb-node1 a100-80gb a100-80gb    8 0,1,2,3,4,5,6,7 2              16         23\n"),
            std::string::npos)
      << format_nodelist(plan, pb.cluster);
}

TEST(MegatronMixedDevices, InterleavedLayoutParsesBackPerChunk) {
  const Problem pb = problem("llama3-8b", "mixed-h100-a100");
  Plan plan = h100_then_a100(pb);
  plan.vpp = 2;
  // Chunks: 9 -> 5+4, 10 -> 5+5, 7 -> 4+3, 6 -> 3+3; chunk 0 of every rank,
  // then chunk 1.
  const std::string layout = value(megatron_arguments(plan, pb), "--pipeline-model-parallel-layout");
  EXPECT_EQ(layout, "\"Et*5|t*5|t*4|t*3|t*4|t*5|t*3|t*3L\"");
  const MegatronLayout parsed = parse_megatron_layout(layout.substr(1, layout.size() - 2), 4);
  EXPECT_EQ(parsed.vpp, 2);
  EXPECT_EQ(parsed.layers, (std::vector<std::vector<int>>{{5, 4}, {5, 5}, {4, 3}, {3, 3}}));
}

TEST(MegatronMixedDevices, StatedChunksAreTheLayout) {
  // The plan's stated cut, chunk by chunk (9 -> 6+3, 10 -> 4+6, 7 -> 3+4,
  // 6 -> 2+4), not the even one.
  const Problem pb = problem("llama3-8b", "mixed-h100-a100");
  Plan plan = h100_then_a100(pb);
  plan.vpp = 2;
  const std::vector<std::vector<int>> cut{{6, 3}, {4, 6}, {3, 4}, {2, 4}};
  for (std::size_t i = 0; i < plan.stages.size(); ++i) plan.stages[i].chunks = cut[i];
  const std::string layout = value(megatron_arguments(plan, pb), "--pipeline-model-parallel-layout");
  EXPECT_EQ(layout, "\"Et*6|t*4|t*3|t*2|t*3|t*6|t*4|t*4L\"");
  EXPECT_EQ(parse_megatron_layout(layout.substr(1, layout.size() - 2), 4).layers, cut);
}

TEST(MegatronMixedDevices, StagesSpanningNodesLaunchOnTheirGroups) {
  // Nodes of 4 GPUs; tp 2 x dp 4 = two nodes per stage; the A100 stages
  // start mid-group (GPU 4: nodes 1-2, GPU 12: nodes 3-4).
  Problem pb = problem("llama3-8b", "mixed-h100-a100");
  pb.cluster.groups = {make_node_group(catalog_device("h100-sxm"), 2, 4),
                       make_node_group(catalog_device("a100-80gb"), 5, 4)};
  Plan plan = uniform(pb, 2, 3, 4, 1);
  const int groups[3] = {0, 1, 1}, firsts[3] = {0, 4, 12};
  for (int i = 0; i < 3; ++i) {
    plan.stages[i].group = groups[i];
    plan.stages[i].device = pb.cluster.groups[groups[i]].device.name;
    plan.stages[i].first_gpu = firsts[i];
  }
  split(plan, {12, 10, 10});
  check_plan_against(plan, pb.model, pb.cluster, pb.seq_len(), "test");
  EXPECT_TRUE(megatron_blockers(plan, pb).empty());
  const Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--decoder-first-pipeline-num-layers"), "12");  // 20 left: 10 each
  EXPECT_EQ(value(a, "--pipeline-model-parallel-layout"), "<absent>");
  const std::vector<NodeLaunch> nodes = node_order(plan, pb.cluster);
  std::vector<std::string> names;
  for (const NodeLaunch& n : nodes) names.push_back(n.node);
  EXPECT_EQ(names, (std::vector<std::string>{"h100-sxm-node0", "h100-sxm-node1", "a100-80gb-node1",
                                             "a100-80gb-node2", "a100-80gb-node3", "a100-80gb-node4"}));
  expect_launch_puts_stages_on_their_groups(plan, pb.cluster);
}

TEST(MegatronMixedDevices, ANodeReturnedToIsLaunchedAgain) {
  // Stage 0 on GPUs 0-3 of A100 node 0, stage 1 on a V100 node, stage 2 on
  // GPUs 4-7 of A100 node 0: that node's ranks are 0-3 and 8-11, so it is
  // launched twice (node ranks 0 and 2).
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 2, 3, 2, 1);
  const int groups[3] = {0, 1, 0}, firsts[3] = {0, 0, 4};
  for (int i = 0; i < 3; ++i) {
    plan.stages[i].group = groups[i];
    plan.stages[i].device = pb.cluster.groups[groups[i]].device.name;
    plan.stages[i].first_gpu = firsts[i];
  }
  check_plan_against(plan, pb.model, pb.cluster, pb.seq_len(), "test");
  const std::vector<NodeLaunch> nodes = node_order(plan, pb.cluster);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].node, "a100-40gb-node0");
  EXPECT_EQ(nodes[1].node, "v100-32gb-node0");
  EXPECT_EQ(nodes[2].node, "a100-40gb-node0");
  EXPECT_EQ(nodes[2].local_gpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(nodes[2].first_rank, 8);
  expect_launch_puts_stages_on_their_groups(plan, pb.cluster);
}

TEST(MegatronMixedDevices, Fp8WithAnA100StageIsRefused) {
  Problem pb = problem("llama3-8b", "mixed-h100-a100");
  pb.training = catalog_training("llama3-h100-fp8-megatron");
  ASSERT_EQ(pb.training.precision, Precision::fp8);
  const Plan plan = h100_then_a100(pb);
  const auto why = megatron_blockers(plan, pb);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("FP8 on h100-sxm (stages 0–1), no FP8 on a100-80gb (stages 2–3)"), std::string::npos) << why[0];
  EXPECT_NE(why[0].find("train in bf16"), std::string::npos) << why[0];
  // bf16 training on the same plan runs.
  pb.training.precision = Precision::bf16;
  EXPECT_TRUE(megatron_blockers(plan, pb).empty());
  // Two FP8 device types together run fp8 alike.
  pb.training.precision = Precision::fp8;
  Problem two_fp8 = pb;
  two_fp8.cluster.groups[1] = make_node_group(catalog_device("h100-pcie"), 4, 8);
  Plan hopper = plan;
  for (StagePlan& s : hopper.stages) {
    if (s.group == 1) s.device = "h100-pcie";
  }
  check_plan_against(hopper, two_fp8.model, two_fp8.cluster, two_fp8.seq_len(), "test");
  EXPECT_TRUE(megatron_blockers(hopper, two_fp8).empty());
  EXPECT_EQ(value(megatron_arguments(hopper, two_fp8), "--fp8-format"), "hybrid");
  // fp8 training with no FP8 device at all runs in 16 bits, as estimated.
  Plan a100_only = plan;
  for (StagePlan& s : a100_only.stages) s.group = 1, s.device = "a100-80gb";
  const int firsts[4] = {0, 8, 16, 24};
  for (int i = 0; i < 4; ++i) a100_only.stages[i].first_gpu = firsts[i];
  EXPECT_TRUE(megatron_blockers(a100_only, pb).empty());
  EXPECT_EQ(value(megatron_arguments(a100_only, pb), "--fp8-format"), "<absent>");
  EXPECT_NE(format_megatron_arguments(a100_only, pb).find("# no FP8 on a100-80gb (stages 0–3): 16-bit GEMMs"),
            std::string::npos);
}

TEST(MegatronMixedDevices, MixedBf16AndFp16DevicesTrainInFp16) {
  // A V100 stage beside A100 stages: one precision flag for every rank.
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 2, 2, 4, 1);
  plan.stages[1].group = 1, plan.stages[1].device = "v100-32gb", plan.stages[1].first_gpu = 0;
  check_plan_against(plan, pb.model, pb.cluster, pb.seq_len(), "test");
  ASSERT_TRUE(megatron_blockers(plan, pb).empty());
  const Args a = megatron_arguments(plan, pb);
  EXPECT_EQ(value(a, "--fp16"), "");
  EXPECT_EQ(value(a, "--bf16"), "<absent>");
  EXPECT_NE(format_megatron_arguments(plan, pb).find("# no BF16 on v100-32gb (stage 1): every rank trains in FP16"),
            std::string::npos);
}

// ------------------------------------------------------------- layout text

TEST(MegatronLayout, WritesRunsCompactlyAndReadsThemBack) {
  EXPECT_EQ(format_megatron_layout({3, 5, 5, 5, 6}, 1), "Et*3|(t*5|)*3t*6L");
  EXPECT_EQ(format_megatron_layout({1, 2, 2, 1}, 1), "Et|t*2|t*2|tL");  // two equal segments stay written out
  EXPECT_EQ(format_megatron_layout({5}, 1), "Et*5L");
  EXPECT_EQ(parse_megatron_layout("Et*3|(t*5|)*3t*6L", 5).stage_layers(), (std::vector<int>{3, 5, 5, 5, 6}));
  // Round trips over splits and chunk counts: the chunks chunk_layers gives.
  const std::vector<std::vector<int>> splits = {{4, 4}, {1, 7, 3}, {8, 8, 8, 8, 8, 8, 8, 6}, {2, 3, 3, 3, 2}};
  for (const auto& stages : splits) {
    for (int vpp = 1; vpp <= 2; ++vpp) {
      const std::string text = format_megatron_layout(stages, vpp);
      const MegatronLayout back = parse_megatron_layout(text, static_cast<int>(stages.size()));
      ASSERT_EQ(back.vpp, vpp) << text;
      for (std::size_t i = 0; i < stages.size(); ++i) {
        for (int v = 0; v < vpp; ++v) EXPECT_EQ(back.layers[i][v], chunk_layers(stages[i], vpp, v)) << text;
      }
    }
  }
}

TEST(MegatronLayout, ReadsMegatronsGrammar) {
  // Groups may hold '|'; commas are cosmetic; six segments over three ranks
  // are two chunks each, segment k on rank k mod 3, chunk k div 3.
  const MegatronLayout l = parse_megatron_layout("E|(t|)*3,t*2|L", 3);
  EXPECT_EQ(l.vpp, 2);
  EXPECT_EQ(l.layers, (std::vector<std::vector<int>>{{0, 1}, {1, 2}, {1, 0}}));
  EXPECT_EQ(parse_megatron_layout("Et,t|t,tL", 2).stage_layers(), (std::vector<int>{2, 2}));
  EXPECT_EQ(parse_megatron_layout("Ettt|tttL", 1).layers, (std::vector<std::vector<int>>{{3, 3}}));
}

TEST(MegatronLayout, MalformedTextIsRefused) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "embedding E exactly once"},
      {"t*4|t*4L", "embedding E exactly once"},
      {"Et*4|t*4", "loss L exactly once"},
      {"EEt*2|tL", "embedding E as the first symbol"},
      {"Et*2|L|", "loss L as the last symbol"},
      {"Et*3|tL", "multiple of the pipeline size 3"},  // two segments, three ranks
      {"Et*|tL", "a count after '*'"},
      {"E*t|tL", "a count after '*'"},
      {"*2Et|tL", "a symbol before '*'"},
      {"E(t|*2tL", "a ')' closing every '('"},
      {"E((t|)*2)*2tL", "groups that do not nest"},
      {"E(t|)tL", "a count after every group"},
      {"E()*2t|tL", "a non-empty group"},
      {"E)t|tL", "')' only closing a group"},
      {"Et t|tL", "not ' '"},
      {"Etm|tL", "multi-token prediction"},
      {"Et*99999999999|tL", "a repeat count of at most"},
      {"E(t*1000|)*100000tL", "at most 1048576 symbols once expanded"},
  };
  for (const auto& [text, why] : bad) {
    const int pp = text == "Et*3|tL" ? 3 : 2;
    try {
      parse_megatron_layout(text, pp);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "--pipeline-model-parallel-layout");
      EXPECT_EQ(e.value(), text);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << text << ": " << e.what();
    }
  }
  EXPECT_THROW(parse_megatron_layout("EtL", 0), InputError);
}

TEST(UniformPlan, HugeFlagsAreRefusedByNameNotWrapped) {
  // tp x pp x dp and micro-batch x dp once wrapped in an int.
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  auto flag_of = [&](int tp, int pp, int dp, int b) {
    try {
      uniform(pb, tp, pp, dp, b);
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(flag_of(1, 1, 2147483647, 1), "--dp");
  EXPECT_EQ(flag_of(1, 1, 32, 2147483647), "--micro-batch");
  EXPECT_EQ(flag_of(2, 24, 32, 1), "--tp x --cp x --pp x --dp");
}

}  // namespace
}  // namespace autohaap
