// Device measurements: what scripts/device/measure.sh records of one GPU,
// read into the efficiency figures a device spec carries, so that the cost
// model prices a GPU by its own measurements (`autohaap device --measured
// DIR --base DEVICE`), not by its architecture's published figures.
//
// The folder holds gemm.csv (dense products through cuBLASLt:
// dtype,role,m,n,k,gflop,ms,tflops) and optionally attention.csv (fused
// attention per backend: backend,batch,heads,kv_heads,seq,head_dim,causal,
// forward_ms,backward_ms) and elementwise.csv (streaming kernels:
// kernel,bytes,ms); other columns and files are ignored.
// tests/data/device/h200/ is one such folder.
//
// What is read, with FLOPs counted as the cost model counts them:
// - GEMMs, in the device's 16-bit type (bf16, fp16 where the device has
//   no BF16), efficiency = 2mnk over time over the 16-bit peak, in the
//   catalog's convention: an architecture's GEMM figure is its largest
//   product (io/catalog.cpp), and the end-to-end share below was fitted
//   against that. So the largest product measured stands at the top of the
//   curve, and beneath it each size decade from 10 GFLOP up with at least
//   kMinProductsPerDecade transformer-shaped products (role not "square")
//   keeps its median size and its median efficiency relative to the
//   largest decade's. (Taken as bare medians the curve sits a typical
//   product's share, 0.93 on the H200, under that convention: the 89
//   published H100 runs of tests/data/measured_runs.csv, scored with the
//   H200's figures, come out 5% slow at the median instead of +1.0%; the
//   A100 curve's shape at the published best shape gave -3.9%.) Below 10
//   GFLOP a product lasts microseconds and back-to-back calls time the
//   host's launch, which the cost model prices apart
//   (CostParameters::per_layer_overhead_s).
// - Attention: causal rows of head dim 128, at least 2048 tokens, as many
//   key/value heads as query heads; the forward executes half of the dense
//   4·b·s²·h, the backward kFusedAttentionBackwardRatio times that; medians
//   per backend: `flash` (FlashAttention-2: the device's flash2 figures) and
//   `cudnn` (cuDNN's fused attention, what Transformer Engine runs: flash3).
// - Streaming kernels: bytes over time over hbm_GBps, median.
//
// Those are isolated kernels; a device spec carries what a kernel keeps in
// a training step, isolated × training_over_isolated() (io/catalog.hpp), as
// the catalog derives its own figures. Below the smallest measured size
// the device keeps its curve's shape, scaled to meet the measurement.
//
// Every missing file, bad header, row or cell is an InputError naming the
// file, the row and column, the value and what is allowed. Pure apart from
// reading the folder; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "autohaap/specs/device.hpp"

namespace autohaap {

inline constexpr int kMinProductsPerDecade = 3;

struct DeviceMeasurements {
  // Isolated efficiency per size decade (median GFLOP; median efficiency
  // scaled so the largest decade's is `largest`), increasing in size; at
  // least one point.
  std::vector<EfficiencyPoint> gemm;
  int gemm_products = 0;  // transformer-shaped products the points come from
  double largest = 0;     // the largest product's efficiency, any shape
  // Isolated fraction of the 16-bit peak of fused attention's forward and
  // backward; 0: not measured.
  double flash2_forward = 0, flash2_backward = 0;
  double flash3_forward = 0, flash3_backward = 0;
  double memory_efficiency = 0;  // streaming kernels' fraction of hbm_GBps; 0: not measured
};

// Reads `folder` as measured on `device` (its peaks and HBM bandwidth turn
// times into efficiencies).
DeviceMeasurements read_device_measurements(const std::string& folder, const DeviceSpec& device);

// `base` named `name` with every figure the measurements have in training
// terms: its GEMM curve, its attention efficiencies (flash3 wherever
// measured: cuDNN's fused attention, whichever GPU ran it), its memory
// efficiency.
DeviceSpec calibrated_device(const DeviceSpec& base, const DeviceMeasurements& measured, const std::string& name);

// Writes `device` as a device YAML file (every key explicit), atomically.
void write_device_file(const DeviceSpec& device, const std::string& path);

}  // namespace autohaap
