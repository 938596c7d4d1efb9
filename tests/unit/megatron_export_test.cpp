// Megatron-LM export: arguments of plans Megatron-LM can run, the reasons
// for plans it cannot, and the nearest plan it can.
#include <gtest/gtest.h>

#include <algorithm>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/megatron_export.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/plan_builder.hpp"

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
  EXPECT_EQ(value(a, "--recompute-granularity"), "full");
  EXPECT_EQ(value(a, "--recompute-method"), "uniform");
  EXPECT_EQ(value(a, "--recompute-num-layers"), "1");
  const Args sel = megatron_arguments(uniform(pb, 4, 2, 1, 1, Recompute::selective), pb);
  EXPECT_EQ(value(sel, "--recompute-granularity"), "selective");
  EXPECT_EQ(value(sel, "--recompute-method"), "<absent>");
  EXPECT_EQ(value(a, "--optimizer"), "adam");
  EXPECT_EQ(value(a, "--use-bnb-optimizer"), "<absent>");
  // 8-bit Adam is Megatron-DeepSpeed's bitsandbytes flag on top of adam.
  Problem eight = pb;
  eight.training.optimizer = Optimizer::adam8bit;
  const Args e = megatron_arguments(full, eight);
  EXPECT_EQ(value(e, "--optimizer"), "adam");
  EXPECT_EQ(value(e, "--use-bnb-optimizer"), "");
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

TEST(MegatronExport, UnevenMiddleStagesAreNotExpressible) {
  const Problem pb = problem("gpt3-1.3b", "mixed-a100-v100");
  Plan plan = uniform(pb, 1, 4, 2, 1);
  split(plan, {6, 5, 7, 6});
  const auto why = megatron_blockers(plan, pb);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0].rfind("middle stages hold different layer counts: 5 layers (stage 1), 7 layers (stage 2)", 0),
            0u)
      << why[0];
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
  check_plan_against(plan, pb.model, pb.cluster, "test");
  const auto why = megatron_blockers(plan, pb);
  ASSERT_EQ(why.size(), 4u);
  EXPECT_NE(why[0].find("a100-40gb (stages 0–1), v100-32gb (stage 2)"), std::string::npos) << why[0];
  EXPECT_NE(why[1].find("tp 4 (stages 0, 2), tp 2 (stage 1)"), std::string::npos) << why[1];
  EXPECT_NE(why[2].find("dp 2 (stage 0), dp 4 (stages 1–2)"), std::string::npos) << why[2];
  EXPECT_NE(why[3].find("none (stages 0, 2), selective (stage 1)"), std::string::npos) << why[3];
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
  EXPECT_NE(format_megatron_arguments(plan, pb).find("v100-32gb has no BF16"), std::string::npos);
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
  EXPECT_NO_THROW(check_plan_against(nearest->plan, pb.model, pb.cluster, "nearest"));
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
