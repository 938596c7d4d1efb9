// DeviceSpec: what the cost model needs to know about one accelerator type.
//
// Pure data. Values come from the built-in catalog (io/catalog.hpp) or a
// device YAML file (io/spec_loader.hpp); both are validated on load, so code
// that receives a DeviceSpec may assume every field is positive and the
// efficiency curve is sorted.
#pragma once

#include <string>
#include <vector>

#include "autohaap/specs/training.hpp"

namespace autohaap {

// One point of the achievable-GEMM-efficiency curve: a dense matrix multiply
// of `gemm_gflop` GFLOP reaches `efficiency` of the device's dense peak.
// Small GEMMs cannot fill the device (tail effects, launch overhead), large
// ones approach a ceiling; the curve is interpolated in log(gemm_gflop)
// (Calculon keeps efficiency as such a table, checked for order on load).
struct EfficiencyPoint {
  double gemm_gflop = 0;
  double efficiency = 0;
};

// GPU generation: selects the default efficiency figures of a device
// (io/catalog.hpp, one row per architecture, each with its sources).
enum class Architecture { volta, turing, ampere, ada, hopper, cdna2, cdna3 };

struct DeviceSpec {
  std::string name;              // catalog name, e.g. "a100-80gb"
  Architecture architecture = Architecture::ampere;
  double memory_GiB = 0;         // HBM/GDDR capacity
  double peak_tflops = 0;        // dense tensor-core peak at training precision (BF16, or FP16 where no BF16)
  double peak_fp32_tflops = 0;   // for fp32 training (CUDA cores)
  double peak_tf32_tflops = 0;   // dense TF32 tensor-core peak for tf32 training; 0 = none (fp32 cores)
  double peak_fp8_tflops = 0;    // dense FP8 tensor-core peak for fp8 training; 0 = none (16-bit GEMMs)
  bool has_bf16 = true;          // false: BF16 is refused, FP16 is used
  double hbm_GBps = 0;           // memory bandwidth
  double memory_efficiency = 0.8;  // achievable fraction of hbm_GBps for streaming kernels
  std::vector<EfficiencyPoint> gemm_efficiency;  // sorted by gemm_gflop, non-empty
  // Fused (flash) attention kernels: achieved fraction of dense peak in the
  // forward and in the backward kernel, which runs slower than the forward
  // (it recomputes the scores and has more, smaller reductions).
  // These are FlashAttention-2's (AttentionKernel::flash2).
  double attention_forward_efficiency = 0.6;
  double attention_backward_efficiency = 0.45;
  // The same for FlashAttention-3 / cuDNN fused attention (flash3); 0: the
  // device has no such kernel (it runs FlashAttention-2's).
  double flash3_forward_efficiency = 0;
  double flash3_backward_efficiency = 0;
  // Default per-GPU share of the node's NICs (GB/s, one direction) for a
  // node of this device as usually built (DGX/HGX or a PCIe server); a
  // cluster file may set its own.
  double nic_GBps = 25;
  double nvlink_GBps = 0;        // per-GPU unidirectional GPU-GPU bandwidth; 0 = no NVLink/IF
  double pcie_GBps = 0;          // per-GPU unidirectional host link bandwidth
};

// Achieved fraction of peak for a GEMM of `gflop` GFLOP: the curve
// interpolated linearly in log10(gflop), clamped at both ends.
double gemm_efficiency(const DeviceSpec& device, double gflop);
// The same for a GEMM run at another peak of the device (TF32, FP8): a
// kernel that is k times faster needs k times the FLOPs to fill the device
// for as long (the curve's duration argument, io/catalog.cpp), so the curve
// is read at gflop · peak_tflops / peak; its ceiling is the same fraction
// (the largest FP8 GEMM on H100 reaches 0.81 of the FP8 peak against 0.80
// in BF16: NVIDIA cuBLAS 12 Hopper measurements, 8192³ cuBLASLt E4M3).
// Measured alone on an H200 at 700 W, FP8 products reach 0.90-0.93 of
// BF16's fraction (tests/data/device/h200); NeMo's FP8 training runs do not
// show that loss, so it is not priced (device_measurement_test.cpp).
double gemm_efficiency_at(const DeviceSpec& device, double gflop, double peak_tflops);

const char* to_string(Architecture a);

// Whether a stage on `device` runs its linear-layer GEMMs in FP8: fp8
// training on a device with FP8 tensor cores. Elsewhere an fp8 plan runs
// them in 16 bits (BF16, or FP16 without BF16).
inline bool gemms_in_fp8(Precision precision, const DeviceSpec& device) {
  return precision == Precision::fp8 && device.peak_fp8_tflops > 0;
}

// FlashAttention-2 over the 2022 Triton kernel: Dao 2023 ("FlashAttention-2",
// Sec. 4.1) measures it 1.3-2.5x faster across head dims 64/128, causal or
// not, 512-16k tokens on A100; the long sequences where attention decides
// a step's time sit at the low end: 1.5.
inline constexpr double kFlash2OverTriton = 1.5;

// The attention kernel a stage on `device` runs (TrainingSpec::
// attention_kernel, its default, and flash3 falling back to flash2 where the
// device has no figure for it), and that kernel's fraction of the device's
// dense peak in the forward or the backward pass.
AttentionKernel attention_kernel_on(const DeviceSpec& device, const TrainingSpec& training);
double attention_efficiency(const DeviceSpec& device, const TrainingSpec& training, bool backward);

}  // namespace autohaap
