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
#include <string>
#include <vector>

#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/device.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// Achievable fraction of dense peak vs GEMM size (GFLOP), shared by every
// catalog device until measured curves exist: small GEMMs are launch- and
// tail-bound, large ones approach a ceiling. The ceiling is what end-to-end
// training reaches, not an isolated cuBLAS GEMM: fitted once to the 12
// complete Megatron-LM runs on A100 (tests/unit/calibration_test.cpp; all
// within ±13%). The one place to retune it.
inline constexpr std::array<EfficiencyPoint, 6> kDefaultGemmEfficiency = {{
    {0.01, 0.10},
    {0.1, 0.25},
    {1, 0.45},
    {10, 0.58},
    {100, 0.64},
    {1000, 0.70},
}};
// Achievable fraction of HBM bandwidth for streaming (element-wise) kernels.
inline constexpr double kDefaultMemoryEfficiency = 0.8;

// Link defaults of a node group (DESIGN.md "Cluster file"), per GPU,
// unidirectional. One 200 Gb/s NIC per GPU between nodes; one 100 Gb/s per
// GPU across the fabric joining different groups (typically separate
// clusters or pods behind a slower spine).
inline constexpr double kDefaultInterNodeGBps = 25.0;
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
// else PCIe; between nodes kDefaultInterNodeGBps. Named after the device.
NodeGroup make_node_group(const DeviceSpec& device, int nodes, int gpus_per_node);

}  // namespace autohaap
