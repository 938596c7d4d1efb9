// Stages of replica sets (plan.hpp, ReplicaSet): the plan file's form, its
// checks, the cost of such a stage against its sets costed one by one, and
// the exports.
#include <gtest/gtest.h>

#include <string>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/launch_manifest.hpp"
#include "autohaap/io/megatron_export.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/plan_printer.hpp"
#include "autohaap/search/runtime_price.hpp"
#include "autohaap/units.hpp"
#include "plan_fixtures.hpp"

namespace autohaap {
namespace {

using testing_fixtures::input_error_of;

const std::string kFile = std::string(AUTOHAAP_TEST_DATA_DIR) + "/replicas/mixed_stage.yaml";

Problem problem() { return Problem{catalog_model("gpt3-1.3b"), catalog_cluster("mixed-a100-v100"), TrainingSpec{}, {}}; }

// tests/data/replicas/mixed_stage.yaml: B = 8; stage 0 four A100s (2
// sequences each); stage 1 two A100 replicas with 3 sequences each and two
// V100 replicas with 1 each.
Plan replica_sets_mixed_plan() {
  Plan p = read_plan(kFile);
  check_plan_against(p, problem().model, problem().cluster, problem().seq_len(), kFile);
  return p;
}

// Stage 1 as a one-device stage of dp = 4 replicas on `group`'s device,
// each replica taking `share` sequences: micro-batch 4 * share.
Plan reference(const Plan& mixed, int group, const char* device, int first_gpu, int share) {
  Plan p = mixed;
  StagePlan& s = p.stages[1];
  s.replicas.clear();
  s.group = group;
  s.device = device;
  s.first_gpu = first_gpu;
  p.micro_batch_size = 4 * share;
  return p;
}

TEST(ReplicaSets, FileReadsWithFirstSetAsStageDevice) {
  const Plan p = replica_sets_mixed_plan();
  const StagePlan& s = p.stages[1];
  ASSERT_EQ(s.replicas.size(), 2u);
  EXPECT_EQ(s.device, "a100-40gb");
  EXPECT_EQ(s.first_gpu, 4);
  EXPECT_EQ(s.set_replicas(0), 2);
  EXPECT_EQ(s.set_replicas(1), 2);
  EXPECT_EQ(s.replicas[1].device, "v100-32gb");
  EXPECT_EQ(s.replicas[1].sequences, 2);
  EXPECT_TRUE(s.mixes_devices());
  EXPECT_FALSE(p.stages[0].has_replica_sets());
}

// The stage's compute is that of its slowest set, each set costed at its
// own device speed with its own share: the A100 set's replicas take 3
// sequences each, the V100 set's 1 each; here the A100 set is the slower
// (3 sequences on an A100 against 1 on a V100, about 1/3 of its FLOP rate).
TEST(ReplicaSets, StageTimeIsItsSlowestSetAtItsShare) {
  const Problem pb = problem();
  const CostModel model(pb);
  const Plan p = replica_sets_mixed_plan();
  const std::vector<StageEstimate> sets = model.replica_set_estimates(p, 1);
  ASSERT_EQ(sets.size(), 2u);

  const Plan a100 = reference(p, 0, "a100-40gb", 4, 3);
  const Plan v100 = reference(p, 1, "v100-32gb", 0, 1);
  const StageEstimate ra = model.stage(a100, 1), rv = model.stage(v100, 1);
  EXPECT_DOUBLE_EQ(sets[0].forward_s, ra.forward_s);
  EXPECT_DOUBLE_EQ(sets[0].backward_s, ra.backward_s);
  EXPECT_DOUBLE_EQ(sets[1].forward_s, rv.forward_s);
  EXPECT_DOUBLE_EQ(sets[1].backward_s, rv.backward_s);
  // Compute of 3 sequences against 1 on the same device: about 3x (the
  // per-layer overhead does not scale).
  const Plan v100_three = reference(p, 1, "v100-32gb", 0, 3);
  EXPECT_NEAR(model.stage(v100_three, 1).time_s() / rv.time_s(), 3.0, 0.15);

  const StageEstimate e = model.stage(p, 1);
  ASSERT_GT(sets[0].pace_s(), sets[1].pace_s());
  EXPECT_DOUBLE_EQ(e.time_s(), sets[0].time_s());
  EXPECT_DOUBLE_EQ(e.optimizer_s, std::max(sets[0].optimizer_s, sets[1].optimizer_s));
  // V100s step their optimizer shard slower (less memory bandwidth).
  EXPECT_GT(sets[1].optimizer_s, sets[0].optimizer_s);
  const PredictedPerformance perf = model.estimate(p);
  EXPECT_DOUBLE_EQ(perf.stage_time_s[1], sets[0].time_s());

  // The gradient sync spans all four replicas across the two groups: over
  // the 12.5 GB/s inter-group link it is slower than the same sync of
  // four A100 replicas inside one node.
  EXPECT_GT(e.dp_sync_s, ra.dp_sync_s);
  // The same four replicas in one node sync as a one-device stage does. The
  // model is untied here: the last stage's tied-embedding all-reduce with
  // the first stage (also in dp_sync_s) runs over the pipeline link, which
  // a stage of sets prices between nodes.
  Problem untied = pb;
  untied.model.tied_embeddings = false;
  const CostModel untied_model(untied);
  Plan one_node = p;
  one_node.stages[1].replicas[1] = {"a100-40gb", 0, 6, 2, 2};
  EXPECT_NEAR(untied_model.stage(one_node, 1).dp_sync_s, untied_model.stage(a100, 1).dp_sync_s, 1e-12);
}

// Tied embeddings across a pipeline: the first and last stages each add a
// two-rank all-reduce of the word embedding's gradient (vocab x hidden / tp
// elements) over the link between them to their sync; a middle stage and
// an untied model add nothing. By hand: ring all-reduce of 2 ranks moves
// the whole message once each way, 2 (2 - 1) / 2 * bytes / bandwidth plus 2
// latencies.
TEST(ReplicaSets, TiedEmbeddingsAreAllReducedBetweenFirstAndLastStage) {
  const Problem tied = problem();
  ASSERT_TRUE(tied.model.tied_embeddings);
  Problem untied = tied;
  untied.model.tied_embeddings = false;
  const Plan p = reference(replica_sets_mixed_plan(), 0, "a100-40gb", 4, 3);
  for (int i : {0, 1}) {
    const double with = CostModel(tied).stage(p, i).dp_sync_s, without = CostModel(untied).stage(p, i).dp_sync_s;
    const StagePlan& s = p.stages[i];
    // Megatron-LM's vocabulary padded to a multiple of 128·tp (GPT-3's
    // 50,257 rows: 50,304 at tp 1, 50,432 at tp 2).
    const int multiple = 128 * s.tp;
    const double padded_vocab = (tied.model.vocab + multiple - 1) / multiple * multiple;
    const double bytes = padded_vocab * tied.model.hidden / s.tp * bytes_per_element(grad_precision(tied.training));
    // Both stages on the A100-40GB group, in one node: NVLink at its
    // achievable fraction.
    const NodeGroup& g = tied.cluster.groups[0];
    const double bw = g.intra_node_GBps * CostParameters{}.nvlink_efficiency * 1e9;
    EXPECT_NEAR(with - without, bytes / bw + 2 * g.intra_node_latency_us * 1e-6, 1e-9) << "stage " << i;
  }
}

// Each set's memory on its own device: activations of its share per GPU,
// states sharded over all four replicas (ZeRO-1), its own capacity.
TEST(ReplicaSets, MemoryIsCheckedPerSetOnItsDevice) {
  const Problem pb = problem();
  const CostModel model(pb);
  const Plan p = replica_sets_mixed_plan();
  const std::vector<StageEstimate> sets = model.replica_set_estimates(p, 1);
  const StageEstimate ra = model.stage(reference(p, 0, "a100-40gb", 4, 3), 1);
  const StageEstimate rv = model.stage(reference(p, 1, "v100-32gb", 0, 1), 1);
  EXPECT_DOUBLE_EQ(sets[0].memory.total(), ra.memory.total());
  EXPECT_DOUBLE_EQ(sets[1].memory.total(), rv.memory.total());
  EXPECT_DOUBLE_EQ(sets[0].memory.optimizer, sets[1].memory.optimizer);
  EXPECT_NEAR(sets[0].memory.activations / sets[1].memory.activations, 3.0, 0.3);
  EXPECT_DOUBLE_EQ(sets[0].capacity_bytes, 40 * kGiB);
  EXPECT_DOUBLE_EQ(sets[1].capacity_bytes, 32 * kGiB);
  // The stage reports its fullest set (by share of capacity).
  const StageEstimate e = model.stage(p, 1);
  const double la = sets[0].memory.total() / sets[0].capacity_bytes;
  const double lv = sets[1].memory.total() / sets[1].capacity_bytes;
  EXPECT_DOUBLE_EQ(e.memory.total() / e.capacity_bytes, std::max(la, lv));
  // The plan's per-GPU memory is the most any set's GPU holds (the set
  // nearest capacity need not hold the most: max_memory_GiB had shown it).
  EXPECT_DOUBLE_EQ(model.estimate(p).stage_memory_GiB[1],
                   std::max(sets[0].memory.total(), sets[1].memory.total()) / kGiB);
}

TEST(ReplicaSets, YamlAndJsonRoundTrip) {
  const Plan p = replica_sets_mixed_plan();
  for (const bool json : {false, true}) {
    const std::string text = json ? plan_to_json(p) : plan_to_yaml(p);
    EXPECT_EQ(text.find("first_gpu: 4\n    gpus"), std::string::npos);  // no one-device keys for stage 1
    const Plan back = plan_from_string(text, json, "round-trip");
    ASSERT_EQ(back.stages[1].replicas.size(), 2u);
    for (std::size_t k = 0; k < 2; ++k) {
      const ReplicaSet &a = p.stages[1].replicas[k], &b = back.stages[1].replicas[k];
      EXPECT_EQ(a.device, b.device);
      EXPECT_EQ(a.group, b.group);
      EXPECT_EQ(a.first_gpu, b.first_gpu);
      EXPECT_EQ(a.gpus, b.gpus);
      EXPECT_EQ(a.sequences, b.sequences);
    }
    EXPECT_EQ(back.stages[1].device, "a100-40gb");
    EXPECT_EQ(back.stages[1].dp, 4);
    EXPECT_TRUE(back.stages[0].replicas.empty());
    EXPECT_EQ(json ? plan_to_json(back) : plan_to_yaml(back), text);
  }
  // A one-device plan is written without the key.
  EXPECT_EQ(plan_to_yaml(testing_fixtures::sample_plan()).find("replicas"), std::string::npos);
}

std::string with(const std::string& from, const std::string& to) {
  std::string text = read_file(kFile);
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

InputError refusal(const std::string& text) {
  return input_error_of([&] {
    const Plan p = plan_from_string(text, false, "bad.yaml");
    check_plan_against(p, problem().model, problem().cluster, problem().seq_len(), "bad.yaml");
  });
}

TEST(ReplicaSets, SequencesNotSummingToMicroBatchAreRefused) {
  const InputError e = refusal(with("sequences: 2", "sequences: 4"));
  EXPECT_EQ(e.file(), "bad.yaml");
  EXPECT_EQ(e.key(), "stages[1].replicas");
  EXPECT_EQ(e.value(), "sequences summing to 10");
  EXPECT_NE(e.allowed().find("micro_batch_size = 8"), std::string::npos);
}

TEST(ReplicaSets, OverlappingGpusAreRefused) {
  // The A100 set moved onto stage 0's GPUs 0..3.
  const InputError e = refusal(with("first_gpu: 4\n        gpus: 2", "first_gpu: 2\n        gpus: 2"));
  EXPECT_EQ(e.key(), "stages[1].replicas[0].first_gpu");
  EXPECT_EQ(e.value(), "GPUs 2..3 of group 0");
  EXPECT_NE(e.allowed().find("stages[0] has 0..3"), std::string::npos);
  // Two sets of one stage on the same GPUs.
  const InputError f = refusal(with("device: v100-32gb\n        group: 1\n        first_gpu: 0",
                                     "device: a100-40gb\n        group: 0\n        first_gpu: 5"));
  EXPECT_EQ(f.key(), "stages[1].replicas[1].first_gpu");
  EXPECT_NE(f.allowed().find("another replica set of this stage has 4..5"), std::string::npos);
}

// A set lies as a stage of its own GPUs does: inside one node or on whole
// nodes. The A100 set moved to GPUs 7..8 of nodes of 8 (one GPU of each
// node) is refused by key; a launch had started each node twice.
TEST(ReplicaSets, ASetAcrossPartOfTwoNodesIsRefused) {
  const InputError e = refusal(with("first_gpu: 4\n        gpus: 2", "first_gpu: 7\n        gpus: 2"));
  EXPECT_EQ(e.key(), "stages[1].replicas[0].first_gpu");
  EXPECT_EQ(e.value(), "7");
  EXPECT_NE(e.allowed().find("keeps the set's 2 GPUs inside one node of 8 GPUs, or on whole nodes"),
            std::string::npos)
      << e.allowed();
}

TEST(ReplicaSets, TpNotDividingSetGpusIsRefused) {
  std::string text = with("    gpus: 4\n    tp: 1\n    cp: 1\n    dp: 4\n    layers: [12",
                          "    gpus: 4\n    tp: 2\n    cp: 1\n    dp: 2\n    layers: [12");
  text.replace(text.find("gpus: 2\n        sequences: 6"), 7, "gpus: 3");
  text.replace(text.find("gpus: 2\n        sequences: 2"), 7, "gpus: 1");
  const InputError e = refusal(text);
  EXPECT_EQ(e.key(), "stages[1].replicas[0].gpus");
  EXPECT_EQ(e.value(), "3");
  EXPECT_NE(e.allowed().find("a multiple of tp * cp = 2"), std::string::npos);
}

TEST(ReplicaSets, UnequalShareInsideASetIsRefused) {
  const InputError e = refusal(with("sequences: 6", "sequences: 5") + "");
  EXPECT_EQ(e.key(), "stages[1].replicas[0].sequences");
  EXPECT_NE(e.allowed().find("a multiple of the set's 2 replicas"), std::string::npos);
}

TEST(ReplicaSets, DeviceBesideReplicasIsRefused) {
  const InputError e = refusal(with("  - replicas:", "  - device: a100-40gb\n    replicas:"));
  EXPECT_EQ(e.key(), "stages[1].device");
  EXPECT_NE(e.allowed().find("no 'device' beside 'replicas'"), std::string::npos);
}

TEST(ReplicaSets, SetOnAnotherGroupsDeviceIsRefused) {
  const InputError e = refusal(with("device: v100-32gb", "device: a100-40gb"));
  EXPECT_EQ(e.key(), "stages[1].replicas[1].device");
  EXPECT_NE(e.allowed().find("v100-32gb"), std::string::npos);
}

TEST(ReplicaSets, LaunchManifestGivesEachSetItsSequences) {
  const LaunchManifest m = launch_manifest(replica_sets_mixed_plan(), problem());
  ASSERT_EQ(m.world_size, 8);
  // Stage 1's ranks 4..7: A100 replicas [0,3) and [3,6), V100 [6,7), [7,8).
  const IndexRange expected[] = {{0, 3}, {3, 6}, {6, 7}, {7, 8}};
  const char* devices[] = {"a100-40gb", "a100-40gb", "v100-32gb", "v100-32gb"};
  for (int d = 0; d < 4; ++d) {
    const LaunchRank& r = m.ranks[4 + d];
    EXPECT_EQ(r.dp_rank, d);
    EXPECT_EQ(r.sequences, expected[d]);
    EXPECT_EQ(r.sequences_per_replica, expected[d].end - expected[d].first);
    EXPECT_EQ(r.device, devices[d]);
  }
  // Stage 0's replica 1 holds [2,4): sequence 2 goes to rank 4, 3 to rank 5.
  ASSERT_EQ(m.ranks[1].send_to.size(), 2u);
  EXPECT_EQ(m.ranks[1].send_to[0], (LaunchPeer{4, {2, 3}, {0, 2048}}));
  EXPECT_EQ(m.ranks[1].send_to[1], (LaunchPeer{5, {3, 4}, {0, 2048}}));
  const LaunchManifest back = launch_manifest_from_string(launch_manifest_to_json(m), "m.json");
  EXPECT_EQ(back, m);
  // A rank claiming the even split is refused.
  LaunchManifest bad = m;
  bad.ranks[6].sequences = {4, 6};
  const InputError e = input_error_of([&] { check_launch_manifest(bad, "m.json"); });
  EXPECT_EQ(e.key(), "ranks[6].sequences");
}

TEST(ReplicaSets, MegatronExportRefusesMixedStage) {
  const std::vector<std::string> why = megatron_blockers(replica_sets_mixed_plan(), problem());
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("stage 1 mixes device types in its replicas"), std::string::npos);
  EXPECT_NE(why[0].find("Megatron-LM gives every data-parallel replica the same micro-batch"), std::string::npos);
}

// Every one-line description names each set's device, not the first set's
// alone: the pipeline summaries (search's top table, the runtime price) and
// the stage's devices.
TEST(ReplicaSets, SummariesNameEverySet) {
  const Plan p = replica_sets_mixed_plan();
  EXPECT_EQ(p.stages[1].devices(), "a100-40gb+v100-32gb");
  EXPECT_EQ(p.stages[0].devices(), "a100-40gb");
  EXPECT_EQ(stage_summary(p.stages[1]), "a100-40gb+v100-32gb:1x(2+2)");
  EXPECT_EQ(stage_summary(p.stages[0]), "a100-40gb:1x4");
  EXPECT_EQ(pipeline_summary(p), "a100-40gb:1x4[12] > a100-40gb+v100-32gb:1x(2+2)[12]");
}

// An fp8 plan names each set without FP8 by its own device (neither A100
// nor V100 has FP8; the V100 has no BF16 either).
TEST(ReplicaSets, Fp8NoteNamesEachSetsDevice) {
  Problem pb = problem();
  pb.training.precision = Precision::fp8;
  const CostModel model(pb);
  const std::string table = format_stage_table(model, replica_sets_mixed_plan());
  EXPECT_NE(table.find("stage 0 (a100-40gb) has no FP8: its GEMMs run in BF16"), std::string::npos) << table;
  EXPECT_NE(table.find("stage 1a (a100-40gb) has no FP8: its GEMMs run in BF16"), std::string::npos) << table;
  EXPECT_NE(table.find("stage 1b (v100-32gb) has no FP8: its GEMMs run in FP16"), std::string::npos) << table;
  EXPECT_EQ(table.find("stage 1 ("), std::string::npos) << table;
}

}  // namespace
}  // namespace autohaap
