// Plan files: both formats give back exactly the plan written, a
// hand-written plan needs only its inputs, every kind of bad input is one
// InputError naming the key path and the value, and check_plan_against
// catches a plan that does not fit its model or cluster.
#include "autohaap/io/plan_io.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/specs/spec_fingerprint.hpp"
#include "plan_fixtures.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;
using testing_fixtures::expect_same_plan;
using testing_fixtures::input_error_of;
using testing_fixtures::sample_plan;

// The InputError `f` throws; fails the test if it throws nothing.
// `text` with its one occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "fixture lacks '" << from << "'";
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "fixture has '" << from << "' twice";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// ------------------------------------------------------------ round trips

TEST(PlanIo, JsonRoundTripKeepsEveryField) {
  const Plan plan = sample_plan();
  expect_same_plan(plan, plan_from_string(plan_to_json(plan, 8), true, "plan.json"));
}

TEST(PlanIo, YamlRoundTripKeepsEveryField) {
  const Plan plan = sample_plan();
  expect_same_plan(plan, plan_from_string(plan_to_yaml(plan, 8), false, "plan.yaml"));
}

// An interleaved plan may state how each stage's layers fall into its
// chunks (Megatron-Core's layout runs any cut): both formats keep the cut,
// a plain plan writes none, and a cut that is not one of the stage's layers
// into vpp chunks of a layer or more is refused by its key.
TEST(PlanIo, StatedChunksRoundTripAndAreRefusedByKeyWhenTheyDoNotCutTheStage) {
  Plan plan = sample_plan();
  plan.global_batch = 384, plan.num_micro_batches = 96;  // a multiple of the 3 stages
  plan.vpp = 2;
  plan.stages[0].chunks = {6, 4};
  plan.stages[1].chunks = {3, 5};
  plan.stages[2].chunks = {2, 4};
  for (const bool json : {false, true}) {
    const std::string text = json ? plan_to_json(plan, 8) : plan_to_yaml(plan, 8);
    const Plan back = plan_from_string(text, json, "plan");
    expect_same_plan(plan, back);
    EXPECT_EQ(back.chunk_cut(), (std::vector<std::vector<int>>{{6, 4}, {3, 5}, {2, 4}}));
  }
  EXPECT_EQ(plan_to_yaml(sample_plan(), 8).find("chunks"), std::string::npos);
  const std::string yaml = plan_to_yaml(plan, 8);
  for (const auto& [cut, allowed] : std::vector<std::pair<std::string, std::string>>{
           {"[3, 4]", "summing to the stage's 8 layers"},
           {"[8, 0]", "each at least 1"},
           {"[2, 3, 3]", "2 chunk sizes (the plan's vpp)"}}) {
    const InputError e = input_error_of([&] { plan_from_string(replaced(yaml, "[3, 5]", cut), false, "p.yaml"); });
    EXPECT_EQ(e.key(), "stages[1].chunks") << cut;
    EXPECT_EQ(e.value(), cut);
    EXPECT_NE(e.allowed().find(allowed), std::string::npos) << e.allowed();
  }
  const InputError empty = input_error_of([&] { plan_from_string(replaced(yaml, "[3, 5]", "[]"), false, "p.yaml"); });
  EXPECT_EQ(empty.key(), "stages[1].chunks");
  EXPECT_NE(empty.allowed().find("a non-empty list"), std::string::npos) << empty.allowed();
  Plan plain = plan;
  plain.vpp = 1;
  const InputError e = input_error_of([&] { plan_from_string(plan_to_yaml(plain, 8), false, "p.yaml"); });
  EXPECT_EQ(e.key(), "stages[0].chunks");
  EXPECT_NE(e.allowed().find("absent unless the plan interleaves"), std::string::npos) << e.allowed();
  // Unstated, a stage's chunks are the even cut.
  plan.stages[1].chunks.clear();
  EXPECT_EQ(plan.chunk_cut()[1], (std::vector<int>{4, 4}));
}

TEST(PlanIo, NonFiniteNumbersSurviveBothFormats) {
  Plan plan = sample_plan();
  plan.predicted.tokens_per_s = std::numeric_limits<double>::infinity();
  plan.predicted.bubble_s = std::numeric_limits<double>::infinity();
  const Plan from_yaml = plan_from_string(plan_to_yaml(plan), false, "plan.yaml");
  const Plan from_json = plan_from_string(plan_to_json(plan), true, "plan.json");
  EXPECT_EQ(from_yaml.predicted.tokens_per_s, plan.predicted.tokens_per_s);
  EXPECT_EQ(from_yaml.predicted.bubble_s, plan.predicted.bubble_s);
  EXPECT_EQ(from_json.predicted.tokens_per_s, plan.predicted.tokens_per_s);
  EXPECT_EQ(from_json.predicted.bubble_s, plan.predicted.bubble_s);
}

TEST(PlanIo, NumbersAreReadExactlyOrRefusedByRange) {
  // Forms on which rapidjson's own digit-string conversion reads out of
  // bounds or overflows: read exactly here, or refused when no double holds
  // them.
  const std::string json = plan_to_json(sample_plan());
  const std::string key = "\"iteration_time_s\": ";
  const std::size_t at = json.find(key) + key.size();
  auto with = [&](const std::string& number) {
    return std::string(json).replace(at, json.find_first_of(",\n", at) - at, number);
  };
  auto time_of = [&](const std::string& number) {
    return plan_from_string(with(number), true, "p.json").predicted.iteration_time_s;
  };
  EXPECT_EQ(time_of("0.0e-100"), 0.0);
  EXPECT_EQ(time_of("0." + std::string(30, '0')), 0.0);
  EXPECT_EQ(time_of("1" + std::string(300, '0')), 1e300);
  EXPECT_EQ(time_of("1.5" + std::string(1000, '0') + "1"), 1.5);
  EXPECT_EQ(time_of("0.30000000000000004"), 0.1 + 0.2);
  for (const std::string& huge : {std::string("1e400"), "1" + std::string(400, '0'), std::string("0.1e-2147483639")}) {
    const auto e = input_error_of([&] { plan_from_string(with(huge), true, "p.json"); });
    EXPECT_EQ(e.file(), "p.json");
    EXPECT_EQ(e.value().rfind("line 55, column 25: ", 0), 0u) << e.what();
    // Too large: rapidjson's scanner says so; too small: the range is named.
    EXPECT_TRUE(e.value().find("Number too big") != std::string::npos ||
                e.allowed().find("range of a double") != std::string::npos)
        << e.what();
  }
}

TEST(PlanIo, NamesThatLookLikeOtherTypesAreQuotedInYaml) {
  Plan plan = sample_plan();
  plan.model = "yes";
  plan.cluster = "2024";
  plan.search.strategy = "null";
  const std::string text = plan_to_yaml(plan);
  EXPECT_NE(text.find("model: \"yes\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cluster: \"2024\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("device: a100-80gb\n"), std::string::npos) << text;
  // Any YAML reader now sees strings, not a boolean, a number and null.
  const YAML::Node doc = YAML::Load(text);
  EXPECT_EQ(doc["cluster"].Tag(), "!");
  EXPECT_EQ(doc["search"]["strategy"].Tag(), "!");
  expect_same_plan(plan, plan_from_string(text, false, "plan.yaml"));
}

TEST(PlanIo, WritePlanPicksTheFormatByFileNameAndReadsBack) {
  const fs::path dir = fs::temp_directory_path() / "autohaap_plan_io_write";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Plan plan = sample_plan();
  for (const char* name : {"plan.json", "PLAN.JSON", "plan.yaml", "plan.out"}) {
    SCOPED_TRACE(name);
    const std::string path = (dir / name).string();
    write_plan(plan, path, 8);
    const std::string text = read_file(path);
    if (is_json_path(path)) {
      EXPECT_EQ(text.front(), '{');
    } else {
      EXPECT_EQ(text.rfind("format: autohaap-plan/1\n", 0), 0u);
    }
    expect_same_plan(plan, read_plan(path));
  }
  fs::remove_all(dir);
}

TEST(PlanIo, ReadingAMissingFileNamesIt) {
  const auto e = input_error_of([] { read_plan("/nonexistent/dir/plan.yaml"); });
  EXPECT_EQ(e.file(), "/nonexistent/dir/plan.yaml");
}

TEST(PlanIo, AListLongerThanAnyPlanIsRefusedBeforeItsItemsAreBuilt) {
  // One stage a layer at most: a file of more stages is refused by its
  // count (a 400,000-stage file took gigabytes before the plan's rules).
  Plan plan = sample_plan();
  plan.stages.resize(1025, plan.stages.front());
  for (const bool json : {true, false}) {
    const std::string text = json ? plan_to_json(plan) : plan_to_yaml(plan);
    const auto e = input_error_of([&] { plan_from_string(text, json, "p"); });
    EXPECT_EQ(e.key(), "stages") << e.what();
    EXPECT_EQ(e.value(), "1025 items") << e.what();
    EXPECT_EQ(e.allowed(), "at most 1024") << e.what();
  }
}

// Every key at every level, with its nesting: JSON and YAML must not drift.
std::set<std::string> key_paths(const YAML::Node& node, const std::string& prefix = "") {
  std::set<std::string> keys;
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key = prefix + "." + entry.first.Scalar();
      keys.insert(key);
      for (const auto& k : key_paths(entry.second, key)) keys.insert(k);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      for (const auto& k : key_paths(node[i], prefix + "[" + std::to_string(i) + "]")) keys.insert(k);
  }
  return keys;
}

TEST(PlanIo, JsonAndYamlHoldTheSameKeys) {
  const Plan plan = sample_plan();
  // JSON is YAML, so one parser reads both.
  const auto json_keys = key_paths(YAML::Load(plan_to_json(plan, 8)));
  const auto yaml_keys = key_paths(YAML::Load(plan_to_yaml(plan, 8)));
  EXPECT_EQ(json_keys, yaml_keys);
  for (const char* key : {".format", ".stages[2].nodes", ".stages[0].layers", ".predicted.stage_memory_GiB",
                          ".search.threads"})
    EXPECT_TRUE(yaml_keys.count(key)) << key;
}

TEST(PlanIo, NodesCountTheNodesEachStageTouches) {
  const Plan plan = sample_plan();
  // One count for all groups: 8 GPUs per node.
  const YAML::Node uniform = YAML::Load(plan_to_yaml(plan, 8))["stages"];
  EXPECT_EQ(uniform[0]["nodes"].as<int>(), 1);  // GPUs 0..7
  EXPECT_EQ(uniform[1]["nodes"].as<int>(), 1);  // GPUs 8..11
  EXPECT_EQ(uniform[2]["nodes"].as<int>(), 2);  // GPUs 0..15

  // Per group from the cluster: the V100 group has 4 GPUs per node.
  ClusterSpec cluster;
  cluster.groups.resize(2);
  cluster.groups[0].gpus_per_node = 8;
  cluster.groups[1].gpus_per_node = 4;
  const YAML::Node per_group = YAML::Load(plan_to_json(plan, cluster))["stages"];
  EXPECT_EQ(per_group[1]["nodes"].as<int>(), 1);
  EXPECT_EQ(per_group[2]["nodes"].as<int>(), 4);

  // A stage straddling a node boundary touches both nodes.
  Plan straddling = plan;
  straddling.stages[1].first_gpu = 6;
  EXPECT_EQ(YAML::Load(plan_to_yaml(straddling, 8))["stages"][1]["nodes"].as<int>(), 2);

  // Without a count the key is left out.
  EXPECT_FALSE(YAML::Load(plan_to_yaml(plan))["stages"][0]["nodes"]);
  EXPECT_FALSE(YAML::Load(plan_to_json(plan))["stages"][0]["nodes"]);
}

TEST(PlanIo, UnsetSectionsAreLeftOutAndReadBackAsDefaults) {
  Plan plan = sample_plan();
  plan.predicted = PredictedPerformance{};
  plan.search = SearchStats{};
  for (bool json : {true, false}) {
    SCOPED_TRACE(json ? "json" : "yaml");
    const std::string text = json ? plan_to_json(plan) : plan_to_yaml(plan);
    EXPECT_EQ(text.find("predicted"), std::string::npos);
    EXPECT_EQ(text.find("search"), std::string::npos);
    expect_same_plan(plan, plan_from_string(text, json, "plan"));
  }
}

// Plan files written before searches proved a bound read as "nothing
// proven": bound 0, gap 1.
TEST(PlanIo, PlansWithoutABoundReadAsNothingProven) {
  const Plan plan = sample_plan();
  for (bool json : {true, false}) {
    SCOPED_TRACE(json ? "json" : "yaml");
    std::istringstream lines(json ? plan_to_json(plan) : plan_to_yaml(plan));
    std::string older, line;
    int dropped = 0;
    while (std::getline(lines, line)) {
      const bool bound = line.find("\"bound_s\"") != std::string::npos || line.find("bound_s:") != std::string::npos;
      const bool gap = line.find("\"gap\"") != std::string::npos || line.find(" gap:") != std::string::npos;
      if (bound || gap) {
        ++dropped;
        continue;
      }
      older += line + "\n";
    }
    ASSERT_EQ(dropped, 2);
    if (json) older = replaced(older, "\"threads\": 16,", "\"threads\": 16");  // now the section's last key
    const Plan read = plan_from_string(older, json, "old-plan");
    EXPECT_EQ(read.search.threads, 16);
    EXPECT_EQ(read.search.bound_s, 0.0);
    EXPECT_EQ(read.search.gap, 1.0);
  }
}

TEST(PlanIo, BoundAndGapMustBeProofs) {
  const std::string json = plan_to_json(sample_plan());
  const InputError gap =
      input_error_of([&] { plan_from_string(replaced(json, "\"gap\": 0.0625", "\"gap\": 1.5"), true, "p.json"); });
  EXPECT_EQ(gap.key(), "search.gap");
  EXPECT_EQ(gap.allowed(), "a number from 0 to 1");
  const InputError bound = input_error_of(
      [&] { plan_from_string(replaced(json, "\"bound_s\": 1.875", "\"bound_s\": -2"), true, "p.json"); });
  EXPECT_EQ(bound.key(), "search.bound_s");
}

// A plan's predictions are read as estimate wrote them: a negative or NaN
// figure (a hand edit, or another tool's output) is refused by key, never
// listed as a valid plan's.
TEST(PlanIo, PredictionsAreFiniteAndNotNegative) {
  Plan plan = sample_plan();
  plan.predicted.iteration_time_s = 2.5;
  plan.predicted.mfu = 0.25;
  const std::string json = plan_to_json(plan);
  EXPECT_NO_THROW(plan_from_string(json, true, "p.json"));
  const InputError time = input_error_of(
      [&] { plan_from_string(replaced(json, "\"iteration_time_s\": 2.5", "\"iteration_time_s\": -5"), true, "p.json"); });
  EXPECT_EQ(time.key(), "predicted.iteration_time_s");
  EXPECT_EQ(time.value(), "-5");
  const std::string yaml = plan_to_yaml(plan);
  const InputError mfu =
      input_error_of([&] { plan_from_string(replaced(yaml, "mfu: 0.25", "mfu: .nan"), false, "p.yaml"); });
  EXPECT_EQ(mfu.key(), "predicted.mfu");
}

// ------------------------------------------------------------ hand-written

// Only the required keys, as a user would write a published configuration.
const std::string kHandWrittenYaml = R"(format: autohaap-plan/1
model: gpt3-1.3b
cluster: mixed-a100-v100
global_batch: 512
micro_batch_size: 4
num_micro_batches: 128
zero: 1
stages:
  - device: a100-80gb
    group: 0
    first_gpu: 0
    gpus: 8
    tp: 4
    dp: 2
    layers: [0, 12]
    recompute: none
  - device: v100-32gb
    group: 1
    first_gpu: 0
    gpus: 16
    tp: 4
    dp: 4
    layers: [12, 24]
    recompute: full
)";

const std::string kHandWrittenJson = R"({
  "format": "autohaap-plan/1",
  "model": "gpt3-1.3b",
  "cluster": "mixed-a100-v100",
  "global_batch": 512,
  "micro_batch_size": 4,
  "num_micro_batches": 128,
  "zero": 1,
  "stages": [
    {"device": "a100-80gb", "group": 0, "first_gpu": 0, "gpus": 8, "tp": 4, "dp": 2,
     "layers": [0, 12], "recompute": "none"},
    {"device": "v100-32gb", "group": 1, "first_gpu": 0, "gpus": 16, "tp": 4, "dp": 4,
     "layers": [12, 24], "recompute": "full"}
  ]
}
)";

void expect_hand_written(const Plan& plan) {
  EXPECT_EQ(plan.model, "gpt3-1.3b");
  EXPECT_EQ(plan.cluster, "mixed-a100-v100");
  EXPECT_EQ(plan.global_batch, 512);
  EXPECT_EQ(plan.micro_batch_size, 4);
  EXPECT_EQ(plan.num_micro_batches, 128);
  EXPECT_EQ(plan.zero, 1);
  ASSERT_EQ(plan.stages.size(), 2u);
  EXPECT_EQ(plan.stages[0].device, "a100-80gb");
  EXPECT_EQ(plan.stages[0].tp, 4);
  EXPECT_EQ(plan.stages[0].dp, 2);
  EXPECT_EQ(plan.stages[0].layer_begin, 0);
  EXPECT_EQ(plan.stages[0].layer_end, 12);
  EXPECT_EQ(plan.stages[0].recompute, Recompute::none);
  EXPECT_EQ(plan.stages[1].group, 1);
  EXPECT_EQ(plan.stages[1].gpus, 16);
  EXPECT_EQ(plan.stages[1].layer_begin, 12);
  EXPECT_EQ(plan.stages[1].layer_end, 24);
  EXPECT_EQ(plan.stages[1].recompute, Recompute::full);
  EXPECT_TRUE(plan.predicted.stage_time_s.empty());
  EXPECT_EQ(plan.predicted.iteration_time_s, 0.0);
  EXPECT_TRUE(plan.search.strategy.empty());
  EXPECT_EQ(plan.num_gpus(), 24);
}

TEST(PlanIo, HandWrittenYamlNeedsOnlyTheInputs) {
  expect_hand_written(plan_from_string(kHandWrittenYaml, false, "hand.yaml"));
}

TEST(PlanIo, HandWrittenJsonNeedsOnlyTheInputs) {
  expect_hand_written(plan_from_string(kHandWrittenJson, true, "hand.json"));
}

TEST(PlanIo, NodesKeyIsIgnoredButMustBeAPositiveCount) {
  const std::string yaml = replaced(kHandWrittenYaml, "    gpus: 16\n", "    nodes: 99\n    gpus: 16\n");
  expect_hand_written(plan_from_string(yaml, false, "hand.yaml"));
  const std::string json = replaced(kHandWrittenJson, R"("gpus": 16,)", R"("nodes": 99, "gpus": 16,)");
  expect_hand_written(plan_from_string(json, true, "hand.json"));
  // Ignored, but not any value: what the writer writes, a positive count.
  for (const char* bad : {"abc", "-1", "0"}) {
    const std::string yaml_bad =
        replaced(kHandWrittenYaml, "    gpus: 16\n", std::string("    nodes: ") + bad + "\n    gpus: 16\n");
    EXPECT_THROW(plan_from_string(yaml_bad, false, "hand.yaml"), InputError) << bad;
  }
}

TEST(PlanIo, AStageOfNoTransformerLayerIsAPipelineStage) {
  // DeepSpeed's partitions can leave a stage the embedding alone: [0, 0),
  // read and written as it is; a plan of one stage must hold the layers.
  const std::string yaml = replaced(replaced(kHandWrittenYaml, "layers: [0, 12]", "layers: [0, 0]"),
                                    "layers: [12, 24]", "layers: [0, 24]");
  const Plan plan = plan_from_string(yaml, false, "edge.yaml");
  EXPECT_EQ(plan.stages[0].num_layers(), 0);
  EXPECT_EQ(plan_from_string(plan_to_json(plan), true, "edge.json").stages[0].num_layers(), 0);
  Plan one = plan;
  one.stages.resize(1);
  const InputError e = input_error_of([&] { check_plan(one, "one.yaml"); });
  EXPECT_EQ(e.key(), "stages[0].layers");
  EXPECT_EQ(e.value(), "[0, 0]");

  // A generic layer list has no embedding or output layer: there a stage
  // of no layer would hold nothing.
  ModelSpec generic;
  generic.name = "gpt3-1.3b", generic.family = ModelFamily::generic, generic.layers = 24, generic.heads = 16;
  generic.seq_len = 2048;
  generic.generic_layers.assign(24, GenericLayer{"l", 1e6, 1.0, 10, 1});
  ClusterSpec cluster = catalog_cluster("mixed-a100-v100");
  cluster.groups[0].device = catalog_device("a100-80gb");  // as the plan has it
  ASSERT_NO_THROW(check_plan_against(plan, catalog_model("gpt3-1.3b"), cluster, catalog_model("gpt3-1.3b").seq_len, "edge.yaml"));
  Plan untensored = plan;  // generic layers are not split over tp
  untensored.micro_batch_size = 16, untensored.num_micro_batches = 32;
  for (StagePlan& s : untensored.stages) s.dp = s.gpus, s.tp = 1;
  const InputError g = input_error_of([&] { check_plan_against(untensored, generic, cluster, generic.seq_len, "edge.yaml"); });
  EXPECT_EQ(g.key(), "stages[0].layers");
  EXPECT_NE(g.allowed().find("generic layers"), std::string::npos) << g.allowed();
}

// ------------------------------------------------------------ bad input

struct BadInput {
  std::string from, to;  // one edit of the good document
  std::string key;       // the key path the error must name
  std::string value;     // the value it must quote
};

void expect_rejected(const std::string& good, bool json, const BadInput& c) {
  SCOPED_TRACE("'" + c.from + "' -> '" + c.to + "'");
  const std::string text = replaced(good, c.from, c.to);
  const auto e = input_error_of([&] { plan_from_string(text, json, "bad-plan"); });
  EXPECT_EQ(e.file(), "bad-plan");
  EXPECT_EQ(e.key(), c.key) << e.what();
  EXPECT_EQ(e.value(), c.value) << e.what();
  EXPECT_FALSE(e.allowed().empty()) << e.what();
}

TEST(PlanIo, BadYamlNamesTheKeyAndValue) {
  const std::vector<BadInput> cases = {
      {"format: autohaap-plan/1", "format: autohaap-plan/2", "format", "autohaap-plan/2"},
      {"format: autohaap-plan/1\n", "", "format", "<missing>"},
      {"model: gpt3-1.3b\n", "", "model", "<missing>"},
      {"global_batch: 512", "global_batch: lots", "global_batch", "lots"},
      {"global_batch: 512", "global_batch: 0", "global_batch", "0"},
      {"zero: 1", "zero: 4", "zero", "4"},
      {"zero: 1\n", "zero: 1\nextra: 3\n", "extra", "extra"},
      {"stages:\n", "stages: 3\nignored:\n", "stages", "3"},
      {"tp: 4\n    dp: 4", "tp: four\n    dp: 4", "stages[1].tp", "four"},
      {"tp: 4\n    dp: 4", "tp: \"4\"\n    dp: 4", "stages[1].tp", "4"},
      {"tp: 4\n    dp: 4", "tp: 4.0\n    dp: 4", "stages[1].tp", "4.0"},
      {"tp: 4\n    dp: 4", "tp: 0\n    dp: 4", "stages[1].tp", "0"},
      {"dp: 4", "dp: -1", "stages[1].dp", "-1"},
      {"gpus: 8", "gpus: 6", "stages[0].gpus", "6"},
      {"    group: 0\n", "", "stages[0].group", "<missing>"},
      {"first_gpu: 0\n    gpus: 16", "first_gpu: -2\n    gpus: 16", "stages[1].first_gpu", "-2"},
      {"layers: [12, 24]", "layers: [12, 11]", "stages[1].layers", "[12, 11]"},
      {"layers: [0, 12]", "layers: [0]", "stages[0].layers", "[0]"},
      {"layers: [0, 12]", "layers: 12", "stages[0].layers", "12"},
      {"layers: [0, 12]", "layers: [0, x]", "stages[0].layers[1]", "x"},
      {"recompute: full", "recompute: partial", "stages[1].recompute", "partial"},
      {"    recompute: none\n", "    recompute: none\n    pp: 2\n", "stages[0].pp", "pp"},
  };
  for (const auto& c : cases) expect_rejected(kHandWrittenYaml, false, c);
}

TEST(PlanIo, BadJsonNamesTheKeyAndValue) {
  const std::vector<BadInput> cases = {
      {R"("format": "autohaap-plan/1")", R"("format": "autohaap-model/1")", "format", "autohaap-model/1"},
      {R"("model": "gpt3-1.3b",)", "", "model", "<missing>"},
      {R"("global_batch": 512)", R"("global_batch": 512.5)", "global_batch", "512.5"},
      {R"("tp": 4, "dp": 4)", R"("tp": "4", "dp": 4)", "stages[1].tp", "4"},
      {R"("tp": 4, "dp": 2,)", R"("tp": 4,)", "stages[0].dp", "<missing>"},
      {R"("tp": 4, "dp": 4)", R"("tp": 0, "dp": 4)", "stages[1].tp", "0"},
      {R"("gpus": 8)", R"("gpus": 6)", "stages[0].gpus", "6"},
      {R"("layers": [0, 12])", R"("layers": [0, 12, 24])", "stages[0].layers", "[0, 12, 24]"},
      {R"("layers": [0, 12])", R"("layers": [12, 0])", "stages[0].layers", "[12, 0]"},
      {R"("layers": [0, 12])", R"("layers": "0-12")", "stages[0].layers", "0-12"},
      {R"("recompute": "full")", R"("recompute": "some")", "stages[1].recompute", "some"},
      {R"("recompute": "none")", R"("recompute": "none", "pp": 2)", "stages[0].pp", "pp"},
      {R"("zero": 1,)", R"("zero": 1, "extra": true,)", "extra", "extra"},
      {R"("zero": 1,)", R"("zero": 1, "predicted": 5,)", "predicted", "5"},
      {R"("zero": 1,)", R"("zero": 1, "search": {"strategy": "x"},)", "search.evaluated", "<missing>"},
  };
  for (const auto& c : cases) expect_rejected(kHandWrittenJson, true, c);

  // Whole-list shapes, edited apart from the table: a list that is not one.
  const auto not_a_list = input_error_of([&] {
    std::string text = kHandWrittenJson;
    text.replace(text.find("\"stages\": ["), text.size(), "\"stages\": {}}");
    plan_from_string(text, true, "bad-plan");
  });
  EXPECT_EQ(not_a_list.key(), "stages");
  const auto not_a_stage = input_error_of([&] {
    std::string text = kHandWrittenJson;
    text.replace(text.find("\"stages\": ["), text.size(), "\"stages\": [5]}");
    plan_from_string(text, true, "bad-plan");
  });
  EXPECT_EQ(not_a_stage.key(), "stages[0]");
  EXPECT_EQ(not_a_stage.value(), "5");
}

TEST(PlanIo, NamesWithANulAreRefusedInBothFormats) {
  // A YAML plan with a NUL in a name (a raw byte or "\0") was accepted; the
  // JSON written for it then read back cut short at the NUL ("\u0000").
  using namespace std::string_literals;
  const std::vector<std::pair<std::string, std::string>> yaml_names = {
      {"device: a100-80gb", "device: \"a1\\000-80gb\""},
      {"device: a100-80gb", "device: a1\0\x30-80gb"s},
      {"model: gpt3-1.3b", "model: \"gpt3\\0\""},
      {"cluster: mixed-a100-v100", "cluster: \"\\0\""},
  };
  for (const auto& [from, to] : yaml_names) {
    SCOPED_TRACE(to);
    const auto e = input_error_of([&] { plan_from_string(replaced(kHandWrittenYaml, from, to), false, "p.yaml"); });
    EXPECT_NE(e.allowed().find("without NUL characters"), std::string::npos) << e.what();
  }
  // In JSON any string with a NUL is refused where it stands, not cut short.
  const auto json = input_error_of([&] {
    plan_from_string(replaced(kHandWrittenJson, R"("a100-80gb")", R"("a100-80gb\u0000")"), true, "p.json");
  });
  EXPECT_EQ(json.value(), "line 10, column 33: a string with a NUL character (\\u0000)");
  EXPECT_EQ(json.allowed(), "strings without NUL characters");
  // A plan built in code is held to the same rule, its strategy name too.
  Plan plan = sample_plan();
  plan.search.strategy = "auto\0haap"s;
  EXPECT_EQ(input_error_of([&] { check_plan(plan, "p"); }).key(), "search.strategy");
}

TEST(PlanIo, OptionalSectionsAreCheckedWhenPresent) {
  const Plan plan = sample_plan();
  for (bool json : {true, false}) {
    SCOPED_TRACE(json ? "json" : "yaml");
    const std::string good = json ? plan_to_json(plan) : plan_to_yaml(plan);
    const std::string mfu = json ? "\"mfu\": 0.4321" : "mfu: 0.4321";
    const std::string bad_mfu = json ? "\"mfu\": \"high\"" : "mfu: high";
    expect_rejected(good, json, {mfu, bad_mfu, "predicted.mfu", "high"});
    const std::string ranks = json ? "\"ranks\": 4" : "ranks: 4";
    const std::string bad_ranks = json ? "\"ranks\": 0" : "ranks: 0";
    expect_rejected(good, json, {ranks, bad_ranks, "search.ranks", "0"});
    const std::string times = json ? "\"stage_time_s\": [\n      0.1," : "stage_time_s: [0.1, ";
    const std::string fewer = json ? "\"stage_time_s\": [" : "stage_time_s: [";
    expect_rejected(good, json, {times, fewer, "predicted.stage_time_s", "2 entries"});
  }
}

TEST(PlanIo, NestingBombsAreRefusedByTheirLimit) {
  // Nested deeper than any plan may be: refused by name before any
  // recursive reader or renderer walks the document (a stack overflow before).
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  const auto json = input_error_of([&] { plan_from_string(nested(300000), true, "bomb.json"); });
  EXPECT_EQ(json.file(), "bomb.json");
  EXPECT_EQ(json.value(), "line 1, column 65: arrays and objects nested deeper than 64 levels");
  EXPECT_EQ(json.allowed(), "JSON nested at most 64 levels deep");
  const auto inside = input_error_of(
      [&] { plan_from_string("{\"format\": \"autohaap-plan/1\", \"stages\": " + nested(300000) + "}", true, "b.json"); });
  EXPECT_EQ(inside.allowed(), "JSON nested at most 64 levels deep");
  // The limit itself is fine as JSON; the plan reader then says what is wrong.
  EXPECT_EQ(input_error_of([&] { plan_from_string(nested(64), true, "deep.json"); }).allowed(),
            "a JSON object (format: autohaap-plan/1)");

  const auto yaml = input_error_of([&] { plan_from_string("stages: " + nested(100000), false, "bomb.yaml"); });
  EXPECT_EQ(yaml.file(), "bomb.yaml");
  EXPECT_EQ(yaml.key().rfind("line 1, column ", 0), 0u) << yaml.what();
  EXPECT_NE(yaml.value().find("nested"), std::string::npos) << yaml.what();
  EXPECT_NE(yaml.allowed().find("YAML nested less than"), std::string::npos) << yaml.what();
}

TEST(PlanIo, CountsStayWithinTheSpecsBounds) {
  // A plan read without its specs (report, export) is held to the same
  // bounds: a billion micro-batches once reached the report's drawing.
  auto key_of = [](const std::function<void(Plan&)>& change) {
    Plan plan = sample_plan();
    change(plan);
    return input_error_of([&] { check_plan(plan, "p.yaml"); }).key();
  };
  EXPECT_EQ(key_of([](Plan& p) { p.global_batch = 1000000000; }), "global_batch");
  EXPECT_EQ(key_of([](Plan& p) { p.num_micro_batches = 1000000000; }), "num_micro_batches");
  EXPECT_EQ(key_of([](Plan& p) { p.stages[0].dp = 1 << 30; }), "stages[0].dp");
  EXPECT_EQ(key_of([](Plan& p) { p.stages[0].layer_end = 2147483647; }), "stages[0].layers");
}

TEST(PlanIo, SyntaxErrorsGiveTheLine) {
  const auto yaml = input_error_of([] { plan_from_string("format: [autohaap\nmodel: x\n", false, "p.yaml"); });
  EXPECT_EQ(yaml.file(), "p.yaml");
  EXPECT_EQ(yaml.key().rfind("line ", 0), 0u) << yaml.what();
  EXPECT_EQ(yaml.allowed(), "well-formed YAML");

  const auto json = input_error_of([] { plan_from_string("{\n\"format\": \"x\"\n\"model\": 1}", true, "p.json"); });
  EXPECT_EQ(json.file(), "p.json");
  EXPECT_NE(json.value().find("line 3"), std::string::npos) << json.what();
  EXPECT_EQ(json.allowed(), "well-formed JSON");

  EXPECT_EQ(input_error_of([] { plan_from_string("", false, "empty.yaml"); }).value(), "an empty document");
  EXPECT_EQ(input_error_of([] { plan_from_string("[1, 2]", true, "list.json"); }).value(), "[1,2]");
  EXPECT_EQ(input_error_of([] { plan_from_string("- 1\n", false, "list.yaml"); }).key(), "");
}

// ------------------------------------------------------------ embedded specs

// The sample plan's problem, its model, cluster and training from the
// catalog, the cluster and training changed the way YAML files do.
Problem sample_problem() {
  Problem p;
  p.model = catalog_model("gpt3-1.3b");
  p.cluster = catalog_cluster("mixed-a100-v100");
  p.cluster.groups[0].device.name = "a100-80gb";  // the sample plan's devices
  p.cluster.groups[0].device.gemm_efficiency[0].efficiency = 0.1 + 0.2;
  p.cluster.groups[1].device.name = "v100-32gb";
  p.cluster.groups[1].device.peak_fp8_tflops = 0;
  p.cluster.groups[1].nodes = 4;
  p.cluster.groups[1].gpus_per_node = 4;
  p.cluster.groups[1].nics_per_node = 2;  // a measured fabric, on two NICs a node
  p.cluster.groups[1].inter_node_busbw_GBps = 3.5;
  p.training.global_batch = 512;
  p.training.precision = Precision::fp8;
  p.training.grad_reduce_dtype = Precision::bf16;
  p.training.micro_batch_sizes = {1, 3};
  return p;
}

TEST(PlanIo, EmbeddedSpecsReadBackAsTheSpecsWritten) {
  const Problem problem = sample_problem();
  for (bool json : {true, false}) {
    SCOPED_TRACE(json ? "json" : "yaml");
    const std::string text = json ? plan_to_json(sample_plan(), problem) : plan_to_yaml(sample_plan(), problem);
    const Plan back = plan_from_string(text, json, "plan");
    expect_same_plan(sample_plan(), back);
    ASSERT_TRUE(back.specs.has_value());
    EXPECT_EQ(canonical_text(back.specs->model), canonical_text(problem.model));
    EXPECT_EQ(canonical_text(back.specs->cluster), canonical_text(problem.cluster));
    EXPECT_EQ(canonical_text(back.specs->training), canonical_text(problem.training));
    // The fingerprints written are those of the specs.
    const YAML::Node doc = YAML::Load(text);
    EXPECT_EQ(doc["specs"]["fingerprints"]["cluster"].as<std::string>(), spec_fingerprint(problem.cluster));
    // Each stage's node count comes from the embedded cluster.
    EXPECT_EQ(doc["stages"][2]["nodes"].as<int>(), 4);
    // Written again, the same text.
    EXPECT_EQ(json ? plan_to_json(back) : plan_to_yaml(back), text);
  }
}

TEST(PlanIo, EmbeddedSpecsAreTheirYamlFiles) {
  // specs.cluster saved as a file is a cluster file: the same cluster.
  const Problem problem = sample_problem();
  const YAML::Node specs = YAML::Load(plan_to_yaml(sample_plan(), problem))["specs"];
  const fs::path dir = fs::temp_directory_path() / "autohaap_plan_io_specs";
  fs::create_directories(dir);
  const std::string path = (dir / "c.yaml").string();
  YAML::Emitter out;
  out << specs["cluster"];
  write_file_atomically(path, out.c_str());
  EXPECT_EQ(canonical_text(load_cluster(path)), canonical_text(problem.cluster));
  fs::remove_all(dir);
}

TEST(PlanIo, EmbeddedSpecsMustNameThePlansModelAndCluster) {
  Problem problem = sample_problem();
  problem.model.name = "gpt3-2.7b";
  const auto e = input_error_of([&] { plan_from_string(plan_to_yaml(sample_plan(), problem), false, "p.yaml"); });
  EXPECT_EQ(e.key(), "specs.model.name");
  EXPECT_EQ(e.value(), "gpt3-2.7b");
  // An invalid embedded spec is refused by its key path.
  const std::string good = plan_to_yaml(sample_plan(), sample_problem());
  const auto bad = input_error_of([&] { plan_from_string(replaced(good, "  training:\n    global_batch: 512",
                                                                   "  training:\n    global_batch: -1"),
                                                          false, "p.yaml"); });
  EXPECT_EQ(bad.key(), "specs.training.global_batch");
  // So is a model whose fields disagree with each other (checked after
  // each key alone): it was named "hidden", without where it sits.
  const Problem sample = sample_problem();
  const std::string heads = "    heads: " + std::to_string(sample.model.heads) + "\n";
  ASSERT_NE(good.find(heads), std::string::npos);
  const auto uneven = input_error_of([&] { plan_from_string(replaced(good, heads, "    heads: 30\n"), false, "p.yaml"); });
  EXPECT_EQ(uneven.key(), "specs.model.hidden");
}

TEST(PlanIo, EmbeddedFingerprintsAreCheckedAsWritten) {
  // Read back to say which spec was edited since the plan was written: a
  // key given twice, an unknown one or a value not 16 hex digits would only
  // make that note wrong, so each is refused by its key path.
  const Problem problem = sample_problem();
  const std::string good = plan_to_yaml(sample_plan(), problem);
  const std::string model = spec_fingerprint(problem.model);
  const std::string line = "    model: " + model + "\n";
  ASSERT_NE(good.find(line), std::string::npos);
  const auto twice = input_error_of(
      [&] { plan_from_string(replaced(good, line, line + "    model: 0000000000000000\n"), false, "p.yaml"); });
  EXPECT_EQ(twice.key(), "specs.fingerprints.model");
  const auto unknown =
      input_error_of([&] { plan_from_string(replaced(good, line, line + "    foo: 3\n"), false, "p.yaml"); });
  EXPECT_EQ(unknown.key(), "specs.fingerprints.foo");
  const auto not_hex =
      input_error_of([&] { plan_from_string(replaced(good, line, "    model: not-hex\n"), false, "p.yaml"); });
  EXPECT_EQ(not_hex.key(), "specs.fingerprints.model");
  EXPECT_EQ(not_hex.value(), "not-hex");
  EXPECT_EQ(not_hex.allowed(), "16 hex digits (0-9, a-f), as the plan was written");
}

// A file's node count is the one its GPUs touch: a hand-edited `nodes:
// 100` on one node's GPUs was read, ignored and written back as 1.
TEST(PlanIo, AStatedNodeCountIsTheOneTheGpusTouch) {
  ClusterSpec cluster = catalog_cluster("mixed-a100-v100");
  cluster.groups[0].device = catalog_device("a100-80gb");  // as the plan has it
  const ModelSpec model = catalog_model("gpt3-1.3b");
  const std::string right = replaced(kHandWrittenYaml, "    gpus: 16\n", "    nodes: 2\n    gpus: 16\n");
  EXPECT_NO_THROW(check_plan_against(plan_from_string(right, false, "p.yaml"), model, cluster, model.seq_len, "p.yaml"));
  const std::string wrong = replaced(kHandWrittenYaml, "    gpus: 16\n", "    nodes: 100\n    gpus: 16\n");
  const InputError e = input_error_of(
      [&] { check_plan_against(plan_from_string(wrong, false, "p.yaml"), model, cluster, model.seq_len, "p.yaml"); });
  EXPECT_EQ(e.key(), "stages[1].nodes");
  EXPECT_EQ(e.value(), "100");
  EXPECT_NE(e.allowed().find("2 (the nodes of 8 GPUs that GPUs 0..15 of group 1 touch)"), std::string::npos)
      << e.allowed();
}

TEST(PlanIo, UnknownKeysAreRefusedWithAHint) {
  // The keys allowed are the schema's, the file-only `nodes` included.
  const auto e = input_error_of(
      [&] { plan_from_string(replaced(kHandWrittenYaml, "    gpus: 16\n", "    node: 4\n    gpus: 16\n"), false, "p"); });
  EXPECT_EQ(e.key(), "stages[1].node");
  EXPECT_EQ(e.value(), "node");  // the key, as model and cluster files say it
  EXPECT_NE(e.allowed().find("did you mean 'nodes'?"), std::string::npos) << e.what();
  // A key of three letters is hinted one edit away (`vp` had no hint).
  const auto short_key =
      input_error_of([&] { plan_from_string(replaced(kHandWrittenYaml, "zero: 1\n", "zero: 1\nvp: 4\n"), false, "p"); });
  EXPECT_EQ(short_key.key(), "vp");
  EXPECT_NE(short_key.allowed().find("did you mean 'vpp'?"), std::string::npos) << short_key.what();
  // A required key written with a typo is named as written, not as a
  // missing key.
  const auto required = input_error_of([&] {
    plan_from_string(replaced(kHandWrittenYaml, "num_micro_batches:", "num_micro_batchs:"), false, "p");
  });
  EXPECT_EQ(required.key(), "num_micro_batchs");
  EXPECT_NE(required.allowed().find("did you mean 'num_micro_batches'?"), std::string::npos) << required.what();
  const auto root = input_error_of(
      [&] { plan_from_string(replaced(kHandWrittenJson, R"("zero": 1,)", R"("zero": 1, "spec": {},)"), true, "p"); });
  EXPECT_EQ(root.key(), "spec");
  EXPECT_NE(root.allowed().find("did you mean 'specs'?"), std::string::npos) << root.what();
}

TEST(PlanIo, AMergeKeyIsNamedNotTheKeyItWouldHaveGiven) {
  // `<<: *first` is an ordinary key to YAML 1.2: the stage lacks what it
  // would merge, and the error names the merge key, not '<missing>'.
  const std::string text = replaced(replaced(kHandWrittenYaml, "  - device: a100-80gb\n", "  - &first\n    device: a100-80gb\n"),
                                    "  - device: v100-32gb\n    group: 1\n", "  - <<: *first\n    group: 1\n");
  const auto e = input_error_of([&] { plan_from_string(text, false, "p"); });
  EXPECT_EQ(e.key(), "stages[1].<<");
  EXPECT_NE(e.allowed().find("merge keys (<<) are not read"), std::string::npos) << e.what();
}

TEST(PlanIo, AnIntegerPastItsTypeSaysTheRange) {
  const auto e = input_error_of([&] {
    plan_from_string(replaced(kHandWrittenYaml, "    gpus: 16\n", "    gpus: 4611686018427387904\n"), false, "p");
  });
  EXPECT_EQ(e.key(), "stages[1].gpus");
  EXPECT_NE(e.allowed().find("of at most 2147483647 in magnitude"), std::string::npos) << e.what();
}

TEST(PlanIo, KeysGivenTwiceAreRefused) {
  const auto yaml = input_error_of(
      [&] { plan_from_string(replaced(kHandWrittenYaml, "zero: 1\n", "zero: 1\nzero: 2\n"), false, "p.yaml"); });
  EXPECT_EQ(yaml.key(), "zero");
  const auto json = input_error_of(
      [&] { plan_from_string(replaced(kHandWrittenJson, R"("zero": 1,)", R"("zero": 1, "zero": 2,)"), true, "p.json"); });
  EXPECT_EQ(json.key(), "zero");
}

TEST(PlanIo, JsonKeepsItsTypes) {
  // A JSON number is not a name, nor 4.0 an integer.
  expect_rejected(kHandWrittenJson, true, {R"("model": "gpt3-1.3b")", R"("model": 13)", "model", "13"});
  expect_rejected(kHandWrittenJson, true, {R"("tp": 4, "dp": 2)", R"("tp": 4.0, "dp": 2)", "stages[0].tp", "4.0"});
  expect_rejected(kHandWrittenJson, true, {R"("zero": 1,)", R"("zero": true,)", "zero", "true"});
}

// ------------------------------------------------------------ against specs

class PlanAgainstSpecs : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_ = sample_plan();
    model_.name = "gpt3-1.3b";
    model_.family = ModelFamily::gpt;
    model_.layers = 24;
    model_.hidden = 2048;
    model_.heads = 16;
    model_.kv_heads = 16;
    cluster_.name = "mixed-a100-v100";
    cluster_.groups.resize(2);
    cluster_.groups[0].device.name = "a100-80gb";
    cluster_.groups[0].nodes = 2;
    cluster_.groups[0].gpus_per_node = 8;
    cluster_.groups[1].device.name = "v100-32gb";
    cluster_.groups[1].nodes = 4;
    cluster_.groups[1].gpus_per_node = 4;
  }

  // The key path of the error check_plan_against raises, "" for none.
  std::string rejected_key() {
    try {
      check_plan_against(plan_, model_, cluster_, model_.seq_len, "plan.yaml");
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "plan.yaml");
      return e.key();
    }
    return "";
  }

  void set_degrees(std::size_t stage, int tp, int dp) {
    plan_.stages[stage].tp = tp;
    plan_.stages[stage].dp = dp;
    plan_.stages[stage].gpus = tp * dp;
  }

  Plan plan_;
  ModelSpec model_;
  ClusterSpec cluster_;
};

TEST_F(PlanAgainstSpecs, TheSamplePlanFits) { EXPECT_EQ(rejected_key(), ""); }

TEST_F(PlanAgainstSpecs, NamesMustMatchAndTheErrorNamesBoth) {
  plan_.model = "gpt3-2.7b";
  const auto e = input_error_of([&] { check_plan_against(plan_, model_, cluster_, model_.seq_len, "plan.yaml"); });
  EXPECT_EQ(e.key(), "model");
  EXPECT_NE(std::string(e.what()).find("gpt3-2.7b"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("gpt3-1.3b"), std::string::npos);
  plan_.model = model_.name;
  plan_.cluster = "other";
  EXPECT_EQ(rejected_key(), "cluster");
}

TEST_F(PlanAgainstSpecs, BatchMustBeMicroBatchTimesCount) {
  plan_.num_micro_batches = 100;
  EXPECT_EQ(rejected_key(), "global_batch");
}

TEST_F(PlanAgainstSpecs, LayersRunContiguouslyOverTheWholeModel) {
  plan_.stages[0].layer_begin = 1;
  EXPECT_EQ(rejected_key(), "stages[0].layers");
  SetUp();
  plan_.stages[1].layer_begin = 11;  // gap after stage 0
  EXPECT_EQ(rejected_key(), "stages[1].layers");
  SetUp();
  plan_.stages[1].layer_begin = 9;  // overlaps stage 0
  EXPECT_EQ(rejected_key(), "stages[1].layers");
  SetUp();
  plan_.stages[2].layer_end = 23;  // last layer left out
  EXPECT_EQ(rejected_key(), "stages[2].layers");
  SetUp();
  plan_.stages[2].layer_end = 25;  // past the model
  EXPECT_EQ(rejected_key(), "stages[2].layers");
}

TEST_F(PlanAgainstSpecs, StageMustSitOnItsGroupsDevice) {
  plan_.stages[2].group = 2;
  EXPECT_EQ(rejected_key(), "stages[2].group");
  SetUp();
  plan_.stages[2].device = "a100-80gb";
  EXPECT_EQ(rejected_key(), "stages[2].device");
}

TEST_F(PlanAgainstSpecs, GpusMustLieInsideTheGroupWithoutOverlap) {
  plan_.stages[1].first_gpu = 14;  // 14..17 of a 16-GPU group
  EXPECT_EQ(rejected_key(), "stages[1].first_gpu");
  SetUp();
  plan_.stages[1].first_gpu = 4;  // 4..7 overlaps stage 0's 0..7
  const auto e = input_error_of([&] { check_plan_against(plan_, model_, cluster_, model_.seq_len, "plan.yaml"); });
  EXPECT_EQ(e.key(), "stages[1].first_gpu");
  EXPECT_NE(e.allowed().find("stages[0]"), std::string::npos) << e.what();
  SetUp();
  // The same GPU numbers in another group are other GPUs.
  plan_.stages[1].first_gpu = 8;
  plan_.stages[2].first_gpu = 0;
  EXPECT_EQ(rejected_key(), "");
}

TEST_F(PlanAgainstSpecs, TensorParallelismStaysInsideANode) {
  set_degrees(0, 3, 2);  // 3 does not divide 8 GPUs per node
  EXPECT_EQ(rejected_key(), "stages[0].tp");
  SetUp();
  set_degrees(2, 8, 2);  // the V100 nodes hold 4 GPUs
  EXPECT_EQ(rejected_key(), "stages[2].tp");
  SetUp();
  set_degrees(2, 4, 1);
  plan_.stages[2].first_gpu = 2;  // GPUs 2..5 cross from node 0 to node 1
  EXPECT_EQ(rejected_key(), "stages[2].first_gpu");
  SetUp();
  set_degrees(2, 2, 2);
  // Pairs 2..3 and 4..5 each inside a node, but the stage's 4 GPUs across
  // two nodes of 4 from the middle of one: its data-parallel ring priced
  // as inside a node crosses two.
  plan_.stages[2].first_gpu = 2;
  EXPECT_EQ(rejected_key(), "stages[2].first_gpu");
  SetUp();
  set_degrees(2, 2, 1);
  plan_.stages[2].first_gpu = 2;  // 2..3, inside node 0
  EXPECT_EQ(rejected_key(), "");
}

TEST_F(PlanAgainstSpecs, TensorParallelismDividesTheHeads) {
  model_.heads = 6;
  model_.kv_heads = 6;
  EXPECT_EQ(rejected_key(), "stages[0].tp");
  SetUp();
  model_.kv_heads = 2;  // grouped-query attention: 2 KV heads over tp=4
  EXPECT_EQ(rejected_key(), "stages[0].tp");
  SetUp();
  model_.family = ModelFamily::generic;
  EXPECT_EQ(rejected_key(), "stages[0].tp");
}

TEST_F(PlanAgainstSpecs, MicroBatchSplitsEvenlyOverReplicas) {
  plan_.micro_batch_size = 2;
  plan_.num_micro_batches = 256;
  EXPECT_EQ(rejected_key(), "stages[2].dp");  // dp 4 cannot share 2 sequences
}

TEST_F(PlanAgainstSpecs, SelfConsistencyIsCheckedFirst) {
  plan_.stages[1].gpus = 5;
  EXPECT_EQ(rejected_key(), "stages[1].gpus");
}

}  // namespace
}  // namespace autohaap
