// The stage rule (specs/parallel_rules.hpp): the first rule a stage's tp, cp
// and dp break, and that the search's pruning, the plan loader, the plan
// builder and the Megatron export all decide alike with it.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/megatron_export.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/plan_builder.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {
namespace {

// 32 query heads in 8 key/value groups (grouped-query attention), 4096 tokens.
ModelSpec gqa_model() {
  ModelSpec m = catalog_model("llama3-8b");
  m.heads = 32;
  m.kv_heads = 8;
  m.seq_len = 4096;
  return m;
}

NodeGroup group_of(int gpus_per_node, int nodes = 2) {
  NodeGroup g = make_node_group(catalog_device("a100-80gb"), nodes, gpus_per_node);
  g.name = "a100s";
  return g;
}

std::optional<StageRule> rule_of(const ModelSpec& m, const NodeGroup* g, int tp, int cp, int dp, int micro_batch) {
  return broken_stage_rule(m, m.seq_len, false, g, StageDegrees{tp, cp, dp}, micro_batch);
}

TEST(StageRule, EachRuleAndItsField) {
  const ModelSpec m = gqa_model();
  const NodeGroup eight = group_of(8);
  EXPECT_EQ(rule_of(m, &eight, 4, 2, 2, 4), std::nullopt);
  EXPECT_EQ(rule_of(m, &eight, 16, 1, 1, 1), StageRule::tp_exceeds_node);
  EXPECT_EQ(rule_of(m, &eight, 3, 1, 1, 1), StageRule::tp_exceeds_node);
  EXPECT_EQ(rule_of(m, nullptr, 16, 1, 1, 1), StageRule::tp_not_dividing_heads);  // 8 key/value heads
  EXPECT_EQ(rule_of(m, &eight, 2, 3, 1, 1), StageRule::cp_not_splitting_sequence);  // 6 does not divide 4096
  EXPECT_EQ(rule_of(m, &eight, 2, 1, 4, 2), StageRule::dp_not_dividing_micro_batch);
  EXPECT_STREQ(stage_field(StageRule::tp_exceeds_node), "tp");
  EXPECT_STREQ(stage_field(StageRule::tp_not_dividing_heads), "tp");
  EXPECT_STREQ(stage_field(StageRule::cp_not_splitting_sequence), "cp");
  EXPECT_STREQ(stage_field(StageRule::dp_not_dividing_micro_batch), "dp");
  EXPECT_EQ(stage_field_value(StageRule::cp_not_splitting_sequence, StageDegrees{2, 3, 1}), 3);
  EXPECT_EQ(stage_field_value(StageRule::dp_not_dividing_micro_batch, StageDegrees{2, 3, 5}), 5);
}

TEST(StageRule, RulesAreCheckedInOrderAndTheNodeRuleNeedsAGroup) {
  const ModelSpec m = gqa_model();
  const NodeGroup six = group_of(6);
  // tp 3 breaks the node rule (on 8-GPU nodes) and the heads rule: the
  // node rule comes first, as the search counts it.
  const NodeGroup eight = group_of(8);
  EXPECT_EQ(rule_of(m, &eight, 3, 3, 3, 1), StageRule::tp_exceeds_node);
  EXPECT_EQ(rule_of(m, nullptr, 3, 3, 3, 1), StageRule::tp_not_dividing_heads);
  EXPECT_EQ(rule_of(m, &six, 2, 3, 3, 1), StageRule::cp_not_splitting_sequence);
  EXPECT_EQ(rule_of(m, &six, 2, 2, 3, 1), StageRule::dp_not_dividing_micro_batch);
}

TEST(StageRule, MessagesSayWhatIsAllowed) {
  const ModelSpec m = gqa_model();
  const NodeGroup eight = group_of(8);
  auto allowed = [&](const NodeGroup* g, int tp, int cp, int dp, int b) {
    const auto v = stage_violation(m, m.seq_len, false, g, StageDegrees{tp, cp, dp}, b);
    return v ? v->allowed : std::string("<none>");
  };
  EXPECT_EQ(allowed(&eight, 4, 1, 1, 1), "<none>");
  EXPECT_EQ(allowed(&eight, 16, 1, 1, 1),
            "a divisor of the 8 GPUs per node of group 'a100s' (tensor parallelism stays inside a node)");
  EXPECT_EQ(allowed(nullptr, 5, 1, 1, 1), "a divisor of the model's 32 attention heads");
  EXPECT_EQ(allowed(nullptr, 16, 1, 1, 1), "a divisor of the model's 8 key/value heads (kv_heads)");
  EXPECT_EQ(allowed(&eight, 2, 1, 3, 4), "a divisor of the micro-batch size (4)");
  EXPECT_EQ(allowed(&eight, 2, 3, 1, 1), context_parallel_violation(m, m.seq_len, 3));
  // Megatron's column-parallel MLP divides ffn_hidden over tp as well.
  ModelSpec odd_mlp = m;
  odd_mlp.ffn_hidden = 14334;  // 2 x 3 x 2389
  EXPECT_EQ(rule_of(odd_mlp, &eight, 2, 1, 1, 1), std::nullopt);
  EXPECT_EQ(rule_of(odd_mlp, &eight, 4, 1, 1, 1), StageRule::tp_not_dividing_heads);
  EXPECT_EQ(stage_violation(odd_mlp, m.seq_len, false, &eight, StageDegrees{4, 1, 1}, 1)->allowed,
            "a divisor of the model's MLP width (ffn_hidden 14334)");
  ModelSpec generic = m;
  generic.family = ModelFamily::generic;
  EXPECT_EQ(stage_violation(generic, 16, false, &eight, StageDegrees{2, 1, 1}, 1)->allowed,
            "1 (generic layers are not tensor-parallel)");
}

// One stage of `tp` x `dp` GPUs, built by make_uniform_plan when it can be.
struct Decisions {
  bool built = false;       // the plan builder (estimate --tp ...) accepts it
  bool loaded = false;      // check_plan_against accepts the built plan
  bool searched = false;    // the search's pruning keeps the layout
  std::string refused_key;  // the builder's key when it refuses
};

Decisions decide(const Problem& problem, int tp, int dp) {
  Decisions d;
  UniformPlanRequest req;
  req.tp = tp, req.dp = dp, req.pp = 1, req.micro_batch_per_replica = 1;
  UniformPlanResult built = build_uniform_plan(problem, req);
  d.built = built.plan.has_value();
  if (built.refused) d.refused_key = built.refused->key();
  Plan plan = d.built ? *built.plan : Plan{};
  if (!d.built) {
    // The plan the builder would have written, to ask the loader alone.
    plan.model = problem.model.name;
    plan.cluster = problem.cluster.name;
    plan.global_batch = problem.training.global_batch;
    plan.micro_batch_size = dp;
    plan.num_micro_batches = problem.training.global_batch / dp;
    StagePlan s;
    s.device = problem.cluster.groups[0].device.name;
    s.gpus = tp * dp, s.tp = tp, s.dp = dp, s.layer_begin = 0, s.layer_end = problem.model.layers;
    plan.stages = {s};
  }
  try {
    check_plan_against(plan, problem, "plan.yaml");
    d.loaded = true;
  } catch (const InputError&) {
    d.loaded = false;
  }
  const int gpus = problem.cluster.groups[0].gpus();
  d.searched = !layout_rule(problem, GroupLayout{0, gpus / (tp * dp), tp * dp, tp, dp}, dp).has_value();
  return d;
}

TEST(StageRule, BuilderLoaderAndSearchAgreeOnEveryTp) {
  // Before one rule, the builder checked the query heads but not the
  // key/value heads: it built tp 16 plans for a model of 8 key/value
  // groups that the loader then refused.
  for (const int per_node : {6, 8, 16}) {
    Problem problem{gqa_model(), ClusterSpec{}, TrainingSpec{}, {}};
    problem.cluster.name = "one-group";
    problem.cluster.groups = {group_of(per_node, 2)};
    problem.training.global_batch = 96;
    for (int tp = 1; tp <= per_node; ++tp) {
      for (int dp = 1; tp * dp <= 2 * per_node; ++dp) {
        if ((2 * per_node) % (tp * dp) != 0) continue;
        if (problem.training.global_batch % dp != 0) continue;
        const Decisions d = decide(problem, tp, dp);
        SCOPED_TRACE("gpus_per_node " + std::to_string(per_node) + ", tp " + std::to_string(tp) + ", dp " +
                     std::to_string(dp));
        EXPECT_EQ(d.built, d.loaded);
        EXPECT_EQ(d.built, d.searched);
        const bool tp_ok = per_node % tp == 0 && 32 % tp == 0 && 8 % tp == 0;
        EXPECT_EQ(d.built, tp_ok);
        if (!d.built) EXPECT_EQ(d.refused_key, "--tp");
      }
    }
  }
}

// Sequence parallelism reduce-scatters a layer's activations along the
// sequence over the tp ranks, and Megatron-LM asserts the split is even
// (tensor_parallel/mappings.py); a 4100-token sequence splits over tp 1, 2
// and 4, not 8. Without sequence parallelism tp 8 runs. Builder (estimate
// --tp), loader and search agree, by the one rule.
TEST(StageRule, SequenceParallelTpSplitsTheSequence) {
  Problem problem{gqa_model(), ClusterSpec{}, TrainingSpec{}, {}};
  problem.model.seq_len = 4100;
  problem.cluster.name = "one-group";
  problem.cluster.groups = {group_of(8, 1)};
  problem.training.global_batch = 8;
  problem.training.sequence_parallel = true;
  for (const int tp : {1, 2, 4, 8}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const Decisions d = decide(problem, tp, 1);
    EXPECT_EQ(d.built, tp <= 4);
    EXPECT_EQ(d.loaded, d.built);
    EXPECT_EQ(d.searched, d.built);
    if (!d.built) EXPECT_EQ(d.refused_key, "--tp");
  }
  const auto v = stage_violation(problem.model, 4100, true, nullptr, StageDegrees{8, 1, 1}, 1);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, StageRule::tp_not_splitting_sequence);
  EXPECT_EQ(v->allowed,
            "a tp dividing the 4100 tokens of a sequence (sequence parallelism splits them over the tp ranks), or "
            "sequence_parallel: false");
  // Under cp 2 a tp group splits a cp rank's 2050 tokens: tp 2, not 4.
  EXPECT_EQ(broken_stage_rule(problem.model, 4100, true, nullptr, StageDegrees{2, 2, 1}, 1), std::nullopt);
  EXPECT_EQ(broken_stage_rule(problem.model, 4100, true, nullptr, StageDegrees{4, 2, 1}, 1),
            StageRule::tp_not_splitting_sequence);
  EXPECT_EQ(stage_violation(problem.model, 4100, true, nullptr, StageDegrees{4, 2, 1}, 1)->allowed,
            "a tp dividing the 2050 tokens of a sequence a cp rank holds (sequence parallelism splits them over the "
            "tp ranks), or sequence_parallel: false");
  // A sequence cp does not split (4100 over 3) is the cp rule's to name.
  EXPECT_EQ(broken_stage_rule(problem.model, 4100, true, nullptr, StageDegrees{2, 3, 1}, 1),
            StageRule::cp_not_splitting_sequence);
  problem.training.sequence_parallel = false;
  const Decisions off = decide(problem, 8, 1);
  EXPECT_TRUE(off.built && off.loaded && off.searched);
}

TEST(StageRule, BuilderRefusesATpThatSplitsKeyValueHeadsUnevenly) {
  Problem problem{gqa_model(), ClusterSpec{}, TrainingSpec{}, {}};
  problem.model.kv_heads = 2;
  problem.cluster.name = "one-node";
  problem.cluster.groups = {group_of(8, 1)};
  UniformPlanRequest req;
  req.tp = 4;
  try {
    make_uniform_plan(problem, req);
    FAIL() << "tp 4 over 2 key/value heads was built";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "--tp");
    EXPECT_EQ(e.value(), "4");
    EXPECT_EQ(e.allowed(), "a divisor of the model's 2 key/value heads (kv_heads)");
  }
}

TEST(StageRule, NearestMegatronPlanTriesEveryTpTheRuleAllows) {
  // Nodes of 6 GPUs of 40 GB and a model whose layer (about 7.2 billion
  // parameters) fits only with tp 6: the export once tried powers of two
  // (1, 2, 4 -> 1, 2 here) and found nothing; every divisor finds tp 6.
  Problem problem{catalog_model("gpt3-175b"), ClusterSpec{}, TrainingSpec{}, {}};
  problem.model.layers = 2;
  problem.model.hidden = 24576;
  problem.model.ffn_hidden = 4 * 24576;
  problem.model.heads = 48;
  problem.model.kv_heads = 48;
  problem.cluster.name = "six-per-node";
  problem.cluster.groups = {make_node_group(catalog_device("a100-40gb"), 2, 6)};
  problem.training.global_batch = 8;
  // 2048 tokens do not split over 6 ranks: sequence parallelism off.
  problem.training.sequence_parallel = false;
  UniformPlanRequest req;
  req.tp = 6, req.pp = 2;
  Plan plan = make_uniform_plan(problem, req);
  const CostModel cost(problem);
  plan.predicted = cost.estimate(plan);
  ASSERT_TRUE(plan.predicted.fits);
  const auto nearest = nearest_megatron_plan(problem, plan);
  ASSERT_TRUE(nearest);
  EXPECT_EQ(nearest->plan.stages.front().tp, 6);
  EXPECT_NO_THROW(check_plan_against(nearest->plan, problem, "nearest"));
  // No plan with a power-of-two tp of at most 2 fits.
  for (int tp : {1, 2}) {
    for (int pp = 1; pp <= 2; ++pp) {
      UniformPlanRequest small;
      small.tp = tp, small.pp = pp, small.recompute = Recompute::full;
      const UniformPlanResult built = build_uniform_plan(problem, small);
      ASSERT_TRUE(built.plan);
      EXPECT_FALSE(cost.estimate(*built.plan).fits) << "tp " << tp << ", pp " << pp;
    }
  }
}

}  // namespace
}  // namespace autohaap
