// Every plan AMP tried on its heterogeneous cluster, as an AutoHAAP plan:
// Li et al., NeurIPS 2022 ("AMP: Automatically Finding Model Parallel
// Strategies with Heterogeneity Awareness"), Sec. 5, GPT-2 (24 layers of
// 1024, global batch 32) on 12 V100 16GB + 4 T4, the 53 plans its cost model
// ranked and ran, from the repository's src/results/het_cluster_results.txt
// (tests/data/amp/trials.csv: rank, micro-batch per replica, mp, dp, pp,
// DeepSpeed layer partition, AMP's predicted and measured seconds per
// iteration; measured empty where the trial failed). 43 ran; 10 failed.
//
// The translation (the four plan files beside the CSV are the same rule by
// hand): DeepSpeed numbers 30 pipeline layers — embedding and a transpose,
// the 24 transformer layers, a transpose, norm, tied head and a cast — so a
// partition boundary d is transformer layer d - 2, clamped to 0..24.
// DeepSpeed orders ranks pipeline, then data, then model parallel, over
// nodes 0-2 (V100, group 0) and node 3 (T4, group 1): stage s is ranks
// s*dp*mp .. (s+1)*dp*mp - 1, replica r of it mp consecutive ranks, and a
// stage whose ranks cross rank 12 has a V100 and a T4 replica set. Every
// replica takes the same micro-batch (DeepSpeed's).
//
// Asserted: every trial is a valid plan (the plan checks of `estimate
// --plan`) and is estimated, the four whose partition leaves a stage with
// no transformer layer (ranks 10, 26, 34, 45, all of which failed) too.
// Printed: predicted against measured time, and the rank correlation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "csv_table.hpp"
#include "rank_correlation.hpp"

namespace autohaap {
namespace {

using test_data::spearman;

constexpr int kV100Ranks = 12;  // nodes 0-2 of 4 GPUs

// The stage's GPUs [begin, end) in DeepSpeed's rank order as a stage of
// one device or of a V100 set and a T4 set, each replica `sequences` wide.
StagePlan stage_on(int begin, int end, int mp, int per_replica) {
  StagePlan s;
  s.tp = mp;
  std::vector<ReplicaSet> sets;
  auto add = [&](int from, int to) {
    if (from >= to) return;
    const bool t4 = from >= kV100Ranks;
    const int gpus = to - from;
    sets.push_back({t4 ? "t4" : "v100-16gb", t4 ? 1 : 0, t4 ? from - kV100Ranks : from, gpus,
                    gpus / mp * per_replica});
  };
  add(begin, std::min(end, kV100Ranks));
  add(std::max(begin, kV100Ranks), end);
  if (sets.size() == 2) {
    set_replica_sets(s, sets);
  } else {
    s.group = sets[0].group, s.device = sets[0].device, s.first_gpu = sets[0].first_gpu;
    s.gpus = sets[0].gpus, s.dp = s.gpus / mp;
  }
  return s;
}

struct Trial {
  int rank = 0;
  bool ran = false;
  double measured_s = 0, amp_predicted_s = 0;
  int empty_stages = 0;  // stages of no transformer layer
  Plan plan;
};

Trial trial_of(const test_data::CsvRow& row) {
  Trial t;
  t.rank = std::stoi(row.at("amp_rank"));
  t.ran = !row.at("measured_s").empty();
  if (t.ran) t.measured_s = std::stod(row.at("measured_s"));
  t.amp_predicted_s = std::stod(row.at("amp_predicted_s"));
  const int mbs = std::stoi(row.at("micro_batch_per_replica")), mp = std::stoi(row.at("mp"));
  const int dp = std::stoi(row.at("dp")), pp = std::stoi(row.at("pp"));
  std::vector<int> bounds;
  std::istringstream in(row.at("deepspeed_partition"));
  for (int d; in >> d;) bounds.push_back(std::clamp(d - 2, 0, 24));

  Plan& p = t.plan;
  p.model = "gpt2-1024";
  p.cluster = "amp-v100-t4";
  p.global_batch = 32;
  p.micro_batch_size = mbs * dp;
  p.num_micro_batches = 32 / p.micro_batch_size;
  p.zero = 0;
  for (int s = 0; s < pp; ++s) {
    StagePlan stage = stage_on(s * dp * mp, (s + 1) * dp * mp, mp, mbs);
    stage.layer_begin = bounds[s];
    stage.layer_end = bounds[s + 1];
    t.empty_stages += stage.layer_end == stage.layer_begin;
    p.stages.push_back(stage);
  }
  return t;
}

TEST(AmpTrials, EveryTrialIsAPlanAndIsEstimated) {
  const std::string dir = std::string(AUTOHAAP_TEST_DATA_DIR) + "/amp/";
  const Problem pb = load_problem(dir + "gpt2-1024.yaml", dir + "v100-t4.yaml", dir + "deepspeed-fp16.yaml");
  const CostModel model(pb);
  int ran = 0, failed = 0, with_empty_stage = 0, mixed = 0;
  std::vector<double> predicted, measured, amp;
  std::printf("AMP rank  stages  measured  AMP's  AutoHAAP\n");
  for (const test_data::CsvRow& row : test_data::read_csv("amp/trials.csv")) {
    const Trial t = trial_of(row);
    ran += t.ran;
    failed += !t.ran;
    SCOPED_TRACE("AMP rank " + std::to_string(t.rank));
    ASSERT_NO_THROW(check_plan_against(t.plan, pb.model, pb.cluster, pb.seq_len(), "trial"));
    const PredictedPerformance e = model.estimate(t.plan);
    ASSERT_TRUE(std::isfinite(e.iteration_time_s) && e.iteration_time_s > 0);
    if (t.empty_stages > 0) {
      ++with_empty_stage;
      EXPECT_FALSE(t.ran) << "a published trial with an empty stage ran";
      std::printf("%8d %7zu %9s %6.2f %9.2f  (%d stage%s of no transformer layer; failed)\n", t.rank,
                  t.plan.stages.size(), "-", t.amp_predicted_s, e.iteration_time_s, t.empty_stages,
                  t.empty_stages > 1 ? "s" : "");
    }
    if (!t.ran) continue;
    mixed += std::any_of(t.plan.stages.begin(), t.plan.stages.end(),
                         [](const StagePlan& s) { return s.mixes_devices(); });
    predicted.push_back(e.iteration_time_s);
    measured.push_back(t.measured_s);
    amp.push_back(t.amp_predicted_s);
    std::printf("%8d %7zu %9.2f %6.2f %9.2f%s\n", t.rank, t.plan.stages.size(), t.measured_s, t.amp_predicted_s,
                e.iteration_time_s, e.fits ? "" : "  (predicted not to fit)");
  }
  EXPECT_EQ(ran, 43);
  EXPECT_EQ(failed, 10);
  EXPECT_EQ(with_empty_stage, 4);  // ranks 10, 26, 34, 45: an embedding-only first stage (and a reshape-only second)
  EXPECT_EQ(static_cast<int>(predicted.size()), 43);
  EXPECT_EQ(mixed, 19);  // a stage with V100 and T4 replicas side by side
  std::printf("all 53 trials estimated; %d ran; %d mix V100 and T4 in a stage; Spearman with measured: "
              "AutoHAAP %+.2f, AMP's own model %+.2f\n",
              ran, mixed, spearman(predicted, measured), spearman(amp, measured));
}

}  // namespace
}  // namespace autohaap
