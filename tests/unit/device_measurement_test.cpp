// What one H200 measured against what the catalog says of Hopper
// (tests/data/device/h200/, taken with scripts/device/measure.sh on an
// NVIDIA H200 SXM at its 700 W limit: driver 580.159, CUDA 13.0, cuBLASLt
// 13.1, PyTorch 2.11, cuDNN 9.19; README of that folder). Every figure is
// derived here from raw milliseconds with the cost model's own FLOP counts,
// so the comparison is the model's, not the script's.
//
// Printed: measured and priced efficiency per GEMM size decade and
// precision, attention kernels, streaming kernels, runtime memory, whole
// layers. Asserted: the physical relations the catalog claims (a training
// GEMM is never priced faster than the same product measured alone; the
// architecture's figures sit inside what was measured), with the margins
// each comment gives. Nothing here is fitted: the catalog's Hopper figures
// come from public measurements (io/catalog.cpp) and stay as they are.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/cost/cost_parameters.hpp"
#include "autohaap/cost/layer_work.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/device_measurements.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/units.hpp"
#include "csv_table.hpp"

namespace autohaap {
namespace {

using test_data::CsvRow;
using test_data::read_csv;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double num(const CsvRow& r, const char* key) { return std::stod(r.at(key)); }

// The peak a measured product ran against, by the sweep's dtype name.
double peak_of(const DeviceSpec& d, const std::string& dtype) {
  if (dtype == "fp8") return d.peak_fp8_tflops;
  if (dtype == "tf32") return d.peak_tf32_tflops;
  if (dtype == "fp32") return d.peak_fp32_tflops;
  return d.peak_tflops;  // bf16, fp16
}

// Products of a transformer layer's linears (forward, input and weight
// gradient), grouped by the decade of their size.
struct Decade {
  std::vector<double> gflop, efficiency;
};

std::map<int, Decade> transformer_products(const DeviceSpec& d, const std::string& dtype) {
  std::map<int, Decade> out;
  for (const CsvRow& r : read_csv("device/h200/gemm.csv")) {
    if (r.at("dtype") != dtype || r.at("role") == "square") continue;
    const double g = num(r, "gflop");
    Decade& dec = out[static_cast<int>(std::floor(std::log10(g)))];
    dec.gflop.push_back(g);
    dec.efficiency.push_back(num(r, "tflops") / peak_of(d, dtype));
  }
  return out;
}

// Below 10 GFLOP a product on this device lasts a few microseconds and the
// sweep's back-to-back calls time the host's launch (8 us a cuBLASLt call
// under this machine's virtualization: 128^3 to 1024^3 all take 8.1-8.5 us),
// which the cost model prices apart (CostParameters::per_layer_overhead_s).
constexpr int kFirstDecade = 1;

// The cost model prices a training GEMM on the architecture's curve, which
// is the isolated product's efficiency times what end-to-end training keeps
// of it (training_over_isolated, fitted on A100 runs). Hopper's curve is
// this sweep (catalog.cpp measured_gemm): transformer-shaped BF16 products
// reach a median of 0.65 of the peak at 30 GFLOP and 0.68-0.69 above, and
// the priced curve sits at 0.86 of each decade, never above. The same
// holds for FP16 and TF32, read on the BF16 curve by their peaks.
TEST(DeviceMeasurements, H200TrainingGemmsArePricedBelowTheSameProductsMeasuredAlone) {
  const DeviceSpec h200 = catalog_device("h200");
  std::printf("%-5s %9s %5s %10s %10s %8s\n", "dtype", "GFLOP", "n", "measured", "priced", "ratio");
  for (const std::string dtype : {"bf16", "fp16", "tf32", "fp8"}) {
    const std::map<int, Decade> decades = transformer_products(h200, dtype);
    ASSERT_GE(decades.size(), 5u) << dtype;
    for (const auto& [decade, d] : decades) {
      if (decade < kFirstDecade) continue;
      const double g = median(d.gflop), measured = median(d.efficiency);
      const double priced = gemm_efficiency_at(h200, g, peak_of(h200, dtype));
      const double ratio = priced / measured;
      std::printf("%-5s %9.0f %5zu %10.3f %10.3f %8.3f\n", dtype.c_str(), g, d.gflop.size(), measured, priced, ratio);
      if (dtype == "fp8") {
        // FP8 products reach 0.90-0.93 of BF16's fraction of their peak
        // here (median 0.62 against 0.69 at 1-10 TFLOP; 8192^3: 0.67
        // against 0.73), where the catalog reads FP8 on the BF16 curve
        // (device.hpp, gemm_efficiency_at). Applying the measured 0.92
        // (tried on the catalog's earlier Hopper curve) moved NeMo's nine
        // FP8 Llama runs (tests/data/measured_runs.csv) from a median error
        // of +0.7% to +6.5% and Megatron-Bridge's from +13.6% to +18.6%:
        // Transformer Engine's FP8 linears in training do not lose what an
        // isolated cuBLASLt product does, so it is not applied.
        // What is held: the priced FP8 curve is within 15% of the isolated
        // products and at least 75% of them.
        EXPECT_LE(ratio, 1.15) << dtype << " " << g << " GFLOP";
      } else {
        EXPECT_LE(ratio, 1.0) << dtype << " " << g << " GFLOP: a training GEMM priced above the isolated product";
      }
      EXPECT_GE(ratio, 0.75) << dtype << " " << g << " GFLOP";
    }
  }
}

// The architecture's GEMM ceiling is the largest dense BF16 product over
// the peak of the sweep its curve comes from (0.737, catalog.cpp); the
// published best shape (794.5 of 989.4 on H100) is a best case: here the
// same 8192^3 product spans 712-793 TFLOP/s by data and run, and every
// BF16 product measured, through cuBLASLt and through PyTorch, with normal
// and uniform data, lies within 0.72-0.81 of peak at its best.
TEST(DeviceMeasurements, HopperGemmCeilingIsTheLargestProductOfItsSweep) {
  const DeviceSpec h200 = catalog_device("h200");
  double best = 0;
  for (const char* file : {"device/h200/gemm.csv", "device/h200/gemm_bf16_repeat.csv"})
    for (const CsvRow& r : read_csv(file))
      if (r.at("dtype") == "bf16") best = std::max(best, num(r, "tflops"));
  for (const CsvRow& r : read_csv("device/h200/matmul_crosscheck.csv"))
    if (r.at("dtype") == "bf16") best = std::max(best, num(r, "tflops"));
  const double ceiling = architecture_profile(Architecture::hopper).gemm_peak_fraction;
  const DeviceMeasurements sweep = read_device_measurements(std::string(AUTOHAAP_TEST_DATA_DIR) + "/device/h200", h200);
  std::printf("largest BF16 product of the sweep %.3f, of every run %.3f (%.1f TFLOP/s); hopper ceiling %.3f\n",
              sweep.largest, best / h200.peak_tflops, best, ceiling);
  EXPECT_NEAR(ceiling, sweep.largest, 0.001);
  EXPECT_GE(best / h200.peak_tflops, 0.72);
  EXPECT_LE(best / h200.peak_tflops, 0.81);
}

// The catalog's Hopper curve is the H200 folder as `autohaap device
// --measured` reads it (the catalog cannot read tests/data at run time, so
// it holds the numbers; this keeps them equal).
TEST(DeviceMeasurements, TheCatalogsHopperCurveIsTheH200Measurement) {
  const DeviceMeasurements m =
      read_device_measurements(std::string(AUTOHAAP_TEST_DATA_DIR) + "/device/h200", catalog_device("h200"));
  const ArchitectureProfile& hopper = architecture_profile(Architecture::hopper);
  EXPECT_EQ(hopper.measured_at_tflops, catalog_device("h200").peak_tflops);
  ASSERT_EQ(hopper.measured_gemm.size(), m.gemm.size());
  for (std::size_t i = 0; i < m.gemm.size(); ++i) {
    EXPECT_NEAR(hopper.measured_gemm[i].gemm_gflop, m.gemm[i].gemm_gflop, 1e-6) << i;
    EXPECT_NEAR(hopper.measured_gemm[i].efficiency, m.gemm[i].efficiency, 1e-6) << i;
  }
}

// Fused attention, causal, head dim 128, 2k-16k tokens a sequence: the
// forward executes half of the dense 4·b·s²·h (the blocks above the
// diagonal are skipped), the backward `backward_ratio` times that (the
// cost model's own figure for the attention core). PyTorch's flash
// backend is FlashAttention-2; its cuDNN backend is the fused attention
// Transformer Engine runs on Hopper, the catalog's flash3 figures. The
// catalog takes its Hopper figures from these medians (io/catalog.cpp):
// each within 3% of them.
TEST(DeviceMeasurements, H200AttentionKernelsAsTheCatalogPricesThem) {
  const DeviceSpec h200 = catalog_device("h200");
  ModelSpec m = catalog_model("llama3-8b");
  m.kv_heads = m.heads;
  const double backward_ratio = layer_forward_work(m, 0, BatchShape{1, 8192}).ops[1].backward_ratio;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_backend;
  for (const CsvRow& r : read_csv("device/h200/attention.csv")) {
    if (num(r, "causal") != 1 || num(r, "head_dim") != 128 || num(r, "seq") < 2048 ||
        num(r, "heads") != num(r, "kv_heads"))
      continue;
    const double b = num(r, "batch"), s = num(r, "seq"), hidden = num(r, "heads") * num(r, "head_dim");
    const double executed = 0.5 * 4 * b * s * s * hidden;
    auto& [fwd, bwd] = by_backend[r.at("backend")];
    fwd.push_back(executed / (num(r, "forward_ms") * 1e-3) / (h200.peak_tflops * 1e12));
    bwd.push_back(backward_ratio * executed / (num(r, "backward_ms") * 1e-3) / (h200.peak_tflops * 1e12));
  }
  const ArchitectureProfile& hopper = architecture_profile(Architecture::hopper);
  struct Expected {
    const char* backend;
    const char* catalog;
    double forward, backward;
  };
  for (const Expected& e : {Expected{"flash", "flash2", hopper.attention_forward_efficiency,
                                     hopper.attention_backward_efficiency},
                            Expected{"cudnn", "flash3", hopper.flash3_forward_efficiency,
                                     hopper.flash3_backward_efficiency}}) {
    const auto& [fwd, bwd] = by_backend.at(e.backend);
    ASSERT_EQ(fwd.size(), 4u) << e.backend;
    const double f = median(fwd), b = median(bwd);
    std::printf("attention %-6s (catalog %s): forward %.3f (catalog %.2f), backward %.3f (catalog %.2f)\n", e.backend,
                e.catalog, f, e.forward, b, e.backward);
    EXPECT_NEAR(f / e.forward, 1.0, 0.03) << e.backend;
    EXPECT_NEAR(b / e.backward, 1.0, 0.03) << e.backend;
  }
}

// The same kernels from 1k to 16k tokens: throughput rises with the
// sequence a kernel sees, and the cost model prices it at the catalog's
// figure times L / (L + 300), taken at kAttentionFigureTokens (layer_work.cpp;
// FlashAttention-2, Dao 2023, Fig. 4). Each measured forward is within 8%
// of that, where one figure for every length is 22% (flash) and 30%
// (cuDNN) above the kernel at 1k tokens.
TEST(DeviceMeasurements, H200AttentionThroughputRisesWithTheSequenceAsPriced) {
  const DeviceSpec h200 = catalog_device("h200");
  const ArchitectureProfile& hopper = architecture_profile(Architecture::hopper);
  ModelSpec m = catalog_model("llama3-8b");
  m.kv_heads = m.heads;
  int checked = 0;
  for (const CsvRow& r : read_csv("device/h200/attention.csv")) {
    if (num(r, "causal") != 1 || num(r, "head_dim") != 128 || num(r, "heads") != num(r, "kv_heads") ||
        (r.at("backend") != "flash" && r.at("backend") != "cudnn"))
      continue;
    const double b = num(r, "batch"), s = num(r, "seq"), hidden = num(r, "heads") * num(r, "head_dim");
    const double measured = 0.5 * 4 * b * s * s * hidden / (num(r, "forward_ms") * 1e-3) / (h200.peak_tflops * 1e12);
    const double figure = r.at("backend") == "flash" ? hopper.attention_forward_efficiency
                                                      : hopper.flash3_forward_efficiency;
    const double priced =
        figure * layer_forward_work(m, 0, BatchShape{1, static_cast<int>(s)}).ops[1].attention_block_efficiency;
    std::printf("attention %-6s %6.0f tokens: measured %.3f, priced %.3f (one figure: %.3f)\n", r.at("backend").c_str(),
                s, measured, priced, figure);
    EXPECT_NEAR(priced / measured, 1.0, 0.08) << r.at("backend") << " at " << s;
    if (s == 1024) EXPECT_GT(figure / measured, 1.2) << r.at("backend") << ": one figure would do as well";
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// Streaming kernels (copy, add, GeLU, LayerNorm, RMSNorm, softmax,
// dropout over 1 GiB) move their bytes at a median 0.75 of the H200's
// 4800 GB/s (copy and add 0.88-0.91, softmax 0.27): the default
// memory_efficiency of 0.8 is within 10% of the median.
TEST(DeviceMeasurements, H200StreamingKernelsNearTheDefaultMemoryEfficiency) {
  const DeviceSpec h200 = catalog_device("h200");
  std::vector<double> fractions;
  for (const CsvRow& r : read_csv("device/h200/elementwise.csv")) {
    fractions.push_back(num(r, "bytes") / (num(r, "ms") * 1e-3) / (h200.hbm_GBps * 1e9));
    std::printf("%-12s %.2f of HBM bandwidth\n", r.at("kernel").c_str(), fractions.back());
  }
  ASSERT_EQ(fractions.size(), 7u);
  EXPECT_NEAR(median(fractions) / kDefaultMemoryEfficiency, 1.0, 0.10);
}

// With CUDA's lazy module loading, the context, cuBLAS (handle and
// workspace) and cuDNN's attention hold 701 MiB beyond PyTorch's pool on
// the H200. The cost model reserves cuda_context_GiB, BigScience's eagerly
// loaded 1113 MiB: on the side of not fitting, as its comment says.
TEST(DeviceMeasurements, RuntimeMemoryOnH200IsBelowTheContextTheModelReserves) {
  std::map<std::string, double> mib;
  for (const CsvRow& r : read_csv("device/h200/memory.csv")) mib[r.at("what")] = num(r, "MiB_beyond_reserved");
  const double measured = mib.at("context+cublas+cudnn");
  const double reserved = CostParameters{}.cuda_context_GiB * 1024;
  std::printf("context + cuBLAS + cuDNN: %.0f MiB measured, %.0f MiB reserved by the model\n", measured, reserved);
  EXPECT_LE(measured, reserved);
  EXPECT_GE(measured, 0.5 * reserved);
}

// The layers the device scripts ran (scripts/device/layers.py): Llama 3
// 8B's, and a GPT layer of hidden 4096, 32 heads, with dropout.
ModelSpec measured_layer_model(const std::string& name) {
  if (name == "llama3-8b") return catalog_model("llama3-8b");
  EXPECT_EQ(name, "gpt-h4096");
  ModelSpec gpt;
  gpt.name = "gpt-h4096";
  gpt.family = ModelFamily::gpt;
  gpt.layers = 1;
  gpt.hidden = 4096;
  gpt.ffn_hidden = 4 * 4096;
  gpt.heads = gpt.kv_heads = 32;
  gpt.vocab = 50257;
  gpt.seq_len = 2048;
  gpt.flash_attention = true;
  gpt.dropout = true;
  return gpt;
}

// Eager PyTorch (runtime fsdp, FlashAttention-2, bf16) on one H200, as the
// device scripts ran `model` at `seq_len` tokens, `batch` sequences a step.
Problem eager_run_on_one_h200(ModelSpec model, int seq_len, int batch) {
  Problem p;
  p.model = std::move(model);
  p.model.seq_len = seq_len;
  p.cluster = ClusterSpec{"one-h200", {make_node_group(catalog_device("h200"), 1, 1)}, 12.5, 20};
  p.training.seq_len = seq_len;
  p.training.precision = Precision::bf16;
  p.training.runtime = Runtime::fsdp;
  p.training.attention_kernel = AttentionKernel::flash2;
  p.training.global_batch = batch;
  return p;
}

// Whole layers in eager PyTorch (RMSNorm, RoPE, SwiGLU and residuals as
// separate kernels; FlashAttention-2 through scaled_dot_product_attention)
// against the cost model's layer time for the same shapes under runtime
// fsdp (plain PyTorch) with attention_kernel flash2. A layer inside a
// training step is never faster than the same layer timed alone: the model
// prices it at 1.17-1.27 times the measurement, which is the GEMM curve's
// training_over_isolated share (the first test: 0.86 of the isolated
// product) and the attention kernels' alike. Held: at least the
// measurement and within 30% of it.
TEST(DeviceMeasurements, EagerTransformerLayersOnH200AgainstTheModel) {
  int compared = 0;
  std::printf("%-10s %3s %10s %10s %10s %10s\n", "layer", "b", "fwd ms", "model", "bwd ms", "model");
  for (const CsvRow& r : read_csv("device/h200/layer.csv")) {
    const Problem p = eager_run_on_one_h200(measured_layer_model(r.at("layer")), static_cast<int>(num(r, "seq")),
                                            static_cast<int>(num(r, "micro_batch")));
    const Timing t = CostModel(p).layer_timing(StageShape{0, 1, 1, Recompute::none}, static_cast<int>(num(r, "micro_batch")), 0);
    const double fwd = num(r, "forward_ms") * 1e-3, bwd = num(r, "backward_ms") * 1e-3;
    std::printf("%-10s %3.0f %10.2f %10.2f %10.2f %10.2f\n", r.at("layer").c_str(), num(r, "micro_batch"), fwd * 1e3,
                t.forward_s * 1e3, bwd * 1e3, t.backward_s * 1e3);
    EXPECT_GE(t.total(), fwd + bwd) << r.at("layer");
    EXPECT_LE(t.total(), (fwd + bwd) * 1.30) << r.at("layer");
    ++compared;
  }
  EXPECT_EQ(compared, 5);
}

// What training keeps, measured with PyTorch's allocator on the H200
// (scripts/device/memory_sweep.py): stacks of 1, 2 and 4 layers, each
// layer's share the slope between 2 and 4 (the stack's input, output and
// weight gradients cancel). Llama 3 8B's layer as torchtitan writes it and
// a GPT layer with dropout, bf16, no tp, against layer_activation_bytes for
// PyTorch's eager modules (BatchShape::eager_modules):
//   Llama 3 8B, 8192 tokens: none 44.0 bytes a token and hidden unit,
//     op-level selective 15.5, full 2.0 (+ the 1 MiB fp32 log-sum-exp a
//     sequence of the attention kernel);
//   GPT, 2048 tokens: none 34.0 (Korthikanti et al. 2022's 34 exactly),
//     op-level 4.0 (biased linears are aten.addmm, not kept), full 2.0.
// Asserted within 1%. Megatron's fused Llama layer keeps 34: 10 less than
// eager PyTorch (silu's output and the repeated K and V).
TEST(DeviceMeasurements, ActivationsEagerPyTorchKeepsOnH200AreTheModels) {
  std::map<std::string, double> held;  // layer/micro-batch/recompute/depth -> MiB
  std::map<std::string, int> seq;
  for (const CsvRow& r : read_csv("device/h200/training_memory.csv")) {
    held[r.at("layer") + "/" + r.at("micro_batch") + "/" + r.at("recompute") + "/" + r.at("layers")] =
        num(r, "held_MiB");
    seq[r.at("layer")] = static_cast<int>(num(r, "seq"));
  }
  const std::map<std::string, Recompute> modes = {
      {"none", Recompute::none}, {"op_level", Recompute::selective}, {"full", Recompute::full}};
  int compared = 0;
  std::printf("%-10s %3s %-9s %12s %12s %10s\n", "layer", "b", "recompute", "MiB/layer", "model", "B/(s·b·h)");
  for (const auto& [layer, seq_len] : seq) {
    const ModelSpec m = measured_layer_model(layer);
    for (const int b : {1, 2, 4}) {
      for (const auto& [mode, recompute] : modes) {
        const std::string key = layer + "/" + std::to_string(b) + "/" + mode + "/";
        if (!held.count(key + "2") || !held.count(key + "4")) continue;
        const double measured = (held.at(key + "4") - held.at(key + "2")) / 2 * kMiB;
        BatchShape x{static_cast<double>(b), seq_len, 1, 2, false};
        x.eager_modules = true;
        const double model = layer_activation_bytes(m, 0, x, recompute);
        std::printf("%-10s %3d %-9s %12.1f %12.1f %10.2f\n", layer.c_str(), b, mode.c_str(), measured / kMiB,
                    model / kMiB, measured / (static_cast<double>(b) * seq_len * m.hidden));
        EXPECT_NEAR(model / measured, 1.0, 0.01) << key;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 12);
}

// The backward of a fully recomputed layer replays its whole forward: the
// model's working set (layer_working_bytes, full: the layer's activations
// without recompute). Measured: the backward's peak over the stack's input,
// its gradient, the output gradient and the weight gradients. The model
// leaves out the gradients the backward itself holds beside the replayed
// tensors (the ffn-wide gradients of SwiGLU: Llama's peak is 1% over the
// model at one sequence, 12% at two); GPT frees its tensors early enough
// that the model is above its peak. Asserted: at most 15% under it (a
// tenth of one layer's activations: under 1% of a stage of many layers).
TEST(DeviceMeasurements, RecomputedBackwardNeedsNoMoreThanTheModelsWorkingSet) {
  int compared = 0;
  for (const CsvRow& r : read_csv("device/h200/training_memory.csv")) {
    if (r.at("recompute") != "full" || r.at("layers") != "1") continue;
    const ModelSpec m = measured_layer_model(r.at("layer"));
    const double b = num(r, "micro_batch"), s = num(r, "seq");
    const double io = 2.0 * s * b * m.hidden;  // one 16-bit s·b·h tensor
    const double measured = num(r, "backward_peak_MiB") * kMiB - 3 * io - 2 * layer_params(m, 0);
    const BatchShape x{b, static_cast<int>(s), 1, 2, false};
    BatchShape eager = x;
    eager.eager_modules = true;
    const double model = layer_working_bytes(m, 0, eager, Recompute::full);
    std::printf("%-10s b=%.0f: backward's working set %.0f MiB, model %.0f MiB\n", r.at("layer").c_str(), b,
                measured / kMiB, model / kMiB);
    EXPECT_GE(model, 0.85 * measured) << r.at("layer");
    ++compared;
  }
  EXPECT_EQ(compared, 4);
}

// The last stage's loss as FSDP trainers run it (torchtitan: the output
// projection to Llama 3's 128,256 tokens, cross_entropy on the fp32 upcast
// of the bf16 logits): measured peak over the final norm's output, which
// the head keeps, against the cost model's logits for runtime fsdp (2
// bytes a logit plus 10 the loss holds: 12 at the backward's peak; the
// forward's peak is 10). Asserted within 1%.
TEST(DeviceMeasurements, UnfusedCrossEntropyPeakOnH200IsTheModels) {
  int compared = 0;
  for (const CsvRow& r : read_csv("device/h200/loss_memory.csv")) {
    const int b = static_cast<int>(num(r, "micro_batch"));
    const Problem p = eager_run_on_one_h200(catalog_model("llama3-8b"), static_cast<int>(num(r, "seq")), b);
    ASSERT_EQ(num(r, "vocab"), p.model.vocab);
    const MemoryBreakdown mem = CostModel(p).stage_memory(StageShape{0, 1, 1, Recompute::none}, b, 0, 0, 0, 1, 1);
    const double norm_output = 2.0 * b * p.model.seq_len * p.model.hidden;
    const double measured = num(r, "backward_peak_MiB") * kMiB - norm_output;
    const double logits = static_cast<double>(b) * p.model.seq_len * p.model.vocab;
    std::printf("b=%d s=%d: loss peak %.0f MiB (%.2f B a logit), model %.0f MiB\n", b, p.model.seq_len,
                measured / kMiB, measured / logits, mem.logits / kMiB);
    EXPECT_NEAR(mem.logits / measured, 1.0, 0.01);
    ++compared;
  }
  EXPECT_EQ(compared, 3);
}

// What recompute costs in time, eager PyTorch on the H200
// (training_memory.csv, two layers: forward, and forward + backward under
// each mode): the backward's replay over the forward. Llama 3 8B at two
// sequences of 8192 tokens (one sequence's figures are too short to time
// apart from the noise): full recompute replays 0.88 of a forward (the
// replay builds no autograd graph); the model's share, from the same
// layer_timing the search uses, is asserted within 25% of it.
// torchtitan's op-level policy replayed 0.46 of a forward here and 0.47 in
// a third run of the same script (7.9 ms, about 0.28, in the first). Timed
// op by op (op_sweep.py, op_times.csv) the ops it replays — wk, wo, w3 and
// every element-wise op — take 0.41 of the forward's parts, 5.49 ms at two
// sequences; the rest of the 0.47 is the checkpoint's own overhead. The
// model's share is 0.32: its replayed work costs what was measured (asserted:
// the model's replay time within 25% of the parts'), over a forward it
// prices 30% above this eager layer's (the training share of its GEMM
// curve, EagerTransformerLayersOnH200AgainstTheModel); RoPE in fp32 and the
// K/V repeat (0.43 ms of the 6.6 a sequence) are element-wise work it does
// not count.
TEST(DeviceMeasurements, RecomputeReplaysTheShareOfTheForwardMeasuredOnH200) {
  std::map<std::string, CsvRow> rows;
  for (const CsvRow& r : read_csv("device/h200/training_memory.csv"))
    if (r.at("layer") == "llama3-8b" && r.at("layers") == "2" && r.at("micro_batch") == "2") rows[r.at("recompute")] = r;
  ASSERT_EQ(rows.size(), 3u);
  const double forward = num(rows.at("none"), "forward_ms");
  const double none = num(rows.at("none"), "forward_backward_ms");
  const Problem p = eager_run_on_one_h200(catalog_model("llama3-8b"), 8192, 2);
  const CostModel model(p);
  const Timing base = model.layer_timing(StageShape{0, 1, 1, Recompute::none}, 2, 0);
  for (const auto& [mode, recompute] : {std::pair{"op_level", Recompute::selective}, std::pair{"full", Recompute::full}}) {
    const double measured = (num(rows.at(mode), "forward_backward_ms") - none) / forward;
    const Timing t = model.layer_timing(StageShape{0, 1, 1, recompute}, 2, 0);
    const double predicted = (t.total() - base.total()) / base.forward_s;
    std::printf("%-8s replays %.2f of the forward, model %.2f\n", mode, measured, predicted);
    if (recompute == Recompute::full) EXPECT_NEAR(predicted / measured, 1.0, 0.25);
    if (recompute == Recompute::selective) {
      double replayed_ms = 0, parts_ms = 0;
      for (const CsvRow& r : read_csv("device/h200/op_times.csv")) {
        if (r.at("micro_batch") != "2" || num(r, "op_level_replays") < 0) continue;
        parts_ms += num(r, "forward_ms");
        if (num(r, "op_level_replays") == 1) replayed_ms += num(r, "forward_ms");
      }
      const double model_ms = (t.total() - base.total()) * 1e3;
      std::printf("op-level replay from the parts: %.2f ms, %.2f of their %.2f ms; model %.2f ms\n", replayed_ms,
                  replayed_ms / parts_ms, parts_ms, model_ms);
      EXPECT_NEAR(model_ms / replayed_ms, 1.0, 0.25);
    }
  }
}

std::string h200_folder() { return std::string(AUTOHAAP_TEST_DATA_DIR) + "/device/h200"; }

// What `autohaap device --measured` reads of the H200's folder, checked
// against the same CSV summed up by hand (a script outside the library):
// the largest BF16 product of any shape is 729.6 TFLOP/s (0.7374 of
// 989.4); the transformer-shaped products from 10 GFLOP up fall in four
// decades of 27, 72, 54 and 9 products (the 100 TFLOP decade has 2: too
// few), with medians 34.36, 274.88, 2199.02 and 35184.37 GFLOP at 0.6460,
// 0.6829, 0.6813 and 0.6912 of peak; each is scaled by 0.7374 / 0.6912 so
// the largest decade sits at the largest product.
TEST(DeviceMeasurements, TheH200FolderReadsAsTheCatalogsConvention) {
  const DeviceMeasurements m = read_device_measurements(h200_folder(), catalog_device("h200"));
  EXPECT_NEAR(m.largest, 0.73742, 1e-5);
  EXPECT_EQ(m.gemm_products, 27 + 72 + 54 + 9);
  const double scale = 0.73742 / 0.69123;
  const std::vector<EfficiencyPoint> expected = {
      {34.359738, 0.64600 * scale}, {274.8779065, 0.68290 * scale}, {2199.023256, 0.68135 * scale}, {35184.372089, 0.73742}};
  ASSERT_EQ(m.gemm.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(m.gemm[i].gemm_gflop, expected[i].gemm_gflop, 1e-6) << i;
    EXPECT_NEAR(m.gemm[i].efficiency, expected[i].efficiency, 2e-5) << i;
  }
  // The attention and streaming figures the tests above print.
  EXPECT_NEAR(m.flash2_forward, 0.329, 0.001);
  EXPECT_NEAR(m.flash2_backward, 0.273, 0.001);
  EXPECT_NEAR(m.flash3_forward, 0.606, 0.001);
  EXPECT_NEAR(m.flash3_backward, 0.501, 0.001);
  EXPECT_NEAR(m.memory_efficiency, 0.748, 0.001);
}

// The device file: every measured figure times what training keeps of an
// isolated kernel; below the smallest measured size the base curve's shape,
// scaled to meet the measurement; everything else the base's. Written and
// read back, it is the same device.
TEST(DeviceMeasurements, CalibratedDeviceCarriesTheMeasurementInTrainingTerms) {
  const DeviceSpec base = catalog_device("h200");
  const DeviceMeasurements m = read_device_measurements(h200_folder(), base);
  const DeviceSpec d = calibrated_device(base, m, "h200-measured");
  const double share = training_over_isolated();
  EXPECT_EQ(d.name, "h200-measured");
  EXPECT_EQ(d.memory_GiB, base.memory_GiB);
  EXPECT_EQ(d.peak_tflops, base.peak_tflops);
  for (const EfficiencyPoint& p : m.gemm) EXPECT_NEAR(gemm_efficiency(d, p.gemm_gflop), p.efficiency * share, 1e-12);
  const double first = m.gemm.front().gemm_gflop;
  const double scale = m.gemm.front().efficiency * share / gemm_efficiency(base, first);
  for (const EfficiencyPoint& p : base.gemm_efficiency)
    if (p.gemm_gflop < first) EXPECT_NEAR(gemm_efficiency(d, p.gemm_gflop), p.efficiency * scale, 1e-12);
  EXPECT_NEAR(d.attention_forward_efficiency, m.flash2_forward * share, 1e-12);
  EXPECT_NEAR(d.attention_backward_efficiency, m.flash2_backward * share, 1e-12);
  EXPECT_NEAR(d.flash3_forward_efficiency, m.flash3_forward * share, 1e-12);
  EXPECT_NEAR(d.flash3_backward_efficiency, m.flash3_backward * share, 1e-12);
  EXPECT_EQ(d.memory_efficiency, m.memory_efficiency);

  const std::string path = (std::filesystem::temp_directory_path() / "autohaap-h200-measured.yaml").string();
  write_device_file(d, path);
  const DeviceSpec back = load_device(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.name, d.name);
  ASSERT_EQ(back.gemm_efficiency.size(), d.gemm_efficiency.size());
  for (std::size_t i = 0; i < d.gemm_efficiency.size(); ++i) {
    EXPECT_EQ(back.gemm_efficiency[i].gemm_gflop, d.gemm_efficiency[i].gemm_gflop);
    EXPECT_EQ(back.gemm_efficiency[i].efficiency, d.gemm_efficiency[i].efficiency);
  }
  EXPECT_EQ(back.flash3_backward_efficiency, d.flash3_backward_efficiency);
  EXPECT_EQ(back.memory_efficiency, d.memory_efficiency);
}

// Bad folders are refused by name: no such folder, no gemm.csv, a header
// without the columns, a bad cell (file, row and column named), too few
// products, and a base that is not the GPU measured (the efficiencies come
// out above its peak).
TEST(DeviceMeasurements, BadMeasurementFoldersAreRefusedByName) {
  namespace fs = std::filesystem;
  const DeviceSpec h200 = catalog_device("h200");
  const fs::path dir = fs::temp_directory_path() / "autohaap-bad-measurements";
  fs::remove_all(dir);
  auto refused = [&](const std::string& folder, const DeviceSpec& d, const std::string& needle) {
    try {
      read_device_measurements(folder, d);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused(dir.string(), h200, "a folder written by scripts/device/measure.sh");
  fs::create_directories(dir);
  refused(dir.string(), h200, "gemm.csv");
  auto write = [&](const std::string& text) { std::ofstream(dir / "gemm.csv") << text; };
  write("dtype,role,gflop\n");
  refused(dir.string(), h200, "header: got 'dtype,role,gflop'; allowed: a header naming dtype,role,gflop,ms");
  write("dtype,role,gflop,ms\nbf16,fc1,100,abc\n");
  refused(dir.string(), h200, "gemm.csv: row 2.ms: got 'abc'");
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nbf16,fc2,100,0.2\n");
  refused(dir.string(), h200, "at least 3 transformer-shaped bf16 products");
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nbf16,fc2,100,0.2\nbf16,qkv,100,0.2\n");
  EXPECT_EQ(read_device_measurements(dir.string(), h200).gemm.size(), 1u);
  refused(dir.string(), catalog_device("v100-32gb"),
          "gemm.csv: dtype: got 'bf16'; allowed: rows of dtype fp16, the 16-bit type v100-32gb trains in");
  write("dtype,role,gflop,ms\nfp16,fc1,100,0.2\nfp16,fc2,100,0.2\nfp32,qkv,100,0.2\n");
  refused(dir.string(), h200, "gemm.csv: dtype: got 'fp16, fp32'; allowed: rows of dtype bf16");
  // A type the sweep never times is a typo, said by row, not a row left out.
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nBF16,fc2,100,0.2\nbf16,qkv,100,0.2\n");
  refused(dir.string(), h200,
          "gemm.csv: row 3.dtype: got 'BF16'; allowed: one of the types scripts/device/gemm_sweep.cu times: bf16, "
          "fp16, fp32, fp8, tf32 (did you mean 'bf16'?)");
  // With the product's shape, its FLOPs are 2·m·n·k: a row that says
  // otherwise is refused (2·4096·4096·4096 / 1e9 = 137.438953472).
  write("dtype,role,m,n,k,gflop,ms\nbf16,fc1,4096,4096,4096,137.438953,0.2\nbf16,fc2,4096,4096,4096,13.74,0.2\n");
  refused(dir.string(), h200, "gemm.csv: row 3.gflop: got '13.74'; allowed: 2·m·n·k / 1e9 = 137.438953472 GFLOP");
  // So is an attention backend the sweep never times: spelled otherwise,
  // every row of a backend was once left out and the base device's figures
  // kept without a word.
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nbf16,fc2,100,0.2\nbf16,qkv,100,0.2\n");
  std::ofstream(dir / "attention.csv") << "backend,batch,heads,kv_heads,seq,head_dim,causal,forward_ms,backward_ms\n"
                                          "Flash,2,32,32,4096,128,1,1.0,3.0\n";
  refused(dir.string(), h200,
          "attention.csv: row 2.backend: got 'Flash'; allowed: one of the backends scripts/device/kernel_sweep.py "
          "times: cudnn, efficient, flash (did you mean 'flash'?)");
  // A causal cell is 0 or 1: 'true' had made its rows count as not
  // causal, left out without a word, as had rows of no priced shape.
  std::ofstream(dir / "attention.csv") << "backend,batch,heads,kv_heads,seq,head_dim,causal,forward_ms,backward_ms\n"
                                          "flash,2,32,32,4096,128,true,1.0,3.0\n";
  refused(dir.string(), h200, "attention.csv: row 2.causal: got 'true'; allowed: 0 or 1");
  std::ofstream(dir / "attention.csv") << "backend,batch,heads,kv_heads,seq,head_dim,causal,forward_ms,backward_ms\n"
                                          "flash,2,32,32,4096,64,1,1.0,3.0\n";
  refused(dir.string(), h200, "attention.csv: rows: got '1 flash/cudnn rows, none of that shape'");
  // Every row's times are checked, of types, kernels and shapes the device
  // file does not price too: NaN and negative times there had been read.
  std::ofstream(dir / "attention.csv") << "backend,batch,heads,kv_heads,seq,head_dim,causal,forward_ms,backward_ms\n"
                                          "flash,2,32,32,4096,128,1,1.0,3.0\n"
                                          "flash,16,64,64,1024,64,1,nan,-5\n";
  refused(dir.string(), h200, "attention.csv: row 3.forward_ms: got 'nan'");
  std::ofstream(dir / "attention.csv") << "backend,batch,heads,kv_heads,seq,head_dim,causal,forward_ms,backward_ms\n"
                                          "flash,2,32,32,4096,128,1,1.0,3.0\n"
                                          "efficient,2,32,32,4096,128,1,1.0,-3\n";
  refused(dir.string(), h200, "attention.csv: row 3.backward_ms: got '-3'");
  fs::remove(dir / "attention.csv");
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nbf16,fc2,100,0.2\nbf16,qkv,100,0.2\nfp8,fc1,100,-3\n");
  refused(dir.string(), h200, "gemm.csv: row 5.ms: got '-3'");
  // A column named twice (the last one had silently won) and a role that
  // is no name.
  write("dtype,role,gflop,ms,ms\nbf16,fc1,100,0.2,0.3\n");
  refused(dir.string(), h200, "gemm.csv: header: got 'dtype,role,gflop,ms,ms'; allowed: each column once");
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nbf16,fc 2,100,0.2\nbf16,qkv,100,0.2\n");
  refused(dir.string(), h200, "gemm.csv: row 3.role: got 'fc 2'; allowed: a name of 1 to 64 letters");
  // A product timed twice (the second three times slower had shifted the
  // curve without a word).
  write("dtype,role,m,n,k,gflop,ms\nbf16,fc1,4096,4096,4096,137.438953,0.2\n"
        "bf16,fc1,4096,4096,4096,137.438953,0.6\n");
  refused(dir.string(), h200,
          "gemm.csv: row 3.role: got 'fc1'; allowed: one row per product (type, role and m, n, k; row 2.role "
          "already times this one)");
  // A decade of products timed in microseconds beside a correct one: the
  // largest product is sound, the decade's median is not, and is refused
  // by gemm.csv (once only the calibrated device's gemm_efficiency[0]).
  fs::remove(dir / "attention.csv");
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nbf16,fc2,100,0.2\nbf16,qkv,100,0.2\n"
        "bf16,fc1,20,40\nbf16,fc2,20,40\nbf16,qkv,20,40\n");
  refused(dir.string(), h200, "gemm.csv: median efficiency of the bf16 products of 10 to 100 GFLOP");
  // An efficiency under 1% of the peak is a broken timing or a unit slip.
  write("dtype,role,gflop,ms\nbf16,fc1,100,0.2\nbf16,fc2,100,0.2\nbf16,qkv,100,0.2\n");
  std::ofstream(dir / "elementwise.csv") << "kernel,bytes,ms\ncopy,2147483648,1e9\n";
  refused(dir.string(), h200, "elementwise.csv: median fraction of hbm_GBps");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace autohaap
