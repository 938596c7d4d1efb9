// Hostfile: every GPU of a plan mapped to its node, stage and ranks.
#include <gtest/gtest.h>

#include "autohaap/io/catalog.hpp"
#include "autohaap/io/hostfile.hpp"

namespace autohaap {
namespace {

StagePlan stage(int group, const std::string& device, int first_gpu, int tp, int dp, int begin, int end) {
  StagePlan s;
  s.group = group, s.device = device, s.first_gpu = first_gpu, s.tp = tp, s.dp = dp, s.gpus = tp * dp;
  s.layer_begin = begin, s.layer_end = end;
  return s;
}

Plan hostfile_mixed_plan() {
  Plan p;
  p.model = "gpt3-1.3b";
  p.cluster = "mixed-a100-v100";
  p.global_batch = 512, p.micro_batch_size = 8, p.num_micro_batches = 64;
  p.stages = {stage(0, "a100-40gb", 0, 4, 2, 0, 10), stage(0, "a100-40gb", 8, 2, 4, 10, 18),
              stage(1, "v100-32gb", 0, 4, 4, 18, 24)};
  return p;
}

TEST(Hostfile, EveryGpuGetsNodeStageAndRanks) {
  const ClusterSpec cluster = catalog_cluster("mixed-a100-v100");  // 2 x 8 A100 + 2 x 8 V100
  const std::vector<HostSlot> slots = host_slots(hostfile_mixed_plan(), cluster);
  ASSERT_EQ(slots.size(), 32u);
  for (int r = 0; r < 32; ++r) EXPECT_EQ(slots[r].rank, r);

  EXPECT_EQ(slots[0].node, "a100-40gb-node0");
  EXPECT_EQ(slots[0].local_gpu, 0);
  EXPECT_EQ(slots[0].stage, 0);
  // Stage 0, GPU 5: tp 4 -> tensor rank 1 of data-parallel replica 1.
  EXPECT_EQ(slots[5].tp_rank, 1);
  EXPECT_EQ(slots[5].dp_rank, 1);
  // Stage 1 starts on the group's second node; tp 2: GPU 8+3 is tp rank 1, dp rank 1.
  EXPECT_EQ(slots[8].node, "a100-40gb-node1");
  EXPECT_EQ(slots[8].stage, 1);
  EXPECT_EQ(slots[11].local_gpu, 3);
  EXPECT_EQ(slots[11].tp_rank, 1);
  EXPECT_EQ(slots[11].dp_rank, 1);
  // Stage 2 spans both V100 nodes: its 14th GPU is GPU 5 of the second node.
  EXPECT_EQ(slots[29].node, "v100-32gb-node1");
  EXPECT_EQ(slots[29].local_gpu, 5);
  EXPECT_EQ(slots[29].stage, 2);
  EXPECT_EQ(slots[29].tp_rank, 1);
  EXPECT_EQ(slots[29].dp_rank, 3);
  EXPECT_EQ(slots[29].device, "v100-32gb");
}

TEST(Hostfile, SharedGroupNamesAreMadeUnique) {
  ClusterSpec cluster = catalog_cluster("mixed-a100-v100");
  cluster.groups[1] = cluster.groups[0];  // two groups called a100-40gb
  Plan plan = hostfile_mixed_plan();
  plan.stages[2].device = "a100-40gb";
  const std::vector<HostSlot> slots = host_slots(plan, cluster);
  EXPECT_EQ(slots[0].node, "a100-40gb-g0-node0");
  EXPECT_EQ(slots[31].node, "a100-40gb-g1-node1");
}

TEST(Hostfile, TextHasAHeaderAndOneLinePerGpu) {
  const std::string text = format_hostfile(hostfile_mixed_plan(), catalog_cluster("mixed-a100-v100"));
  std::size_t lines = 0, comments = 0;
  for (std::size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
    ++lines;
    comments += text[at] == '#';
  }
  EXPECT_EQ(comments, 2u);
  EXPECT_EQ(lines, 34u);
  EXPECT_NE(text.find("# node"), std::string::npos);
  EXPECT_NE(text.find("v100-32gb-node1    5     29      2        1        0        3  v100-32gb\n"), std::string::npos) << text;
}

TEST(Hostfile, ContextParallelRanksSitBetweenTensorAndDataParallel) {
  // One stage of tp 2 x cp 2 x dp 2: Megatron's order, tp fastest, then cp.
  ClusterSpec cluster{"c", {make_node_group(catalog_device("h100-sxm"), 1, 8)}, 12.5, 20};
  Plan plan;
  plan.model = "m", plan.cluster = "c";
  plan.stages = {StagePlan{0, "h100-sxm", 0, 8, 2, 2, 0, 4, Recompute::none, 2}};
  const auto slots = host_slots(plan, cluster);
  ASSERT_EQ(slots.size(), 8u);
  const int expected[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
  for (int q = 0; q < 8; ++q) {
    EXPECT_EQ(slots[q].tp_rank, expected[q][0]) << q;
    EXPECT_EQ(slots[q].cp_rank, expected[q][1]) << q;
    EXPECT_EQ(slots[q].dp_rank, expected[q][2]) << q;
  }
}

}  // namespace
}  // namespace autohaap
