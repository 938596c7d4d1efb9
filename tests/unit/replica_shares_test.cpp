// Batch shares of a stage's replica sets (search/replica_shares.hpp): the
// dynamic programme against every share vector, priced by the real cost
// model the way it prices a stage (CostModel::stage: pace = the slowest
// set's time with its sends, fit = every set's); and a case checked by hand.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/search/replica_shares.hpp"
#include "plan_fixtures.hpp"

namespace autohaap {
namespace {

using testing_fixtures::make_stage;

struct Best {
  double pace = std::numeric_limits<double>::infinity();
  std::vector<std::vector<int>> vectors;  // every share vector reaching it
  int infeasible = 0;                     // vectors some set of which does not fit
};

// Every vector of sequences n_k = q_k r_k, q_k >= 1, summing to B, each
// written into the plan and priced by CostModel::stage.
Best brute_force(const CostModel& model, Plan plan, int i) {
  const StagePlan& s = plan.stages[i];
  std::vector<int> r;
  for (std::size_t k = 0; k < s.replicas.size(); ++k) r.push_back(s.set_replicas(k));
  const int B = plan.micro_batch_size;
  Best best;
  std::vector<int> n(r.size());
  std::function<void(std::size_t, int)> visit = [&](std::size_t k, int left) {
    if (k + 1 == r.size()) {
      if (left < r[k] || left % r[k] != 0) return;
      n[k] = left;
      for (std::size_t j = 0; j < n.size(); ++j) plan.stages[i].replicas[j].sequences = n[j];
      const StageEstimate e = model.stage(plan, i);
      if (!e.fits()) {
        ++best.infeasible;
        return;
      }
      const double pace = e.pace_s();
      if (pace < best.pace) best.pace = pace, best.vectors.clear();
      if (pace == best.pace) best.vectors.push_back(n);
      return;
    }
    for (int q = 1; q * r[k] <= left; ++q) {
      n[k] = q * r[k];
      visit(k + 1, left - n[k]);
    }
  };
  visit(0, B);
  return best;
}

// The DP's answer is a valid split, as fast as the best of all vectors,
// and one of the vectors reaching it.
void expect_optimal(const CostModel& model, Plan plan, int i, const std::string& what) {
  SCOPED_TRACE(what + ", B = " + std::to_string(plan.micro_batch_size));
  const Best best = brute_force(model, plan, i);
  const ReplicaShares got = choose_replica_shares(model, plan, i);
  if (best.vectors.empty()) {
    EXPECT_FALSE(got.found());
    return;
  }
  ASSERT_TRUE(got.found());
  int sum = 0;
  for (std::size_t k = 0; k < got.sequences.size(); ++k) {
    EXPECT_EQ(got.sequences[k] % plan.stages[i].set_replicas(k), 0);
    EXPECT_GE(got.sequences[k], plan.stages[i].set_replicas(k));
    sum += got.sequences[k];
  }
  EXPECT_EQ(sum, plan.micro_batch_size);
  EXPECT_DOUBLE_EQ(got.pace_s, best.pace);
  EXPECT_NE(std::find(best.vectors.begin(), best.vectors.end(), got.sequences), best.vectors.end());
  // Its own price, written into the plan, is what it reports.
  for (std::size_t k = 0; k < got.sequences.size(); ++k) plan.stages[i].replicas[k].sequences = got.sequences[k];
  const StageEstimate e = model.stage(plan, i);
  EXPECT_TRUE(e.fits());
  EXPECT_DOUBLE_EQ(e.pace_s(), got.pace_s);
}

Problem problem_of(const char* model, const char* cluster) {
  return Problem{catalog_model(model), catalog_cluster(cluster), TrainingSpec{}, {}};
}

Plan two_stage(const char* model, const char* cluster, int layers, StagePlan first, StagePlan second, int B) {
  Plan p;
  p.model = model;
  p.cluster = cluster;
  p.micro_batch_size = B;
  p.num_micro_batches = 64;
  p.global_batch = 64 * B;
  p.zero = 1;
  first.layer_begin = 0, first.layer_end = layers / 2;
  second.layer_begin = layers / 2, second.layer_end = layers;
  p.stages = {first, second};
  return p;
}

ReplicaSet set(const char* device, int group, int first_gpu, int gpus) { return {device, group, first_gpu, gpus, 0}; }

StagePlan sets_stage(std::vector<ReplicaSet> sets) {
  StagePlan s;
  set_replica_sets(s, std::move(sets));
  return s;
}

// Two sets (2 A100 + 2 V100 replicas) after an A100 stage:
// tests/data/replicas/mixed_stage.yaml at every B from 4 to 16. Shares
// come in multiples of each set's replicas, so the table counts in units
// of their gcd (2 here): an odd B has no split, as every vector says.
TEST(ReplicaShares, TwoSetsMatchEveryShareVector) {
  const Problem pb = problem_of("gpt3-1.3b", "mixed-a100-v100");
  const CostModel model(pb);
  Plan plan = read_plan(std::string(AUTOHAAP_TEST_DATA_DIR) + "/replicas/mixed_stage.yaml");
  for (int B = 4; B <= 16; ++B) {
    plan.micro_batch_size = B;
    if (B % 2 == 1) EXPECT_TRUE(brute_force(model, plan, 1).vectors.empty()) << "B = " << B;
    expect_optimal(model, plan, 1, "A100 x2 + V100 x2");
  }
}

// A raised stop ends the table with no split (a cluster of millions of GPUs
// once kept the refinement past its time limit here).
TEST(ReplicaShares, AStopEndsTheTable) {
  const Problem pb = problem_of("gpt3-1.3b", "mixed-a100-v100");
  const CostModel model(pb);
  Plan plan = read_plan(std::string(AUTOHAAP_TEST_DATA_DIR) + "/replicas/mixed_stage.yaml");
  plan.micro_batch_size = 8;
  std::atomic<bool> cancel{true};
  EXPECT_FALSE(choose_replica_shares(model, plan, 1, StopCondition{&cancel}).found());
  cancel = false;
  EXPECT_TRUE(choose_replica_shares(model, plan, 1, StopCondition{&cancel}).found());
}

// Three sets of 2, 1 and 1 replicas on three device types (A100, V100,
// H100), the second stage of a two-stage plan, at every B from 4 to 16.
TEST(ReplicaShares, ThreeSetsMatchEveryShareVector) {
  const Problem pb = problem_of("gpt3-1.3b", "mixed-h100-a100-v100");
  const CostModel model(pb);
  for (int B = 4; B <= 16; ++B) {
    Plan plan = two_stage("gpt3-1.3b", "mixed-h100-a100-v100", 24,
                          make_stage(0, "h100-sxm", 0, 1, 4, 0, 0, Recompute::none),
                          sets_stage({set("a100-40gb", 1, 0, 2), set("v100-32gb", 2, 0, 1), set("h100-sxm", 0, 4, 1)}),
                          B);
    expect_optimal(model, plan, 1, "A100 x2 + V100 + H100");
  }
}

// tp 4 replica sets (set_replica_sets needs tp before the sets).
StagePlan tp4(std::vector<ReplicaSet> sets) {
  StagePlan s;
  s.tp = 4;
  set_replica_sets(s, std::move(sets));
  return s;
}

// Where memory binds: gpt3-6.7b's second half with no recompute on one
// A100-40GB and one V100-32GB replica of tp 4 holds only a few sequences
// each (about 4 GiB of activations per sequence), so some splits do not
// fit (and at the largest B none does).
TEST(ReplicaShares, MemoryLimitsTheSharesLikeEveryVectorSays) {
  const Problem pb = problem_of("gpt3-6.7b", "mixed-a100-v100");
  const CostModel model(pb);
  int constrained = 0, impossible = 0;
  for (int B = 2; B <= 16; ++B) {
    Plan plan = two_stage("gpt3-6.7b", "mixed-a100-v100", 32,
                          make_stage(0, "a100-40gb", 0, 4, 1, 0, 0, Recompute::full),
                          tp4({set("a100-40gb", 0, 4, 4), set("v100-32gb", 1, 0, 4)}), B);
    const Best best = brute_force(model, plan, 1);
    constrained += best.infeasible > 0 && !best.vectors.empty();
    impossible += best.vectors.empty();
    expect_optimal(model, plan, 1, "gpt3-6.7b A100 + V100");
  }
  EXPECT_GT(constrained, 0);  // memory decided some B's answer
  EXPECT_GT(impossible, 0);   // and ruled every split out at some B
}

// By hand: a device exactly half an A100 (half its peaks and bandwidth, its
// efficiency curve read at half the GEMM size, as a device of half the
// peak fills up at half the FLOPs: io/catalog.cpp) takes as long for q
// sequences as the A100 for 2q. One replica of each in a one-stage plan
// (no pipeline sends): at B = 3k the split (2k, k) paces both sets alike,
// and any other split gives one of them more work, so the shares are 2:1.
TEST(ReplicaShares, TwiceAsFastTakesTwiceTheShare) {
  Problem pb = problem_of("gpt3-350m", "mixed-a100-v100");
  DeviceSpec half = pb.cluster.groups[0].device;
  half.name = "a100-half";
  half.peak_tflops /= 2, half.peak_fp32_tflops /= 2, half.peak_tf32_tflops /= 2, half.hbm_GBps /= 2;
  for (EfficiencyPoint& e : half.gemm_efficiency) e.gemm_gflop /= 2;
  pb.cluster.groups[1].device = half;
  const CostModel model(pb);
  for (int k = 1; k <= 4; ++k) {
    for (const bool fast_first : {true, false}) {
      Plan plan;
      plan.model = "gpt3-350m", plan.cluster = pb.cluster.name;
      plan.micro_batch_size = 3 * k, plan.num_micro_batches = 8, plan.global_batch = 24 * k, plan.zero = 1;
      StagePlan s = fast_first ? sets_stage({set("a100-40gb", 0, 0, 1), set("a100-half", 1, 0, 1)})
                               : sets_stage({set("a100-half", 1, 0, 1), set("a100-40gb", 0, 0, 1)});
      s.layer_begin = 0, s.layer_end = 24;
      s.recompute = Recompute::full;  // the activations of 12 sequences fit
      plan.stages = {s};
      const ReplicaShares got = choose_replica_shares(model, plan, 0);
      ASSERT_TRUE(got.found());
      const std::vector<int> want = fast_first ? std::vector<int>{2 * k, k} : std::vector<int>{k, 2 * k};
      EXPECT_EQ(got.sequences, want) << "B = " << 3 * k;
      // Both sets then take the same time, to rounding.
      EXPECT_NEAR(got.sets[0].time_s() / got.sets[1].time_s(), 1.0, 1e-9) << "B = " << 3 * k;
    }
  }
}

// AMP's pp 1 x tp 2 x dp 8 trial on 12 V100 + 4 T4 (tests/data/amp/):
// DeepSpeed gives each of the 6 V100 and 2 T4 replicas 4 sequences of
// B = 32. A T4 runs at about a third of a V100 here, so the chosen split
// gives the V100 replicas more (6 q + 2 p = 32 leaves q = 5, p = 1) and
// paces the stage faster than AMP's equal split, one of the vectors the
// DP weighs.
TEST(ReplicaShares, AmpsEqualSplitOnV100AndT4IsBeaten) {
  const std::string dir = std::string(AUTOHAAP_TEST_DATA_DIR) + "/amp/";
  const Problem pb = load_problem(dir + "gpt2-1024.yaml", dir + "v100-t4.yaml", dir + "deepspeed-fp16.yaml");
  const CostModel model(pb);
  const Plan plan = read_plan(dir + "pp1_tp2_dp8_mb4.yaml");
  const StageEstimate equal = model.stage(plan, 0);
  const ReplicaShares got = choose_replica_shares(model, plan, 0);
  ASSERT_TRUE(got.found());
  EXPECT_EQ(got.sequences, (std::vector<int>{30, 2}));
  EXPECT_LT(got.pace_s, equal.pace_s());
  expect_optimal(model, plan, 0, "AMP pp1 tp2 dp8");
}

TEST(ReplicaShares, NoSplitBelowOneSequencePerReplica) {
  const Problem pb = problem_of("gpt3-1.3b", "mixed-a100-v100");
  const CostModel model(pb);
  Plan plan = read_plan(std::string(AUTOHAAP_TEST_DATA_DIR) + "/replicas/mixed_stage.yaml");
  plan.micro_batch_size = 3;  // four replicas
  EXPECT_FALSE(choose_replica_shares(model, plan, 1).found());
  EXPECT_THROW(choose_replica_shares(model, plan, 0), std::invalid_argument);  // a one-device stage
}

}  // namespace
}  // namespace autohaap
