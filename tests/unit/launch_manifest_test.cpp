// Launch manifest: the peers of a mixed plan against a hand calculation,
// the JSON round trip, and the refusal of damaged manifests by key path.
#include <gtest/gtest.h>

#include <string>

#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/launch_manifest.hpp"
#include "autohaap/io/megatron_layout.hpp"
#include "autohaap/io/plan_io.hpp"
#include "plan_fixtures.hpp"

namespace autohaap {
namespace {

using testing_fixtures::input_error_of;
using testing_fixtures::make_stage;

Problem problem() { return Problem{catalog_model("gpt3-1.3b"), catalog_cluster("mixed-a100-v100"), TrainingSpec{}, {}}; }

// B = 4. Stage 0: tp 2 x dp 2 on A100 (ranks 0-3), stage 1: tp 1 x dp 4 on
// V100 (ranks 4-7).
Plan two_stage_mixed_plan() {
  Plan p;
  p.model = "gpt3-1.3b";
  p.cluster = "mixed-a100-v100";
  p.global_batch = 512, p.micro_batch_size = 4, p.num_micro_batches = 128;
  p.stages = {make_stage(0, "a100-40gb", 0, 2, 2, 0, 12, Recompute::none),
              make_stage(1, "v100-32gb", 0, 1, 4, 12, 24, Recompute::full)};
  return p;
}

LaunchManifest mixed_manifest() {
  const Plan plan = two_stage_mixed_plan();
  check_plan_against(plan, problem().model, problem().cluster, problem().seq_len(), "mixed");
  return launch_manifest(plan, problem());
}

const IndexRange kAllTokens{0, 2048};  // gpt3-1.3b: 2048 tokens a sequence

TEST(LaunchManifest, MixedPlanPeersMatchHandCalculation) {
  const LaunchManifest m = mixed_manifest();
  EXPECT_EQ(m.world_size, 8);
  EXPECT_EQ(m.micro_batch_size, 4);
  EXPECT_EQ(m.layers, 24);
  ASSERT_EQ(m.stages.size(), 2u);
  EXPECT_EQ(m.stages[0].sequences_per_replica, 2);  // 4 / dp 2
  EXPECT_EQ(m.stages[1].sequences_per_replica, 1);  // 4 / dp 4
  ASSERT_EQ(m.ranks.size(), 8u);

  // Stage 0: rank = tp_rank + 2 dp_rank; replica d holds sequences [2d, 2d+2).
  EXPECT_EQ(m.ranks[2].tp_rank, 0);
  EXPECT_EQ(m.ranks[2].dp_rank, 1);
  EXPECT_EQ(m.ranks[2].sequences, (IndexRange{2, 4}));
  EXPECT_EQ(m.ranks[2].layers, (IndexRange{0, 12}));
  EXPECT_EQ(m.ranks[5].node, "v100-32gb-node0");
  EXPECT_EQ(m.ranks[5].local_gpu, 1);
  EXPECT_EQ(m.ranks[5].sequences, (IndexRange{1, 2}));

  // min(tp 2, tp 1) = 1: only tp rank 0 of stage 0 talks, to the stage-1
  // replicas whose single sequence lies in its two.
  using Peers = std::vector<LaunchPeer>;
  EXPECT_EQ(m.ranks[0].send_to, (Peers{{4, {0, 1}, kAllTokens}, {5, {1, 2}, kAllTokens}}));
  EXPECT_EQ(m.ranks[1].send_to, Peers{});
  EXPECT_EQ(m.ranks[2].send_to, (Peers{{6, {2, 3}, kAllTokens}, {7, {3, 4}, kAllTokens}}));
  EXPECT_EQ(m.ranks[3].send_to, Peers{});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(m.ranks[r].recv_from, Peers{}) << r;
  EXPECT_EQ(m.ranks[4].recv_from, (Peers{{0, {0, 1}, kAllTokens}}));
  EXPECT_EQ(m.ranks[5].recv_from, (Peers{{0, {1, 2}, kAllTokens}}));
  EXPECT_EQ(m.ranks[6].recv_from, (Peers{{2, {2, 3}, kAllTokens}}));
  EXPECT_EQ(m.ranks[7].recv_from, (Peers{{2, {3, 4}, kAllTokens}}));
  for (int r = 4; r < 8; ++r) EXPECT_EQ(m.ranks[r].send_to, Peers{}) << r;
}

// One dtype a job: a BF16 plan with a stage on the V100 (no BF16) runs
// FP16 on every rank, as `export --to megatron` passes --fp16; it recorded
// bf16. With BF16 everywhere the training's precision stands.
TEST(LaunchManifest, ThePrecisionIsOneEveryRankRuns) {
  Problem p = problem();
  p.training.precision = Precision::bf16;
  const Plan plan = two_stage_mixed_plan();
  EXPECT_EQ(launch_manifest(plan, p).precision, Precision::fp16);
  for (NodeGroup& g : p.cluster.groups) g.device.has_bf16 = true;
  EXPECT_EQ(launch_manifest(plan, p).precision, Precision::bf16);
  p.training.precision = Precision::fp32;
  EXPECT_EQ(launch_manifest(plan, p).precision, Precision::fp32);
}

TEST(LaunchManifest, ContextParallelRanksExchangeTheirTokenChunks) {
  // Stage 0: cp 2 (ranks 0, 1, tokens [0, 1024) and [1024, 2048));
  // stage 1: dp 2 (ranks 2, 3, sequences [0, 2) and [2, 4)).
  Plan plan = two_stage_mixed_plan();
  plan.stages = {make_stage(0, "a100-40gb", 0, 1, 1, 0, 12, Recompute::none),
                 make_stage(1, "v100-32gb", 0, 1, 2, 12, 24, Recompute::none)};
  plan.stages[0].cp = 2, plan.stages[0].gpus = 2;
  Problem p = problem();
  p.model.flash_attention = true;  // the ring runs inside the fused kernel
  check_plan_against(plan, p.model, p.cluster, p.seq_len(), "cp");
  const LaunchManifest m = launch_manifest(plan, p);
  using Peers = std::vector<LaunchPeer>;
  EXPECT_EQ(m.ranks[1].tokens, (IndexRange{1024, 2048}));
  EXPECT_EQ(m.ranks[1].send_to, (Peers{{2, {0, 2}, {1024, 2048}}, {3, {2, 4}, {1024, 2048}}}));
  EXPECT_EQ(m.ranks[3].recv_from, (Peers{{0, {2, 4}, {0, 1024}}, {1, {2, 4}, {1024, 2048}}}));
  EXPECT_NO_THROW(check_launch_manifest(m, "cp"));
}

TEST(LaunchManifest, InterleavedLastStageFeedsTheFirst) {
  Plan plan = two_stage_mixed_plan();
  plan.vpp = 2;
  const LaunchManifest m = launch_manifest(plan, problem());
  using Peers = std::vector<LaunchPeer>;
  EXPECT_EQ(m.ranks[0].recv_from, (Peers{{4, {0, 1}, kAllTokens}, {5, {1, 2}, kAllTokens}}));
  EXPECT_EQ(m.ranks[6].send_to, (Peers{{2, {2, 3}, kAllTokens}}));
  EXPECT_NO_THROW(check_launch_manifest(m, "vpp"));
  // Each stage's chunks are the layers the Megatron layout of the same
  // plan gives its pipeline rank, chunk by chunk, in model order (a rank
  // had been given its stage's plan-order range instead).
  std::vector<int> stage_layers;
  for (const StagePlan& s : plan.stages) stage_layers.push_back(s.num_layers());
  const MegatronLayout layout = parse_megatron_layout(format_megatron_layout(stage_layers, 2), 2);
  int next = 0;
  for (int v = 0; v < 2; ++v)
    for (std::size_t i = 0; i < plan.stages.size(); ++i) {
      ASSERT_EQ(m.stages[i].chunks.size(), 2u);
      EXPECT_EQ(m.stages[i].chunks[v].layers, (IndexRange{next, next + layout.layers[i][v]})) << i << " " << v;
      next += layout.layers[i][v];
    }
  EXPECT_EQ(next, problem().model.layers);
  // Any other chunks are refused, by stage and key; a plain pipeline has
  // none.
  LaunchManifest edited = m;
  std::swap(edited.stages[0].chunks[0], edited.stages[0].chunks[1]);
  const InputError e = input_error_of([&] { check_launch_manifest(edited, "vpp"); });
  EXPECT_EQ(e.key(), "stages[0].chunks");
  plan.vpp = 1;
  for (const LaunchStage& st : launch_manifest(plan, problem()).stages) EXPECT_TRUE(st.chunks.empty());
}

TEST(LaunchManifest, StatedChunksAreLaunchedAsStated) {
  // A plan's stated cut puts each chunk's layers where Megatron-Core's
  // layout of the same cut does; the manifest reads back with it.
  Plan plan = two_stage_mixed_plan();
  plan.vpp = 2;
  std::vector<std::vector<int>> cut;
  for (StagePlan& s : plan.stages) {
    s.chunks = {s.num_layers() - 1, 1};
    cut.push_back(s.chunks);
  }
  const LaunchManifest m = launch_manifest(plan, problem());
  const MegatronLayout layout = parse_megatron_layout(format_megatron_layout(cut), 2);
  int next = 0;
  for (int v = 0; v < 2; ++v)
    for (std::size_t i = 0; i < plan.stages.size(); ++i) {
      ASSERT_EQ(m.stages[i].chunks.size(), 2u);
      EXPECT_EQ(layout.layers[i][v], cut[i][v]);
      EXPECT_EQ(m.stages[i].chunks[v].layers, (IndexRange{next, next + cut[i][v]})) << i << " " << v;
      next += cut[i][v];
    }
  EXPECT_NO_THROW(check_launch_manifest(m, "stated"));
  EXPECT_EQ(launch_manifest_from_string(launch_manifest_to_json(m), "m.json"), m);
  // A stage's chunks removed: refused by key, with the rule rather than
  // ranges that would move with the other stages' stated cuts.
  LaunchManifest edited = m;
  edited.stages[0].chunks.clear();
  const InputError e = input_error_of([&] { check_launch_manifest(edited, "stated"); });
  EXPECT_EQ(e.key(), "stages[0].chunks");
  EXPECT_NE(e.allowed().find("each at least one layer"), std::string::npos) << e.allowed();
  EXPECT_EQ(e.allowed().find("with the even cut"), std::string::npos) << e.allowed();
}

TEST(LaunchManifest, JsonRoundTrip) {
  const LaunchManifest m = mixed_manifest();
  const std::string text = launch_manifest_to_json(m);
  EXPECT_NE(text.find("\"format\": \"autohaap-launch/1\""), std::string::npos);
  const LaunchManifest back = launch_manifest_from_string(text, "m.json");
  EXPECT_EQ(back, m);
  EXPECT_EQ(launch_manifest_to_json(back), text);
}

// The error reading `m` written out gives.
InputError error_reading(const LaunchManifest& m) {
  return input_error_of([&] { launch_manifest_from_string(launch_manifest_to_json(m), "bad.json"); });
}

TEST(LaunchManifest, MissingKeyIsNamed) {
  std::string text = launch_manifest_to_json(mixed_manifest());
  // Drop the sixth rank's "node" line: each rank has one, in rank order.
  std::size_t at = 0;
  for (int k = 0; k < 6; ++k) at = text.find("\"node\":", at + 1);
  ASSERT_NE(at, std::string::npos);
  const std::size_t line = text.rfind('\n', at);
  text.erase(line, text.find('\n', at) - line);
  const InputError e = input_error_of([&] { launch_manifest_from_string(text, "bad.json"); });
  EXPECT_EQ(e.key(), "ranks[5].node");
  EXPECT_NE(std::string(e.what()).find("bad.json: ranks[5].node"), std::string::npos) << e.what();
}

TEST(LaunchManifest, QuotedNumberIsRefused) {
  std::string text = launch_manifest_to_json(mixed_manifest());
  const std::size_t at = text.find("\"tp\": 2");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 7, "\"tp\": \"2\"");
  const InputError e = input_error_of([&] { launch_manifest_from_string(text, "bad.json"); });
  EXPECT_EQ(e.key(), "stages[0].tp");
}

TEST(LaunchManifest, DuplicateRankIsRefused) {
  LaunchManifest m = mixed_manifest();
  m.ranks[5].rank = 4;
  const InputError e = error_reading(m);
  EXPECT_EQ(e.key(), "ranks[5].rank");
  EXPECT_EQ(e.value(), "4");
  EXPECT_NE(e.allowed().find("each rank 0..7 once (ranks[4] is rank 4 too)"), std::string::npos) << e.what();
}

TEST(LaunchManifest, AsymmetricPeerIsRefused) {
  LaunchManifest m = mixed_manifest();
  m.ranks[0].send_to.pop_back();  // rank 5 still lists rank 0 as its sender
  const InputError e = error_reading(m);
  EXPECT_EQ(e.key(), "ranks[5].recv_from[0]");
  EXPECT_NE(e.allowed().find("ranks[0].send_to (rank 0) has no entry {rank: 5, sequences: [1, 2)"),
            std::string::npos)
      << e.what();
}

TEST(LaunchManifest, PeerOutOfRangeIsRefused) {
  LaunchManifest m = mixed_manifest();
  m.ranks[0].send_to[0].rank = 8;
  const InputError e = error_reading(m);
  EXPECT_EQ(e.key(), "ranks[0].send_to[0].rank");
  EXPECT_EQ(e.value(), "8");
}

TEST(LaunchManifest, SymmetricPeersOutsideTheRuleAreRefused) {
  LaunchManifest m = mixed_manifest();
  // tp rank 1 of stage 0 has no partner in a stage of tp 1.
  m.ranks[1].send_to.push_back({4, {0, 1}, kAllTokens});
  m.ranks[4].recv_from.push_back({1, {0, 1}, kAllTokens});
  const InputError e = error_reading(m);
  EXPECT_EQ(e.key(), "ranks[1].send_to");
  EXPECT_NE(e.allowed().find("[] ("), std::string::npos) << e.what();
}

TEST(LaunchManifest, LayersMustCoverTheModelOnce) {
  LaunchManifest m = mixed_manifest();
  m.stages[1].layers = {11, 24};  // layer 11 twice
  for (int r = 4; r < 8; ++r) m.ranks[r].layers = m.stages[1].layers;
  EXPECT_EQ(error_reading(m).key(), "stages[1].layers");
}

TEST(LaunchManifest, AnEdgeStageMayHoldNoLayerAsInAPlan) {
  // The last stage of the output layer alone ([24, 24)): a plan allows it,
  // and the manifest `export` writes of it reads back; an empty middle
  // stage is refused.
  LaunchManifest m = mixed_manifest();
  m.stages[0].layers = {0, 24};
  m.stages[1].layers = {24, 24};
  for (int r = 0; r < 4; ++r) m.ranks[r].layers = m.stages[0].layers;
  for (int r = 4; r < 8; ++r) m.ranks[r].layers = m.stages[1].layers;
  EXPECT_NO_THROW(launch_manifest_from_string(launch_manifest_to_json(m), "edge.json"));
  LaunchManifest single = m;
  single.stages[0].layers = {0, 0};
  for (int r = 0; r < 4; ++r) single.ranks[r].layers = single.stages[0].layers;
  single.stages[1].layers = {0, 24};
  for (int r = 4; r < 8; ++r) single.ranks[r].layers = single.stages[1].layers;
  EXPECT_NO_THROW(launch_manifest_from_string(launch_manifest_to_json(single), "first.json"));
}

TEST(LaunchManifest, ReplicaSequencesMustAddUpToB) {
  LaunchManifest m = mixed_manifest();
  m.stages[1].sequences_per_replica = 2;  // 4 replicas x 2 != B = 4
  const InputError e = error_reading(m);
  EXPECT_EQ(e.key(), "stages[1].sequences_per_replica");
  EXPECT_NE(e.allowed().find("micro_batch_size / dp = 1"), std::string::npos) << e.what();
}

TEST(LaunchManifest, OtherFormatIsRefused) {
  std::string text = launch_manifest_to_json(mixed_manifest());
  text.replace(text.find("autohaap-launch/1"), 17, "autohaap-launch/2");
  const InputError e = input_error_of([&] { launch_manifest_from_string(text, "bad.json"); });
  EXPECT_EQ(e.key(), "format");
  EXPECT_EQ(e.value(), "autohaap-launch/2");
}

}  // namespace
}  // namespace autohaap
