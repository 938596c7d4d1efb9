// Interleaved 1F1B, context parallelism, FP8 and TF32, the distributed
// optimizer: each formula against a hand calculation or the published one
// it implements, and the plan rules and files that carry vpp and cp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autohaap/cost/communication.hpp"
#include "autohaap/cost/cost_model.hpp"
#include "autohaap/cost/layer_work.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/megatron_export.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/plan_builder.hpp"
#include "autohaap/search/incumbent.hpp"
#include "autohaap/search/refinement.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "plan_fixtures.hpp"

namespace autohaap {
namespace {

using testing_fixtures::input_error_of;

ModelSpec gpt_model(int layers, int hidden, int heads, int seq = 2048) {
  return ModelSpec{"gpt-test", ModelFamily::gpt, layers, hidden, 4 * hidden, heads, heads, 51200, seq,
                   true, /*flash_attention=*/true, /*dropout=*/false, {}};
}

// A device whose GEMM efficiency is flat, with FP8 at twice and TF32 at
// half the 16-bit peak: times are hand calculations.
DeviceSpec flat_device() {
  DeviceSpec d;
  d.name = "flat";
  d.memory_GiB = 80;
  d.peak_tflops = 800;
  d.peak_fp32_tflops = 50;
  d.peak_tf32_tflops = 400;
  d.peak_fp8_tflops = 1600;
  d.hbm_GBps = 3000;
  d.memory_efficiency = 0.8;
  d.gemm_efficiency = {{1.0, 0.75}};
  d.attention_forward_efficiency = 0.5;
  d.attention_backward_efficiency = 0.4;
  d.nvlink_GBps = 400;
  d.pcie_GBps = 64;
  return d;
}

Problem problem_on(const DeviceSpec& d, const ModelSpec& m, int nodes = 1, int gpn = 8) {
  Problem p;
  p.model = m;
  p.cluster = ClusterSpec{"c", {NodeGroup{d.name, d, nodes, gpn, 400, 5, 50, 10}}, 12.5, 20};
  p.training.global_batch = 64;
  p.training.zero = 1;
  return p;
}

// ------------------------------------------------------------ interleaving

TEST(Interleaving, InFlightFollowsMegatronsWarmup) {
  // Stage 0 of p = 4, vpp = 2: (4 − 0 − 1)·2 + (2 − 1)·4 = 10 warm-up
  // chunk forwards + 1 = 11 chunks of half the layers = 5.5 micro-batches,
  // Korthikanti et al.'s p·(1 + (p − 1)/(p·v)) = 4·(1 + 3/8).
  EXPECT_DOUBLE_EQ(CostModel::in_flight(0, 4, 8, 2), 4 * (1 + 3.0 / 8));
  // The last stage: (2 − 1)·4 + 1 = 5 chunks = 2.5 micro-batches.
  EXPECT_DOUBLE_EQ(CostModel::in_flight(3, 4, 8, 2), 2.5);
  // Never more chunks than the iteration has: m·v = 4.
  EXPECT_DOUBLE_EQ(CostModel::in_flight(0, 4, 2, 2), 2.0);
  // vpp = 1 is plain 1F1B.
  EXPECT_DOUBLE_EQ(CostModel::in_flight(0, 4, 8, 1), 4.0);
}

TEST(Interleaving, IterationTimeIsMegatronsBubbleForEqualStages) {
  // p = 4 equal stages of t = 1 s, m = 8: (m + (p − 1)/v)·t
  // (Narayanan et al. 2021, Sec. 2.2.2: bubble (p − 1)/(v·m)).
  std::vector<StageEstimate> st(4);
  for (auto& s : st) s.forward_s = 0.25, s.backward_s = 0.75;
  EXPECT_DOUBLE_EQ(CostModel::iteration_time_1f1b(st, 8, 1), 8 + 3);
  EXPECT_DOUBLE_EQ(CostModel::iteration_time_1f1b(st, 8, 2), 8 + 3.0 / 2);
  EXPECT_DOUBLE_EQ(CostModel::iteration_time_1f1b(st, 8, 3), 8 + 3.0 / 3);
  // Unequal: stages of 1 and 3 s, m = 4, v = 2: the pacing stage runs
  // 4 micro-batches, the other stage's fill and drain shrink to 1/2.
  std::vector<StageEstimate> two(2);
  two[0].forward_s = 1, two[1].forward_s = 3;
  EXPECT_DOUBLE_EQ(CostModel::iteration_time_1f1b(two, 4, 2), 4 * 3 + 1.0 / 2);
}

TEST(Interleaving, PlanEstimateHoldsMoreActivationsAndSendsPerChunk) {
  Problem p = problem_on(flat_device(), gpt_model(8, 2048, 16), 1, 8);
  p.training.global_batch = 16;
  UniformPlanRequest r;
  r.tp = 2, r.pp = 4, r.dp = 1, r.micro_batch_per_replica = 2;
  const Plan plain = make_uniform_plan(p, r);
  r.vpp = 2;
  const Plan interleaved = make_uniform_plan(p, r);
  ASSERT_EQ(interleaved.vpp, 2);
  const CostModel cm(p);
  // Activations of stage 0: 4 micro-batches in flight without, 5.5 with.
  const double a1 = cm.stage(plain, 0).memory.activations, a2 = cm.stage(interleaved, 0).memory.activations;
  // No recompute working set; the transient is the word embedding's 16-bit
  // gradient before it is added into its main_grad, V·h/tp elements.
  const double transient = 2.0 * p.model.vocab * p.model.hidden / r.tp;
  const double per_mb = (a1 - transient) / 4;
  EXPECT_NEAR(a2, per_mb * 5.5 + transient, 1e-6 * a2);
  // A middle stage sends and receives once per chunk: twice the plain
  // transfer (Megatron-LM overlaps it with compute, so what is exposed is
  // at most that).
  EXPECT_LE(cm.stage(interleaved, 1).p2p_s, 2 * cm.stage(plain, 1).p2p_s + 1e-15);
  // Fewer bubbles: faster.
  EXPECT_LT(cm.estimate(interleaved).iteration_time_s, cm.estimate(plain).iteration_time_s);
}

TEST(Interleaving, RulesNameTheFlagAndThePlanKey) {
  Problem p = problem_on(flat_device(), gpt_model(8, 2048, 16), 1, 8);
  p.training.global_batch = 12;
  UniformPlanRequest r;
  r.tp = 1, r.pp = 4, r.dp = 1, r.micro_batch_per_replica = 1, r.vpp = 2;
  // 12 micro-batches are a multiple of 4 stages: fine.
  EXPECT_NO_THROW(make_uniform_plan(p, r));
  // pp = 1: nothing to interleave.
  r.pp = 1;
  EXPECT_EQ(input_error_of([&] { make_uniform_plan(p, r); }).key(), "--vpp");
  // 3 stages of 8 layers split 3, 3, 2 with vpp 3: a stage of 2 layers
  // cannot hold 3 chunks.
  r.pp = 3, r.vpp = 3;
  EXPECT_EQ(input_error_of([&] { make_uniform_plan(p, r); }).key(), "--vpp");
  // 12 micro-batches over 8 stages (1 layer each) with vpp 1 fine; the
  // same plan interleaved is refused in the plan file as `vpp`.
  r.pp = 8, r.vpp = 1;
  Plan plan = make_uniform_plan(p, r);
  plan.vpp = 2;
  EXPECT_EQ(input_error_of([&] { check_plan_against(plan, p.model, p.cluster, p.seq_len(), "plan.yaml"); }).key(), "vpp");
}

// ------------------------------------------------------ context parallelism

TEST(ContextParallel, EachGpuDoesOneCpthOfTheLayer) {
  const ModelSpec m = gpt_model(2, 4096, 32, 8192);
  BatchShape one{1, 8192, 2, 2, true};
  BatchShape two = one;
  two.cp = 2;
  const LayerWork w1 = layer_forward_work(m, 0, one), w2 = layer_forward_work(m, 0, two);
  // The GEMMs see half the tokens; the attention core, s/cp queries
  // against all s keys, half the FLOPs (load-balanced causal chunks).
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(w2.ops[i].flops, w1.ops[i].flops / 2) << i;
  // Stored activations: half (flash attention keeps no scores).
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, two, Recompute::none),
                   layer_activation_bytes(m, 0, one, Recompute::none) / 2);
  // One ring step moves K and V of this GPU's 4096 tokens, its tp share of
  // the 32 heads of 128: 2 · 2 bytes · 4096 · 4096 / 2.
  EXPECT_DOUBLE_EQ(context_parallel_kv_bytes(m, 0, two), 2.0 * 2 * 4096 * 4096 / 2);
  EXPECT_EQ(context_parallel_kv_bytes(m, 0, one), 0.0);
}

TEST(ContextParallel, SearchedStagesTakeTheLeastCpThatLetsReplicasDivideB) {
  // A stage of tp x width GPUs with micro-batch B: cp = width / gcd(width, B).
  Problem p = problem_on(flat_device(), gpt_model(8, 2048, 16, 4096), 2, 8);
  auto degrees = [&](int tp, int width, int B) {
    const StageDegrees d = stage_degrees(p, 0, tp, width, B);
    return std::vector<int>{d.tp, d.cp, d.dp};
  };
  EXPECT_EQ(degrees(1, 8, 8), (std::vector<int>{1, 1, 8}));   // a sequence a replica
  EXPECT_EQ(degrees(2, 4, 16), (std::vector<int>{2, 1, 4}));  // four a replica
  EXPECT_EQ(degrees(1, 8, 2), (std::vector<int>{1, 4, 2}));   // a quarter sequence a GPU
  EXPECT_EQ(degrees(2, 8, 4), (std::vector<int>{2, 2, 4}));
  EXPECT_EQ(degrees(1, 16, 12), (std::vector<int>{1, 4, 4}));  // 12 over 4 replicas of cp 4
  // cp 3 would cut 4096 tokens into 6 unequal chunks: the stage keeps cp
  // 1, and the stage rule then rejects its 6 replicas for B = 4.
  EXPECT_EQ(degrees(1, 6, 4), (std::vector<int>{1, 1, 6}));
  // A device that profiles measure keeps whole sequences: a share of one
  // is never measured.
  p.profiles.add(ProfileKey{"flat", "layer", 1, 1, 4096, -1}, 1e-3);
  EXPECT_EQ(degrees(1, 8, 2), (std::vector<int>{1, 1, 8}));
}

// A cp-4 layer of `m` (8192 tokens a sequence, one sequence a replica)
// timed on a link that hides every ring step and on a slow one, with the
// K,V block each step sends and the layer's work: the tests below take the
// exposed difference apart by hand.
struct RingTimes {
  Timing fast, slow;
  double kv_block = 0;
  LayerWork work;
};
RingTimes cp4_ring_times(const ModelSpec& m, const Problem& fast, const Problem& slow, const StageShape& shape,
                         int micro_batch) {
  BatchShape x{1, 8192, 1, 2, false};
  x.cp = 4;
  return {CostModel(fast).layer_timing(shape, micro_batch, 0), CostModel(slow).layer_timing(shape, micro_batch, 0),
          context_parallel_kv_bytes(m, 0, x), layer_forward_work(m, 0, x)};
}

TEST(ContextParallel, RingTransfersHideBehindAttention) {
  // cp = 4 inside one node; the K,V block of each step crosses the link
  // while that step's attention runs: exposed is (cp − 1)·send − attention.
  const ModelSpec m = gpt_model(2, 4096, 32, 8192);
  DeviceSpec d = flat_device();
  Problem fast = problem_on(d, m);
  fast.cluster.groups[0].intra_node_GBps = 1e9;  // nothing exposed
  Problem slow = fast;
  slow.cluster.groups[0].intra_node_GBps = 1;    // 1 GB/s: far slower than attention
  const auto [tf, ts, kv_block, w] = cp4_ring_times(m, fast, slow, StageShape{0, 1, 1, Recompute::none, 4}, 1);
  // Fused attention: half the dense FLOPs at the attention efficiency.
  // Each ring step runs the kernel on 8192 / 4 tokens: FlashAttention-2's
  // L / (L + 300) throughput at 2048 over that at the 4096 tokens the
  // device's figures hold at (kAttentionFigureTokens).
  const double block = (2048.0 / 2348) / (4096.0 / 4396);
  EXPECT_DOUBLE_EQ(w.ops[1].attention_block_efficiency, block);
  const double attention_f = w.ops[1].flops * 0.5 / (800e12 * 0.5 * block);
  const double attention_b = 2.5 * w.ops[1].flops * 0.5 / (800e12 * 0.4 * block);
  const CostParameters c;
  const Link link{1 * c.nvlink_efficiency, 5};
  EXPECT_NEAR(ts.forward_s - tf.forward_s, 3 * point_to_point_s(kv_block, link) - attention_f, 1e-9);
  EXPECT_NEAR(ts.backward_s - tf.backward_s, 3 * point_to_point_s(2 * kv_block, link) - attention_b, 1e-9);
}

TEST(ContextParallel, ARingThatDoesNotDivideTheNodeCrossesIt) {
  // Nodes of 6 GPUs, a stage of 12 (two nodes) at tp 1, cp 4, dp 3: the
  // rings hold GPUs 0-3, 4-7 and 8-11, and the second has 2 GPUs on each
  // node. Every ring step waits for it: its K,V blocks go over the NICs, 2
  // of the ring's GPUs a node, so 6 / 2 = 3 rings share each node's 6 NICs
  // (one a GPU): 1 GB/s x 0.7 x 6 / 3 = 1.4 GB/s, the NICs' latency.
  const ModelSpec m = gpt_model(2, 4096, 32, 8192);
  const DeviceSpec d = flat_device();
  Problem fast = problem_on(d, m, 2, 6);
  fast.cluster.groups[0].intra_node_GBps = 1e9;
  fast.cluster.groups[0].inter_node_GBps = 1e6;  // nothing exposed
  Problem slow = fast;
  slow.cluster.groups[0].inter_node_GBps = 1;
  const auto [tf, ts, kv_block, w] = cp4_ring_times(m, fast, slow, StageShape{0, 1, 3, Recompute::none, 4}, 3);
  const double attention_f = w.ops[1].flops * 0.5 / (800e12 * 0.5 * w.ops[1].attention_block_efficiency);
  const CostParameters c;
  const Link link{1 * c.network_efficiency * 6 / 3, 10};
  EXPECT_NEAR(ts.forward_s - tf.forward_s, 3 * point_to_point_s(kv_block, link) - attention_f, 1e-9);
  // On nodes of 8 the same rings divide the node and stay on NVLink: the
  // NICs change nothing.
  Problem eight = slow, eight_fast = fast;
  eight.cluster.groups[0].gpus_per_node = eight_fast.cluster.groups[0].gpus_per_node = 8;
  const StageShape two_nodes{0, 1, 4, Recompute::none, 4};
  EXPECT_DOUBLE_EQ(CostModel(eight).layer_timing(two_nodes, 4, 0).forward_s,
                   CostModel(eight_fast).layer_timing(two_nodes, 4, 0).forward_s);
}

// FlashAttention-2 and cuDNN's fused attention take head dimensions up to
// 256 (FlashAttention-2's README: "all head dimensions up to 256"): a
// model of 4096-wide heads runs attention unfused under Megatron on an
// H100 (keeping the s x s scores, as a model without flash attention
// does), takes no ring cp, and its Megatron export drops
// --use-flash-attn; SDPA (fsdp) keeps its memory-efficient kernel.
TEST(ContextParallel, HeadsWiderThanTheFusedKernelsTakeRunUnfused) {
  EXPECT_TRUE(fused_attention_kernel(Architecture::hopper, Runtime::megatron, 256));
  EXPECT_FALSE(fused_attention_kernel(Architecture::hopper, Runtime::megatron, 257));
  EXPECT_FALSE(fused_attention_kernel(Architecture::ampere, Runtime::deepspeed, 512));
  EXPECT_TRUE(fused_attention_kernel(Architecture::hopper, Runtime::fsdp, 4096));
  DeviceSpec h100 = flat_device();
  h100.architecture = Architecture::hopper;
  EXPECT_EQ(device_context_parallel_violation(h100, Runtime::megatron, 4096, 2),
            "1: ring context parallelism runs inside the fused attention kernels, which take head dimensions up to "
            "256 (this model's: hidden / heads = 4096)");
  EXPECT_EQ(device_context_parallel_violation(h100, Runtime::megatron, 4096, 1), "");

  // The same stage, heads of 128 against one head of 4096: the wide one
  // keeps the scores, 2 bytes for each of s^2 per head per sequence.
  Problem narrow = problem_on(h100, gpt_model(2, 4096, 32, 4096), 1, 8);
  Problem wide = narrow;
  wide.model.heads = wide.model.kv_heads = 1;
  const Plan plan = make_uniform_plan(narrow, UniformPlanRequest{});
  const double narrow_bytes = CostModel(narrow).stage(plan, 0).memory.activations;
  const double wide_bytes = CostModel(wide).stage(plan, 0).memory.activations;
  EXPECT_GT(wide_bytes, narrow_bytes);
  const ModelSpec unfused = [&] {
    ModelSpec m = wide.model;
    m.flash_attention = false;
    return m;
  }();
  Problem wide_unfused = wide;
  wide_unfused.model = unfused;
  EXPECT_DOUBLE_EQ(wide_bytes, CostModel(wide_unfused).stage(plan, 0).memory.activations);
  auto flash_flag = [&](const Problem& p) {
    for (const auto& [flag, value] : megatron_arguments(plan, p))
      if (flag == "--use-flash-attn") return true;
    return false;
  };
  EXPECT_FALSE(flash_flag(wide));
  EXPECT_TRUE(flash_flag(narrow));
}

// FlashAttention and Transformer Engine's fused attention take 16-bit
// inputs only: fp32 and tf32 training run attention unfused (2x the
// activations of bf16 here, the s x s scores kept), so they take no ring cp
// (refused by rule, as the plan builder and the search apply it) and their
// Megatron export passes no --use-flash-attn, which would fail at the first
// attention.
TEST(ContextParallel, Fp32AndTf32RunAttentionUnfusedWithoutARing) {
  DeviceSpec h100 = flat_device();
  h100.architecture = Architecture::hopper;
  Problem bf16 = problem_on(h100, gpt_model(2, 4096, 32, 4096), 1, 8);
  const Plan plan = make_uniform_plan(bf16, UniformPlanRequest{});
  auto flash_flag = [&](const Problem& p) {
    for (const auto& [flag, value] : megatron_arguments(plan, p))
      if (flag == "--use-flash-attn") return true;
    return false;
  };
  EXPECT_TRUE(flash_flag(bf16));
  EXPECT_EQ(runtime_context_parallel_violation(Runtime::megatron, Precision::bf16, 2), "");
  EXPECT_EQ(runtime_context_parallel_violation(Runtime::megatron, Precision::fp8, 2), "");
  for (const Precision precision : {Precision::fp32, Precision::tf32}) {
    Problem p = bf16;
    p.training.precision = precision;
    EXPECT_FALSE(flash_flag(p));
    EXPECT_NE(runtime_context_parallel_violation(Runtime::megatron, precision, 2).find("16-bit inputs only"),
              std::string::npos);
    EXPECT_EQ(runtime_context_parallel_violation(Runtime::megatron, precision, 1), "");
    UniformPlanRequest with_cp;
    with_cp.cp = 2;
    with_cp.dp = 1;
    with_cp.tp = 4;
    EXPECT_THROW(make_uniform_plan(p, with_cp), InputError);
  }
}

TEST(ContextParallel, VoltaUnderMegatronHasNoFusedAttentionAndNoRing) {
  // FlashAttention (and Transformer Engine's fused attention, where its
  // ring attention runs) needs Ampere or newer: Megatron-LM on a V100 runs
  // attention unfused, keeping the s x s scores, and cannot split the
  // sequence; PyTorch's SDPA has its memory-efficient kernel there.
  EXPECT_FALSE(fused_attention_kernel(Architecture::volta, Runtime::megatron, 128));
  EXPECT_FALSE(fused_attention_kernel(Architecture::turing, Runtime::deepspeed, 128));
  EXPECT_TRUE(fused_attention_kernel(Architecture::volta, Runtime::fsdp, 128));
  EXPECT_TRUE(fused_attention_kernel(Architecture::ampere, Runtime::megatron, 128));
  DeviceSpec v100 = flat_device(), h100 = flat_device();
  v100.architecture = Architecture::volta;
  h100.architecture = Architecture::hopper;
  EXPECT_NE(device_context_parallel_violation(v100, Runtime::megatron, 128, 2), "");
  EXPECT_EQ(device_context_parallel_violation(v100, Runtime::megatron, 128, 1), "");
  EXPECT_EQ(device_context_parallel_violation(h100, Runtime::megatron, 128, 2), "");

  const ModelSpec flash = gpt_model(2, 4096, 32, 4096);  // flash attention, no dropout
  ModelSpec unfused = flash;
  unfused.flash_attention = false;
  // The layer without the kernel keeps what the model without flash keeps.
  BatchShape x{1, 4096, 1, 2, false};
  x.fused_attention_kernel = false;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(flash, 0, x, Recompute::none),
                   layer_activation_bytes(unfused, 0, BatchShape{1, 4096, 1, 2, false}, Recompute::none));
  // A stage on a V100 under Megatron keeps 2 bytes of scores for each of
  // a·s² a sequence beyond the same stage on an A100: 2·32·4096² bytes.
  DeviceSpec volta = flat_device(), ampere = flat_device();
  volta.architecture = Architecture::volta;
  ampere.architecture = Architecture::ampere;
  const Problem on_volta = problem_on(volta, flash), on_ampere = problem_on(ampere, flash);
  const StageShape shape{0, 1, 1, Recompute::none, 1};
  EXPECT_DOUBLE_EQ(CostModel(on_volta).layer_memory(shape, 1, 0).activation_bytes -
                       CostModel(on_ampere).layer_memory(shape, 1, 0).activation_bytes,
                   2.0 * 32 * 4096 * 4096);
  // Under fsdp the V100 runs SDPA's memory-efficient kernel: no scores.
  Problem fsdp_volta = on_volta, fsdp_ampere = on_ampere;
  fsdp_volta.training.runtime = fsdp_ampere.training.runtime = Runtime::fsdp;
  EXPECT_DOUBLE_EQ(CostModel(fsdp_volta).layer_memory(shape, 1, 0).activation_bytes,
                   CostModel(fsdp_ampere).layer_memory(shape, 1, 0).activation_bytes);
}

TEST(ContextParallel, OptimizerShardsAndGradientsReduceOverDpTimesCp) {
  // The cp ranks of a stage hold the same weights: the distributed
  // optimizer shards its 12 bytes a parameter over dp·cp.
  const ModelSpec m = gpt_model(2, 4096, 32, 8192);
  const Problem p = problem_on(flat_device(), m);
  const CostModel cm(p);
  const double params = 2 * layer_params(m, 0);
  const MemoryBreakdown a = cm.stage_memory(StageShape{0, 1, 2, Recompute::none, 4}, 2, 0, 2, 1, 3, 8);
  EXPECT_DOUBLE_EQ(a.optimizer, 12 * params / 8);
  EXPECT_DOUBLE_EQ(a.gradients, 4 * params);
}

// ----------------------------------------------------------- FP8 and TF32

TEST(Precision, Fp8RunsLinearGemmsAtTheFp8Peak) {
  const ModelSpec m = gpt_model(2, 4096, 32, 4096);
  BatchShape x{2, 4096, 1, 2, false};
  x.fp8 = true;
  const LayerWork w = layer_forward_work(m, 0, x);
  EXPECT_TRUE(w.ops[0].fp8_gemm && w.ops[2].fp8_gemm && w.ops[3].fp8_gemm);
  EXPECT_FALSE(w.ops[1].fp8_gemm);  // attention stays 16-bit
  // The casts of the projection's and second MLP GEMM's inputs:
  // 3 bytes an element over T·(h + f) elements.
  BatchShape bf = x;
  bf.fp8 = false;
  const double T = 2 * 4096.0;
  EXPECT_DOUBLE_EQ(w.ops[4].bytes - layer_forward_work(m, 0, bf).ops[4].bytes, 3 * T * (4096 + 4 * 4096));
  // GEMMs at twice the peak on the flat curve: half the time.
  Problem p = problem_on(flat_device(), m);
  p.training.precision = Precision::bf16;
  const Timing t16 = CostModel(p).layer_timing(StageShape{0, 1, 1, Recompute::none}, 2, 0);
  p.training.precision = Precision::fp8;
  const Timing t8 = CostModel(p).layer_timing(StageShape{0, 1, 1, Recompute::none}, 2, 0);
  double gemm_s = 0;
  for (int i : {0, 2, 3}) gemm_s += w.ops[i].flops / (800e12 * 0.75);
  const double cast_s = 3 * T * (4096 + 4 * 4096) / (3000e9 * 0.8);
  EXPECT_NEAR(t16.forward_s - t8.forward_s, gemm_s / 2 - cast_s, 1e-12);
}

TEST(Precision, Fp8SavesTheGemmInputsAsOneByteCasts) {
  // GPT, no parallelism: Korthikanti's 34 + 5as/h 16-bit units per s·b·h
  // (dropout masks included); FP8 keeps the QKV, projection, first and
  // second MLP GEMM inputs in 1 byte: 1 + 1 + 1 + 4 (f = 4h) saved.
  ModelSpec m = gpt_model(2, 1024, 16, 2048);
  m.dropout = true;
  m.flash_attention = false;
  BatchShape x{2, 2048, 1, 2, false};
  const double sbh = 2048.0 * 2 * 1024, a = 16;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, x, Recompute::none), sbh * (34 + 5 * a * 2048 / 1024));
  x.fp8 = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, x, Recompute::none), sbh * (34 - 7 + 5 * a * 2048 / 1024));
}

TEST(Precision, Fp8OnADeviceWithoutFp8RunsInSixteenBits) {
  Problem p = problem_on(catalog_device("a100-80gb"), gpt_model(4, 4096, 32, 2048));
  p.training.global_batch = 16;
  UniformPlanRequest r;
  r.tp = 2, r.pp = 2, r.dp = 2, r.micro_batch_per_replica = 1;
  const Plan plan = make_uniform_plan(p, r);
  const PredictedPerformance bf16 = CostModel(p).estimate(plan);
  p.training.precision = Precision::fp8;
  const PredictedPerformance fp8 = CostModel(p).estimate(plan);
  EXPECT_DOUBLE_EQ(fp8.iteration_time_s, bf16.iteration_time_s);
  EXPECT_DOUBLE_EQ(fp8.stage_memory_GiB[0], bf16.stage_memory_GiB[0]);
  // On H100 the same plan is faster in FP8, and MFU stays against the
  // BF16 peak (NeMo's convention), so it rises.
  Problem h = p;
  h.cluster.groups[0].device = catalog_device("h100-sxm");
  const PredictedPerformance h8 = CostModel(h).estimate(plan);
  h.training.precision = Precision::bf16;
  const PredictedPerformance h16 = CostModel(h).estimate(plan);
  EXPECT_LT(h8.iteration_time_s, h16.iteration_time_s);
  EXPECT_NEAR(h8.mfu / h16.mfu, h16.iteration_time_s / h8.iteration_time_s, 1e-9);
}

TEST(Precision, Tf32KeepsFullPrecisionStateAndRunsAtTheTf32Peak) {
  const ModelSpec m = gpt_model(2, 4096, 32, 2048);
  Problem p = problem_on(flat_device(), m);
  p.training.precision = Precision::tf32;
  p.training.zero = 0;
  const CostModel cm(p);
  // fp32 weights and gradients, Adam's m and v; no master copy: 16 bytes.
  const double params = 2 * layer_params(m, 0);
  const MemoryBreakdown mem = cm.stage_memory(StageShape{0, 1, 1, Recompute::none}, 1, 0, 2, 1, 3, 4);
  EXPECT_DOUBLE_EQ(mem.weights, 4 * params);
  EXPECT_DOUBLE_EQ(mem.gradients, 4 * params);
  EXPECT_DOUBLE_EQ(mem.optimizer, 8 * params);
  // FlashAttention takes 16-bit inputs only: fp32 attention is unfused.
  BatchShape x{1, 2048, 1, 4, false};
  EXPECT_FALSE(layer_forward_work(m, 0, x).ops[1].fused_attention);
  // MFU is measured against the TF32 peak.
  UniformPlanRequest r;
  r.micro_batch_per_replica = 1;
  const Plan plan = make_uniform_plan(p, r);
  const PredictedPerformance pr = cm.estimate(plan);
  EXPECT_NEAR(pr.mfu, cm.model_flops_per_iteration() / (pr.iteration_time_s * 400e12), 1e-12);
  // A device without TF32 falls back to its FP32 cores.
  Problem v = problem_on(catalog_device("v100-32gb"), m);
  v.training.precision = Precision::tf32;
  Problem v32 = v;
  v32.training.precision = Precision::fp32;
  EXPECT_DOUBLE_EQ(CostModel(v).layer_timing(StageShape{0, 1, 1, Recompute::none}, 1, 0).forward_s,
                   CostModel(v32).layer_timing(StageShape{0, 1, 1, Recompute::none}, 1, 0).forward_s);
}

TEST(Precision, GemmCurveReadAtAnotherPeakShiftsBySize) {
  // A kernel twice as fast needs twice the FLOPs to fill the device as long.
  const DeviceSpec h100 = catalog_device("h100-sxm");
  for (double g : {0.1, 1.0, 30.0})
    EXPECT_DOUBLE_EQ(gemm_efficiency_at(h100, g, 2 * h100.peak_tflops), gemm_efficiency(h100, g / 2));
}

// ----------------------------------------------------- distributed optimizer

TEST(DistributedOptimizer, ReduceScatterGradientsAllGatherWeights) {
  // One stage of dp 8 in one node: ZeRO-0 all-reduces fp32 gradients
  // (8 bytes a parameter on the wire, ring 2·(n−1)/n); the distributed
  // optimizer reduce-scatters fp32 gradients and all-gathers bf16 weights
  // ((4 + 2)·(n−1)/n): 3/4 of the volume.
  const ModelSpec m = gpt_model(2, 2048, 16, 2048);
  Problem p = problem_on(flat_device(), m);
  p.training.global_batch = 8;
  Plan plan;
  plan.model = m.name, plan.cluster = "c";
  plan.global_batch = 8, plan.micro_batch_size = 8, plan.num_micro_batches = 1;
  plan.stages = {StagePlan{0, "flat", 0, 8, 1, 8, 0, 2, Recompute::none}};
  const double params = 2 * layer_params(m, 0) + embedding_params(m) + head_params(m, true);
  const CostParameters c;
  const Link nvlink{400 * c.nvlink_efficiency, 5};
  plan.zero = 1;  // the plan's ZeRO stage, whatever the training settings say
  const double z1 = CostModel(p).stage(plan, 0).dp_sync_s;
  EXPECT_NEAR(z1, (1 - c.dp_overlap) * (ring_reduce_scatter_s(4 * params, 8, nvlink) +
                                         ring_allgather_s(2 * params, 8, nvlink)),
              1e-12);
  plan.zero = 0;
  const double z0 = CostModel(p).stage(plan, 0).dp_sync_s;
  EXPECT_NEAR(z0, (1 - c.dp_overlap) * nccl_allreduce_s(4 * params, 8, nvlink), 1e-12);
}

TEST(Interleaving, MegatronExportWritesTheLayoutOfUnevenChunks) {
  // 10 layers, 2 stages of 5, 2 chunks each: chunks of 3 and 2 layers, in
  // model order stage 0 chunk 0, stage 1 chunk 0, stage 0 chunk 1, stage 1
  // chunk 1; the embedding before the first, the loss after the last.
  Problem p = problem_on(flat_device(), gpt_model(10, 2048, 16), 1, 8);
  p.training.global_batch = 8;
  UniformPlanRequest r;
  r.pp = 2, r.vpp = 2, r.micro_batch_per_replica = 1;
  const Plan plan = make_uniform_plan(p, r);
  const auto args = megatron_arguments(plan, p);
  auto value = [&](const std::string& flag) {
    for (const auto& [f, v] : args)
      if (f == flag) return v;
    return std::string("<absent>");
  };
  EXPECT_EQ(value("--pipeline-model-parallel-layout"), "\"Et*3|t*3|t*2|t*2L\"");
  EXPECT_EQ(value("--num-layers-per-virtual-pipeline-stage"), "<absent>");
  EXPECT_TRUE(megatron_blockers(plan, p).empty());
  // Even chunks need only their size.
  p.model.layers = 8;
  const Plan even = make_uniform_plan(p, r);
  const auto even_args = megatron_arguments(even, p);
  EXPECT_NE(std::find(even_args.begin(), even_args.end(),
                      std::pair<std::string, std::string>{"--num-layers-per-virtual-pipeline-stage", "2"}),
            even_args.end());
}

// ------------------------------------------------------------ refinement

TEST(Refinement, MatchesBruteForceOverPerStageCpAndVpp) {
  // Two stages of 8 GPUs (tp 2 x dp 4), 8k tokens, few micro-batches: every
  // per-stage cp in {1, 2, 4} and every vpp the rules allow, estimated.
  Problem p = problem_on(flat_device(), gpt_model(8, 4096, 32, 8192), 2, 8);
  p.training.global_batch = 16;
  UniformPlanRequest r;
  r.tp = 2, r.pp = 2, r.dp = 4, r.micro_batch_per_replica = 2;
  const Plan plan = make_uniform_plan(p, r);
  const CostModel cm(p);
  double brute = cm.estimate(plan).iteration_time_s;
  for (int c0 : {1, 2, 4})
    for (int c1 : {1, 2, 4})
      for (int vpp = 1; vpp <= 4; ++vpp) {
        Plan q = plan;
        q.vpp = vpp;
        q.stages[0].cp = c0, q.stages[0].dp = 4 / c0;
        q.stages[1].cp = c1, q.stages[1].dp = 4 / c1;
        if (!interleaving_violation(p.model, p.training.runtime, vpp, {4, 4}, q.num_micro_batches).empty()) continue;
        const PredictedPerformance e = cm.estimate(q);
        if (e.fits) brute = std::min(brute, e.iteration_time_s);
      }
  const Plan refined = refine_plan(cm, plan);
  EXPECT_NEAR(refined.predicted.iteration_time_s, brute, 1e-12 * brute);
  EXPECT_LE(refined.predicted.iteration_time_s, cm.estimate(plan).iteration_time_s);
  // With 8 micro-batches over 2 stages the bubble is worth interleaving.
  EXPECT_GT(refined.vpp, 1);
}

TEST(Refinement, AStoppedSearchRefinesForATenthOfItsLimitAtMost) {
  const Stopwatch watch;
  // What the limit leaves, or a grace of a tenth of it (a second at most)
  // when the search used it all.
  EXPECT_DOUBLE_EQ(refinement_stop(nullptr, 10, 4, watch).deadline_s, 6);
  EXPECT_DOUBLE_EQ(refinement_stop(nullptr, 3, 3.2, watch).deadline_s, 0.3);
  EXPECT_DOUBLE_EQ(refinement_stop(nullptr, 60, 61, watch).deadline_s, 1);
  EXPECT_DOUBLE_EQ(refinement_stop(nullptr, 0, 5, watch).deadline_s, 0);  // no limit, no deadline
  // Once told to stop, a refinement answers the plan it was given.
  Problem p = problem_on(flat_device(), gpt_model(8, 2048, 16, 4096), 1, 8);
  p.training.global_batch = 16;
  UniformPlanRequest r;
  r.pp = 2, r.dp = 4;
  const Plan plan = make_uniform_plan(p, r);
  const CostModel cm(p);
  const std::atomic<bool> cancelled{true};
  const StopCondition stop{&cancelled};
  EXPECT_EQ(refine_plan(cm, plan, stop).vpp, 1);
  EXPECT_EQ(refine_uniform_plan(cm, plan, stop).vpp, 1);
  EXPECT_GT(refine_plan(cm, plan).vpp, 1);  // unstopped, it interleaves
}

// A search that ended but whose refinement a time limit or a signal cut
// short did not end: its answer is the best so far (exit 4), stopped_by
// what cut it, never "found" with gap 0 (40 one-node A100 groups at
// --time-limit 0.5 said found at 11.3 s/iter where the whole run gives
// 6.7). A refinement that was not cut, or a search that had already
// stopped or found nothing, keeps its status.
TEST(Refinement, ACutRefinementMakesTheSearchStoppedNotFound) {
  SearchResult found;
  found.status = PlanStatus::found;
  const std::atomic<bool> cancelled{true}, running{false};
  const SearchResult by_signal = after_refinement(found, StopCondition{&cancelled});
  EXPECT_EQ(by_signal.status, PlanStatus::stopped_with_plan);
  EXPECT_EQ(by_signal.stopped_by, "signal");
  const Stopwatch watch;
  StopCondition deadline = StopCondition::of(&running, 1e-9, watch);
  while (!deadline()) {
  }
  const SearchResult by_limit = after_refinement(found, deadline);
  EXPECT_EQ(by_limit.status, PlanStatus::stopped_with_plan);
  EXPECT_EQ(by_limit.stopped_by, "time-limit");
  EXPECT_EQ(exit_code(by_limit.status), kExitInterrupted);
  SearchResult within_gap = found;
  within_gap.status = PlanStatus::gap_reached;
  EXPECT_EQ(after_refinement(within_gap, deadline).status, PlanStatus::stopped_with_plan);

  EXPECT_EQ(after_refinement(found, StopCondition{&running}).status, PlanStatus::found);
  EXPECT_EQ(after_refinement(found, StopCondition{}).status, PlanStatus::found);
  SearchResult infeasible;
  infeasible.status = PlanStatus::infeasible;
  EXPECT_EQ(after_refinement(infeasible, deadline).status, PlanStatus::infeasible);
  SearchResult stopped;
  stopped.status = PlanStatus::stopped_with_plan;
  stopped.stopped_by = "max-skeletons";
  EXPECT_EQ(after_refinement(stopped, deadline).stopped_by, "max-skeletons");
}

TEST(Refinement, ContextParallelMakesFitWhatDoesNotFitWithout) {
  // One layer of 32k tokens on two 10 GiB GPUs, multi-query attention (so
  // tp stays 1): one sequence per GPU does not fit (about 13 GiB); cp 2
  // halves the activations and logits of each GPU (about 9 GiB).
  DeviceSpec d = flat_device();
  d.memory_GiB = 10;
  const ModelSpec mqa{"mqa", ModelFamily::llama, 1, 2048, 5632, 16, 1, 32000, 32768, false, true, false, {}};
  Problem p = problem_on(d, mqa, 1, 2);
  p.training.global_batch = 8;
  p.training.micro_batch_sizes = {1, 2, 4, 8};
  p.training.recompute_modes = {Recompute::none};
  const CostModel cm(p);
  // Both GPUs, one sequence each: does not fit.
  UniformPlanRequest whole;
  whole.dp = 2;
  EXPECT_FALSE(cm.estimate(make_uniform_plan(p, whole)).fits);
  std::int64_t evaluated = 0;
  const std::vector<Plan> with = uniform_plans(cm, 1, evaluated, true);
  ASSERT_EQ(with.size(), 1u);
  EXPECT_TRUE(with[0].predicted.fits);
  EXPECT_GT(with[0].stages[0].cp, 1);
  // The search's own layouts take it already: a micro-batch of one sequence
  // on a stage of two GPUs runs as cp 2 (search_space.hpp stage_degrees).
  const std::vector<Plan> searched = uniform_plans(cm, 1, evaluated);
  ASSERT_EQ(searched.size(), 1u);
  EXPECT_EQ(searched[0].micro_batch_size, 1);
  EXPECT_EQ(searched[0].stages[0].cp, 2);
  EXPECT_EQ(searched[0].predicted.iteration_time_s, with[0].predicted.iteration_time_s);
}

// The uniform plans a search adds to its own (finish_plans) skip the
// group sets whose GPUs could not run an iteration's FLOPs at their peaks
// faster than the best plan found. Against the same enumeration with no
// plan to beat (a list longer than the candidates, so nothing is ever
// skipped): the same best plan, fewer candidates refined.
TEST(Refinement, UniformPlansSkipOnlyGroupSetsThatCannotWin) {
  Problem p{catalog_model("gpt3-1.3b"), catalog_cluster("mixed-h100-a100-v100"), catalog_training("default"), {}};
  p.training.global_batch = 64;
  const CostModel cm(p);
  std::int64_t all = 0, skipping = 0;
  const std::vector<Plan> every = uniform_plans(cm, 1000000, all, true);
  const std::vector<Plan> best = uniform_plans(cm, 1, skipping, true);
  ASSERT_FALSE(every.empty());
  ASSERT_EQ(best.size(), 1u);
  // Neither before the other in the canonical order: the same plan.
  EXPECT_FALSE(plan_before(best[0], every[0]));
  EXPECT_FALSE(plan_before(every[0], best[0]));
  EXPECT_EQ(best[0].predicted.iteration_time_s, every[0].predicted.iteration_time_s);
  std::printf("uniform candidates refined: %lld of %lld\n", static_cast<long long>(skipping),
              static_cast<long long>(all));
  EXPECT_LT(skipping, all);
  // Shared by three participants (what the ranks of an MPI job do), each
  // skipping by its own best: merged, the same plan.
  std::vector<std::vector<Plan>> shares;
  for (int share = 0; share < 3; ++share) {
    std::int64_t evaluated = 0;
    shares.push_back(uniform_plans(cm, 1, evaluated, true, {}, nullptr, share, 3));
  }
  const std::vector<Plan> merged = merge_top_k(shares, 1);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_FALSE(plan_before(merged[0], best[0]));
  EXPECT_FALSE(plan_before(best[0], merged[0]));
}

// Identical groups are told apart only by how many a uniform plan uses:
// on four identical racks and an odd one the best uniform plan is the
// best over every one of the 31 subsets of groups, each searched as a
// cluster of its own; 9 sets are tried instead of 31, so fewer candidates
// than when the racks differ (by an intra-node latency no plan notices).
TEST(Refinement, UniformPlansCountIdenticalGroupsNotWhichOnes) {
  Problem p{catalog_model("gpt3-1.3b"), {}, catalog_training("default"), {}};
  p.training.global_batch = 32;
  p.cluster.name = "racks";
  for (int i = 0; i < 4; ++i) {
    p.cluster.groups.push_back(make_node_group(catalog_device("a100-80gb"), 1, 4));
    p.cluster.groups.back().name = "rack" + std::to_string(i);
  }
  p.cluster.groups.push_back(make_node_group(catalog_device("v100-32gb"), 1, 4));
  p.training.precision = Precision::fp16;  // the V100 has no BF16
  std::int64_t evaluated = 0;
  const std::vector<Plan> best = uniform_plans(CostModel(p), 1, evaluated, true);
  ASSERT_EQ(best.size(), 1u);
  double least = std::numeric_limits<double>::infinity();
  std::int64_t every = 0;
  for (std::uint32_t mask = 1; mask < 32; ++mask) {
    Problem part = p;
    part.cluster.groups.clear();
    for (int g = 0; g < 5; ++g)
      if (mask & (1u << g)) part.cluster.groups.push_back(p.cluster.groups[g]);
    // Its best uses any of its own subsets: over every mask, every subset.
    std::int64_t n = 0;
    const std::vector<Plan> on_part = uniform_plans(CostModel(part), 1, n, true);
    if (!on_part.empty()) least = std::min(least, on_part[0].predicted.iteration_time_s);
    every += n;
  }
  EXPECT_EQ(best[0].predicted.iteration_time_s, least);
  Problem apart = p;
  for (int i = 0; i < 4; ++i) apart.cluster.groups[i].intra_node_latency_us += 1e-6 * i;
  std::int64_t distinct = 0;
  uniform_plans(CostModel(apart), 1, distinct, true);
  std::printf("uniform candidates: %lld on identical racks, %lld told apart, %lld over every subset alone\n",
              static_cast<long long>(evaluated), static_cast<long long>(distinct), static_cast<long long>(every));
  EXPECT_LT(evaluated, distinct);
}

// ------------------------------------------------------------ plan files

TEST(PlanFile, CarriesVppAndCpAndReadsOlderPlansAsOne) {
  Problem p = problem_on(flat_device(), gpt_model(8, 2048, 16, 4096), 2, 8);
  p.training.global_batch = 16;
  UniformPlanRequest r;
  r.tp = 2, r.pp = 2, r.dp = 2, r.cp = 2, r.vpp = 2, r.micro_batch_per_replica = 1;
  const Plan plan = make_uniform_plan(p, r);
  EXPECT_EQ(plan.stages[0].gpus, 8);
  EXPECT_EQ(plan.stages[1].first_gpu, 8);
  EXPECT_EQ(plan.stages[1].cp, 2);
  for (bool json : {false, true}) {
    const std::string text = json ? plan_to_json(plan, p.cluster) : plan_to_yaml(plan, p.cluster);
    const Plan back = plan_from_string(text, json, json ? "p.json" : "p.yaml");
    EXPECT_EQ(back.vpp, 2);
    EXPECT_EQ(back.stages[1].cp, 2);
    check_plan_against(back, p.model, p.cluster, p.seq_len(), "p");
  }
  // A plan written before vpp and cp existed: both 1.
  Plan old = plan;
  old.vpp = 1;
  for (auto& s : old.stages) s.cp = 1, s.gpus = s.tp * s.dp;
  std::string yaml = plan_to_yaml(old, 0), json = plan_to_json(old, 0);
  auto erase_line = [](std::string& t, const std::string& needle) {
    for (std::size_t at; (at = t.find(needle)) != std::string::npos;) {
      const std::size_t line = t.rfind('\n', at) + 1;  // npos + 1 == 0 on the first line
      t.erase(line, t.find('\n', at) - line + 1);
    }
  };
  erase_line(yaml, "vpp:");
  erase_line(yaml, "cp:");
  erase_line(json, "\"vpp\"");
  erase_line(json, "\"cp\"");
  ASSERT_EQ(yaml.find("cp:"), std::string::npos);
  ASSERT_EQ(json.find("\"cp\""), std::string::npos);
  for (bool is_json : {false, true}) {
    const Plan back = plan_from_string(is_json ? json : yaml, is_json, "old");
    EXPECT_EQ(back.vpp, 1);
    EXPECT_EQ(back.stages[0].cp, 1);
  }
  // gpus must be tp·cp·dp.
  Plan wrong = plan;
  wrong.stages[0].gpus = 4;
  EXPECT_EQ(input_error_of([&] { check_plan(wrong, "w.yaml"); }).key(), "stages[0].gpus");
}

TEST(PlanFile, ContextParallelNeedsTwoChunksPerGpu) {
  Problem p = problem_on(flat_device(), gpt_model(4, 2048, 16, 2048), 1, 8);
  p.training.global_batch = 8;
  UniformPlanRequest r;
  r.tp = 1, r.pp = 1, r.dp = 1, r.cp = 3, r.micro_batch_per_replica = 1;
  EXPECT_EQ(input_error_of([&] { make_uniform_plan(p, r); }).key(), "--cp");
  r.cp = 4;
  Plan plan = make_uniform_plan(p, r);
  plan.stages[0].cp = 3;
  plan.stages[0].gpus = 3;
  EXPECT_EQ(input_error_of([&] { check_plan_against(plan, p.model, p.cluster, p.seq_len(), "p.yaml"); }).key(),
            "stages[0].cp");
}

// cp splits the sequence the plan trains at: the training's seq_len where
// it overrides the model's (a model of 2046 tokens trained at 2048 ran cp 2
// in the search, and its written plan was refused against the 2046).
TEST(PlanFile, ContextParallelSplitsTheTrainingsSequence) {
  Problem p = problem_on(flat_device(), gpt_model(4, 2048, 16, 2048), 1, 8);
  p.training.global_batch = 8;
  UniformPlanRequest r;
  r.tp = 1, r.pp = 1, r.dp = 1, r.cp = 2, r.micro_batch_per_replica = 1;
  const Plan plan = make_uniform_plan(p, r);
  p.model.seq_len = 2046;  // 2 x cp does not divide it
  p.training.seq_len = 2048;
  EXPECT_NO_THROW(check_plan_against(plan, p.model, p.cluster, p.seq_len(), "p.yaml"));
  EXPECT_EQ(input_error_of([&] { check_plan_against(plan, p.model, p.cluster, p.model.seq_len, "p.yaml"); }).key(),
            "stages[0].cp");
}

}  // namespace
}  // namespace autohaap
