// Catalog: the built-in devices, models, clusters and training setups, by
// name, so `--model llama3-8b --cluster default` works with no file at all.
// The same entries ship as YAML under configs/ (file stem = catalog name);
// a test keeps the two equal.
//
// Promises: every returned spec is valid (positive sizes, sorted efficiency
// curve, divisible heads). Unknown names throw InputError whose "allowed"
// lists every catalog name. Callers: the spec loader, the CLI's defaults,
// tests. Cost: a linear scan of a small table; clusters copy their devices.
// Thread-safe (no mutable state).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/device.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// Achievable fraction of dense peak vs GEMM size (GFLOP) on the reference
// device, the A100 (312 TFLOP/s BF16): small GEMMs are launch- and
// tail-bound, large ones approach a ceiling. The ceiling is what end-to-end
// training reaches, not an isolated cuBLAS GEMM: fitted once to the 12
// complete Megatron-LM runs on A100 (tests/unit/calibration_test.cpp). Every
// other device's curve is derived from it by its architecture
// (architecture_gemm_curve), or, where the architecture was measured
// across sizes (Hopper), from that measurement above its smallest size.
// The one place to retune it.
inline constexpr std::array<EfficiencyPoint, 6> kReferenceGemmEfficiency = {{
    {0.01, 0.10},
    {0.1, 0.25},
    {1, 0.45},
    {10, 0.58},
    {100, 0.64},
    {1000, 0.70},
}};
inline constexpr double kReferencePeakTflops = 312;

// What one GPU generation reaches, measured on public benchmarks of its
// parts (sources beside the table in catalog.cpp).
struct ArchitectureProfile {
  Architecture architecture;
  const char* name;
  // Largest isolated dense GEMM (cuBLAS/hipBLASLt, BF16 or FP16) over the
  // dense peak: how close the generation's software gets to its datasheet.
  // Where measured training shows the generation's GEMMs below that best
  // case (Hopper: a measured sweep; CDNA2: MosaicML's MI250 runs), the
  // fraction that measurement implies (catalog.cpp, beside the table).
  double gemm_peak_fraction;
  // Fused attention kernels, fraction of peak: FlashAttention-2 (or the
  // generation's nearest kernel), and FlashAttention-3 / cuDNN where the
  // generation has them (0: none).
  double attention_forward_efficiency;
  double attention_backward_efficiency;
  double flash3_forward_efficiency;
  double flash3_backward_efficiency;
  // Where the generation's GEMMs were measured across sizes (isolated
  // efficiency per size decade, in the convention of io/
  // device_measurements.hpp, at peak `measured_at_tflops`): the curve's
  // shape and level from the smallest measured size up. Empty: the
  // reference curve's shape throughout.
  std::vector<EfficiencyPoint> measured_gemm;
  double measured_at_tflops = 0;
  // The published measured training runs these figures were checked
  // against (tests/data/measured_runs.csv), in words; empty where none is:
  // the figures are then isolated kernel rates only, and the CLI says so
  // for a device that keeps them (device_notes, uses_architecture_defaults).
  const char* checked_against = "";
};
const ArchitectureProfile& architecture_profile(Architecture a);
std::vector<std::string> architecture_names();
// The architecture named `name`, or nullopt.
std::optional<Architecture> parse_architecture(const std::string& name);
// A device's GEMM-efficiency curve from its architecture and peak: the
// reference curve, scaled by the architecture's GEMM ceiling relative to
// the A100's, and shifted in size by the peak ratio. Why the shift: what
// limits a small GEMM is its duration (launch latency, one partial wave of
// tiles), so a GEMM that takes t on the reference reaches the same
// efficiency as one that takes t on a device k times faster, i.e. k times
// the FLOPs. Where the architecture was measured (measured_gemm), the
// measured points, shifted from the peak they were measured at, replace
// it from the smallest measured size up (measured_gemm_curve).
std::vector<EfficiencyPoint> architecture_gemm_curve(Architecture a, double peak_tflops);
// A training GEMM curve from isolated measured points (sorted by size):
// each point times training_over_isolated(); below the smallest, the shape
// of `below` (a training curve), scaled to meet it there.
std::vector<EfficiencyPoint> measured_gemm_curve(const std::vector<EfficiencyPoint>& isolated,
                                                 const std::vector<EfficiencyPoint>& below);
// Sets every efficiency figure of `d` to its architecture's defaults.
void apply_architecture_defaults(DeviceSpec& d);
// Whether every efficiency figure of `d` is its architecture's default (no
// device file or measurement set one of its own).
bool uses_architecture_defaults(const DeviceSpec& d);
// What a kernel keeps of its isolated efficiency inside a training step:
// the reference curve's ceiling (end-to-end, fitted on A100 runs) over the
// A100's largest isolated GEMM. Every efficiency a device spec carries is
// an isolated figure times this (the catalog's, and those a device's own
// measurements give: io/device_measurements.hpp).
double training_over_isolated();

// Achievable fraction of HBM bandwidth for streaming (element-wise) kernels.
inline constexpr double kDefaultMemoryEfficiency = 0.8;

// Link defaults of a node group (DESIGN.md "Cluster file"), per GPU,
// unidirectional. Between nodes: the device's nic_GBps (its usual node's
// NICs shared among its GPUs); across the fabric joining different groups
// 100 Gb/s per GPU (typically separate clusters or pods behind a slower
// spine).
inline constexpr double kNvlinkLatencyUs = 5.0;
inline constexpr double kPcieLatencyUs = 10.0;
inline constexpr double kDefaultInterNodeLatencyUs = 10.0;
inline constexpr double kDefaultInterGroupGBps = 12.5;
inline constexpr double kDefaultInterGroupLatencyUs = 20.0;

// The cluster `autohaap` uses when none is given; `default` names it too.
inline constexpr const char* kDefaultClusterName = "mixed-a100-v100";
// The training setup used when no training file is given.
inline constexpr const char* kDefaultTrainingName = "default";

std::vector<std::string> catalog_device_names();
bool is_catalog_device(const std::string& name);
DeviceSpec catalog_device(const std::string& name);

std::vector<std::string> catalog_model_names();
bool is_catalog_model(const std::string& name);
ModelSpec catalog_model(const std::string& name);

// Includes the alias `default` (= kDefaultClusterName).
std::vector<std::string> catalog_cluster_names();
bool is_catalog_cluster(const std::string& name);
ClusterSpec catalog_cluster(const std::string& name);

// `default` (TrainingSpec's defaults) and published setups.
std::vector<std::string> catalog_training_names();
bool is_catalog_training(const std::string& name);
TrainingSpec catalog_training(const std::string& name);

// A group of `nodes` x `gpus_per_node` GPUs of `device` with the default
// links: inside a node NVLink (or Infinity Fabric) when the device has it,
// else PCIe; between nodes the device's nic_GBps. Named after the device.
NodeGroup make_node_group(const DeviceSpec& device, int nodes, int gpus_per_node);

}  // namespace autohaap
