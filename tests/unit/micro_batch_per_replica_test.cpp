// micro_batch_per_replica: micro_batch_sizes as sequences per data-parallel
// replica, so B = b * dp follows the data parallelism a large cluster needs
// (search_space.hpp, searched_micro_batches). Off by default: the default
// space, files and fingerprints are unchanged.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/spec_fingerprint.hpp"

namespace autohaap {
namespace {

Problem gpt_on(int nodes, bool per_replica) {
  Problem p;
  p.model = catalog_model("gpt3-1.3b");
  p.cluster.name = "a100x" + std::to_string(nodes);
  p.cluster.groups = {make_node_group(catalog_device("a100-80gb"), nodes, 8)};
  p.cluster.inter_group_GBps = 12.5;
  p.training.global_batch = 512;
  p.training.micro_batch_per_replica = per_replica;
  return p;
}

SearchResult search(const Problem& problem) {
  SearchOptions options;
  options.threads = 2;
  return run_search(problem, options);
}

TEST(MicroBatchPerReplica, DefaultListIsBPerPipeline) {
  Problem p = gpt_on(1, false);
  p.training.micro_batch_sizes = {4, 1, 2};
  EXPECT_EQ(searched_micro_batches(p), (std::vector<int>{1, 2, 4}));
}

// One node of 8 GPUs: stage sizes 1, 2, 4, 8, so dp in {1, 2, 4, 8};
// b in {1, 3}: B in {1, 2, 4, 8} and {3, 6, 12, 24}, kept where B divides
// the global batch: all of them for 48, only the powers of two for 16.
TEST(MicroBatchPerReplica, PerReplicaTimesEveryDpThatDividesTheGlobalBatch) {
  Problem p = gpt_on(1, true);
  p.training.micro_batch_sizes = {1, 3};
  p.training.global_batch = 48;
  EXPECT_EQ(searched_micro_batches(p), (std::vector<int>{1, 2, 3, 4, 6, 8, 12, 24}));
  p.training.global_batch = 16;  // 3, 6, 12, 24 do not divide 16
  EXPECT_EQ(searched_micro_batches(p), (std::vector<int>{1, 2, 4, 8}));
}

// GPT-3 1.3B on 1024 A100s: with the per-pipeline list dp stays <= 8 per
// stage; per replica B grows with dp and the plan is faster.
TEST(MicroBatchPerReplica, ThousandGpusFeasibleAndFasterPerReplica) {
  const SearchResult pipeline = search(gpt_on(128, false)), replica = search(gpt_on(128, true));
  ASSERT_FALSE(replica.top.empty());
  ASSERT_FALSE(pipeline.top.empty());
  EXPECT_EQ(replica.top[0].num_gpus(), 1024);
  EXPECT_GT(replica.top[0].micro_batch_size, 8);
  EXPECT_LT(replica.top[0].predicted.iteration_time_s, pipeline.top[0].predicted.iteration_time_s);
}

// 8, 16, 32, 64 GPUs at one global batch: more GPUs never give a slower
// best plan, and per replica never slower than per pipeline (its list
// holds the default's B for dp = 1).
TEST(MicroBatchPerReplica, MoreGpusNeverSlower) {
  double previous = 1e300;
  for (int nodes : {1, 2, 4, 8}) {
    const SearchResult r = search(gpt_on(nodes, true)), d = search(gpt_on(nodes, false));
    ASSERT_FALSE(r.top.empty()) << nodes;
    ASSERT_FALSE(d.top.empty()) << nodes;
    const double t = r.top[0].predicted.iteration_time_s;
    EXPECT_LE(t, previous) << nodes << " nodes";
    EXPECT_LE(t, d.top[0].predicted.iteration_time_s) << nodes << " nodes";
    previous = t;
  }
}

// Models a node's worth of tp cannot serve: a layer list (tp 1) and a GPT
// of odd sequence length with 12 heads (tp at most 4, no cp). On 2 to 16
// nodes a power-of-two group was offered whole only, more than any plan of
// them fills: 8 and 16 nodes had no plan. Each now has one, never slower
// with more nodes.
TEST(MicroBatchPerReplica, ModelsThatCannotFillANodeKeepAPlanOnMoreNodes) {
  ModelSpec odd = catalog_model("gpt3-125m");
  odd.seq_len = 2047;
  for (const ModelSpec& model : {catalog_model("lstm-2layer-lm"), odd}) {
    double previous = 1e300;
    for (const int nodes : {2, 4, 8, 16}) {
      Problem p = gpt_on(nodes, false);
      p.model = model;
      const SearchResult r = search(p);
      ASSERT_FALSE(r.top.empty()) << model.name << " on " << nodes << " nodes: " << r.infeasible_reason;
      const double t = r.top[0].predicted.iteration_time_s;
      EXPECT_LE(t, previous * (1 + 1e-12)) << model.name << " on " << nodes << " nodes";
      previous = t;
    }
  }
}

TEST(MicroBatchPerReplica, ReadWrittenAndFingerprintedOnlyWhenSet) {
  const std::string path = testing::TempDir() + "per_replica_training.yaml";
  {
    std::ofstream f(path);
    f << "global_batch: 64\nmicro_batch_sizes: [1, 2]\nmicro_batch_per_replica: true\n";
  }
  const TrainingSpec t = load_training(path);
  EXPECT_TRUE(t.micro_batch_per_replica);
  TrainingSpec off = t;
  off.micro_batch_per_replica = false;
  EXPECT_NE(spec_fingerprint(t), spec_fingerprint(off));
  EXPECT_EQ(canonical_text(off).find("micro_batch_per_replica"), std::string::npos);
  {
    std::ofstream f(path);
    f << "micro_batch_per_replica: 3\n";
  }
  EXPECT_THROW(load_training(path), InputError);
  std::remove(path.c_str());

  // A plan file carries it in its specs, and reads it back.
  Problem p = gpt_on(1, true);
  const SearchResult r = search(p);
  ASSERT_FALSE(r.top.empty());
  const std::string yaml = plan_to_yaml(r.top[0], p);
  const Plan back = plan_from_string(yaml, false, "plan.yaml");
  ASSERT_TRUE(back.specs);
  EXPECT_TRUE(back.specs->training.micro_batch_per_replica);
  p.training.micro_batch_per_replica = false;
  EXPECT_EQ(plan_to_yaml(r.top[0], p).find("micro_batch_per_replica"), std::string::npos);
}

}  // namespace
}  // namespace autohaap
