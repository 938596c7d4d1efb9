// The plan builder's layer splits (plan_builder.hpp, LayerSplit): Megatron-LM's
// even split and DeepSpeed's PipelineModule partitions, checked against the
// splits BigScience reported for its BLOOM trials
// (bigscience-workshop/bigscience, train/tr11-176B-ml/chronicles-prequel.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/plan_builder.hpp"

namespace autohaap {
namespace {

std::vector<int> counts(const std::string& split, int layers, int stages) {
  return stage_layer_counts(parse_layer_split(split, "test", "--layer-split"), layers, stages).counts;
}

TEST(LayerSplit, EvenGivesTheRemainderToTheFirstStages) {
  EXPECT_EQ(counts("even", 10, 4), (std::vector<int>{3, 3, 2, 2}));
  EXPECT_EQ(counts("even", 72, 12), std::vector<int>(12, 6));
}

TEST(LayerSplit, DeepSpeedFillsStagesAtTheLeastBottleneck) {
  // "78/12=6.5 - so the last stage has 1 block, while the rest have 7"
  // (chronicles-prequel.md, "Re-do").
  std::vector<int> expected(11, 7);
  expected.push_back(1);
  EXPECT_EQ(counts("type:transformer", 78, 12), expected);
  // Where the stages divide the layers it is the even split.
  EXPECT_EQ(counts("type:transformer", 72, 12), counts("even", 72, 12));
}

TEST(LayerSplit, EmbeddingsTakeASlotEachUnderTransformerAndEmbedding) {
  // "2+nlayers*PP ... giving each embedding layer its own slot": 70 layers
  // + 2 embeddings on 12 stages are 6 slots a stage, so the first and the
  // last stage hold 5 layers beside their embedding (BLOOM-176B).
  std::vector<int> expected(12, 6);
  expected.front() = expected.back() = 5;
  EXPECT_EQ(counts("type:transformer|embedding", 70, 12), expected);
  // 106 + 2 on 12: 9 slots a stage.
  expected.assign(12, 9);
  expected.front() = expected.back() = 8;
  EXPECT_EQ(counts("type:transformer|embedding", 106, 12), expected);
}

TEST(LayerSplit, ASplitThatLeavesAStageEmptyOrMissesTheModelIsRefused) {
  // 6 layers + 2 slots on 8 stages: one slot a stage, so the first and the
  // last hold only their embedding.
  const StageLayerCounts empty =
      stage_layer_counts(parse_layer_split("type:transformer|embedding", "t", "k"), 6, 8);
  EXPECT_TRUE(empty.counts.empty());
  EXPECT_NE(empty.refusal.find("stage 0 none"), std::string::npos) << empty.refusal;
  const StageLayerCounts short_list = stage_layer_counts(parse_layer_split("7,7,6", "t", "k"), 21, 3);
  EXPECT_NE(short_list.refusal.find("add up to the model's 21 layers"), std::string::npos) << short_list.refusal;
  EXPECT_EQ(counts("7,7,6", 20, 3), (std::vector<int>{7, 7, 6}));
}

TEST(LayerSplit, ParsingNamesTheKeyAndWhatIsAllowed) {
  for (const char* bad : {"", "7,,6", "7,0,6", "uneven", "type:embedding", "-1,2", "1234567890"}) {
    try {
      parse_layer_split(bad, "command line", "--layer-split");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--layer-split"), std::string::npos) << what;
      EXPECT_NE(what.find("type:transformer|embedding"), std::string::npos) << what;
    }
  }
  // What is written reads back as the same split.
  for (const char* text : {"even", "type:transformer", "type:transformer|embedding", "5,6,6,5"})
    EXPECT_EQ(layer_split_name(parse_layer_split(text, "t", "k")), text);
}

TEST(LayerSplit, AUniformPlanTakesTheLayersOfEachStageAsSplit) {
  Problem p;
  p.model = catalog_model("gpt3-1.3b");  // 24 layers
  p.cluster = catalog_cluster("a100x8");
  p.training.global_batch = 64;
  UniformPlanRequest r;
  r.tp = 1, r.pp = 4, r.dp = 2, r.micro_batch_per_replica = 1;
  r.layer_split = parse_layer_split("type:transformer|embedding", "t", "k");
  const Plan plan = make_uniform_plan(p, r);
  ASSERT_EQ(plan.stages.size(), 4u);
  // 24 + 2 slots on 4 stages: 7 a stage, the ends 6 layers each.
  EXPECT_EQ(plan.stages[0].layer_begin, 0);
  EXPECT_EQ(plan.stages[0].layer_end, 6);
  EXPECT_EQ(plan.stages[1].layer_end, 13);
  EXPECT_EQ(plan.stages[2].layer_end, 20);
  EXPECT_EQ(plan.stages[3].layer_end, 24);
  r.layer_split = parse_layer_split("10,10,2,2", "t", "k");
  EXPECT_EQ(make_uniform_plan(p, r).stages[1].layer_end, 20);
  r.layer_split = parse_layer_split("10,10,2", "t", "k");
  EXPECT_THROW(make_uniform_plan(p, r), InputError);
}

}  // namespace
}  // namespace autohaap
