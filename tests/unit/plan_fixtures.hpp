// A plan that exercises every field of the schema, and a field-by-field
// comparison, for the plan I/O and serialization tests. The numbers are
// chosen to catch lossy formatting: 0.1 and 0.1+0.2 have no short exact
// decimal form, 1e-300 and 1e-7 vanish under a fixed number of decimals,
// and `evaluated` needs 64 bits.
#pragma once

#include <gtest/gtest.h>

#include <functional>

#include "autohaap/error.hpp"
#include "autohaap/plan.hpp"

namespace autohaap::testing_fixtures {

// The InputError `f` throws; a test failure (and an empty error) when it
// throws none.
inline InputError input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError thrown";
  return InputError("", "", "", "");
}

inline StagePlan make_stage(int group, const char* device, int first_gpu, int tp, int dp, int begin, int end,
                            Recompute recompute) {
  StagePlan s;
  s.group = group;
  s.device = device;
  s.first_gpu = first_gpu;
  s.tp = tp;
  s.dp = dp;
  s.gpus = tp * dp;
  s.layer_begin = begin;
  s.layer_end = end;
  s.recompute = recompute;
  return s;
}

// Three stages over two groups: an 8-GPU-per-node A100 group (stages 0 and 1)
// and a 4-GPU-per-node V100 group (stage 2, spanning four nodes).
inline Plan sample_plan() {
  Plan p;
  p.model = "gpt3-1.3b";
  p.cluster = "mixed-a100-v100";
  p.global_batch = 512;
  p.micro_batch_size = 4;
  p.num_micro_batches = 128;
  p.zero = 1;
  p.stages = {make_stage(0, "a100-80gb", 0, 4, 2, 0, 10, Recompute::none),
              make_stage(0, "a100-80gb", 8, 2, 2, 10, 18, Recompute::selective),
              make_stage(1, "v100-32gb", 0, 4, 4, 18, 24, Recompute::full)};
  p.predicted.iteration_time_s = 0.1;
  p.predicted.tokens_per_s = 1.0e6 / 3.0;
  p.predicted.mfu = 0.4321;
  p.predicted.hfu = 0.55;
  p.predicted.model_tflops_per_gpu = 123.456;
  p.predicted.bubble_s = 1e-7;
  p.predicted.stage_time_s = {0.1, 0.2, 0.1 + 0.2};
  p.predicted.stage_memory_GiB = {71.5, 40.25, 1e-300};
  p.predicted.fits = true;
  p.predicted.time_source = TimeSource::corrected;
  p.search.strategy = "autohaap";
  p.search.evaluated = 123456789012LL;
  p.search.pruned = 42;
  p.search.cache_hits = 7;
  p.search.cache_misses = 3;
  p.search.wall_s = 2.5;
  p.search.ranks = 4;
  p.search.threads = 16;
  p.search.bound_s = 1.875;
  p.search.gap = 0.0625;
  return p;
}

// Doubles compare exactly: both formats promise a lossless round trip.
inline void expect_same_plan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.cluster, b.cluster);
  EXPECT_EQ(a.global_batch, b.global_batch);
  EXPECT_EQ(a.micro_batch_size, b.micro_batch_size);
  EXPECT_EQ(a.num_micro_batches, b.num_micro_batches);
  EXPECT_EQ(a.vpp, b.vpp);
  EXPECT_EQ(a.zero, b.zero);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    SCOPED_TRACE("stage " + std::to_string(i));
    const StagePlan& x = a.stages[i];
    const StagePlan& y = b.stages[i];
    EXPECT_EQ(x.group, y.group);
    EXPECT_EQ(x.device, y.device);
    EXPECT_EQ(x.first_gpu, y.first_gpu);
    EXPECT_EQ(x.gpus, y.gpus);
    EXPECT_EQ(x.tp, y.tp);
    EXPECT_EQ(x.cp, y.cp);
    EXPECT_EQ(x.dp, y.dp);
    EXPECT_EQ(x.layer_begin, y.layer_begin);
    EXPECT_EQ(x.layer_end, y.layer_end);
    EXPECT_EQ(x.recompute, y.recompute);
    EXPECT_EQ(x.chunks, y.chunks);
  }
  EXPECT_EQ(a.predicted.iteration_time_s, b.predicted.iteration_time_s);
  EXPECT_EQ(a.predicted.tokens_per_s, b.predicted.tokens_per_s);
  EXPECT_EQ(a.predicted.mfu, b.predicted.mfu);
  EXPECT_EQ(a.predicted.hfu, b.predicted.hfu);
  EXPECT_EQ(a.predicted.model_tflops_per_gpu, b.predicted.model_tflops_per_gpu);
  EXPECT_EQ(a.predicted.bubble_s, b.predicted.bubble_s);
  EXPECT_EQ(a.predicted.stage_time_s, b.predicted.stage_time_s);
  EXPECT_EQ(a.predicted.stage_memory_GiB, b.predicted.stage_memory_GiB);
  EXPECT_EQ(a.predicted.fits, b.predicted.fits);
  EXPECT_EQ(a.predicted.time_source, b.predicted.time_source);
  EXPECT_EQ(a.search.strategy, b.search.strategy);
  EXPECT_EQ(a.search.evaluated, b.search.evaluated);
  EXPECT_EQ(a.search.pruned, b.search.pruned);
  EXPECT_EQ(a.search.cache_hits, b.search.cache_hits);
  EXPECT_EQ(a.search.cache_misses, b.search.cache_misses);
  EXPECT_EQ(a.search.wall_s, b.search.wall_s);
  EXPECT_EQ(a.search.ranks, b.search.ranks);
  EXPECT_EQ(a.search.threads, b.search.threads);
  EXPECT_EQ(a.search.bound_s, b.search.bound_s);
  EXPECT_EQ(a.search.gap, b.search.gap);
}

}  // namespace autohaap::testing_fixtures
