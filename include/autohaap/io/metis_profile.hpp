// Metis profiles: reads a profile directory in the format of Metis (Um et
// al., "Metis: Fast Automatic Distributed Training on Heterogeneous GPUs",
// USENIX ATC 2024; github.com/SamsungLabs/Metis) into measured layer
// latencies (cost/profile_table.hpp), so plans can be scored on the same
// measurements Metis uses.
//
// Directory: one JSON file per (device type, tp, micro-batch), named
// `DeviceType.<TYPE>_tp<T>_bs<B>.json` (B: sequences per data-parallel
// replica). Files not ending in .json are ignored; a .json file with
// another name is an error. Keys read from each file:
//
//   model.model_name                          same in every file
//   model.num_layers                          entries per list below
//   model.parameters.parameters_per_layer_bytes[num_layers]
//   execution_time.layer_compute_total_ms[num_layers]  forward + backward, ms
//
// num_layers counts the embedding (first entry) and the output head (last
// entry) around the model's transformer layers, so it must equal the
// model's layers + 2, in every file. Each transformer layer's
// parameters_per_layer_bytes must be the model's layer at 2 (or 4) bytes
// per parameter: a profile of another hidden or ffn size is refused. Metis
// records no sequence length; the timings are taken at the problem's. A
// measured whole layer at tp > 1 already contains its tensor-parallel
// all-reduces, so the cost model adds none on top of it. Optional keys,
// checked to be numbers when present but not used:
// model.parameters.total_parameters_bytes,
// execution_time.{total_time_ms, forward_backward_time_ms,
// batch_generator_time_ms, layernorm_grads_all_reduce_time_ms,
// embedding_grads_all_reduce_time_ms},
// execution_memory.{total_memory, total_memory_mb, layer_memory_total_mb}.
// Other keys are ignored, as Metis's own loader does.
//
// Conversion: entry k of layer_compute_total_ms becomes the ProfileTable
// ops "embedding" (k = 0), "layer" for layer k − 1, or "lm_head" (last), at
// (device, tp T, micro_batch B, the problem's sequence length). Metis
// measures forward and backward together; the split is forward = 1/3,
// backward = 2/3 (a backward pass does the two GEMMs of the input and the
// weight gradients for each forward GEMM; Narayanan et al. 2021, Sec. 5.1).
// execution_time.optimizer_time_ms, where given, becomes the op "optimizer"
// (the whole model's step on one GPU of the tp group): its ratio to the
// analytic step sets the device's optimizer rate (ProfileCorrection).
//
// What the cost model does not take from Metis, and why: per-layer memory
// and total memory (the cost model derives memory from the shapes, per
// recompute mode and pipeline position, which one measured number per layer
// cannot give); all-reduce and batch-generator times (the cost model
// derives gradient-sync time per stage from its parameters and links;
// Metis's are whole-model numbers of one configuration, with no record of
// the links they crossed); parameter bytes (checked for length only). Metis's last
// entry times the whole head — final norm, LM head and loss — so it becomes
// "lm_head" and the head's "elementwise" part is recorded as 0 (only edge
// work looks it up: every transformer layer has its own measured "layer"
// entry in the same configuration). Configurations Metis did not measure
// fall back to the analytic roofline, per lookup.
//
// Device types: a TYPE equal (any letter case) to a device of the cluster
// or of the catalog names that device. Otherwise Metis's names map to every
// catalog variant of that GPU, since Metis does not tell them apart:
// A100 → a100-40gb and a100-80gb, V100 → v100-16gb and v100-32gb, H100 →
// h100-sxm and h100-pcie, A800, H800, H20, H200, GH200, A10, A40, T4, L4,
// L40S, RTX3090, TITANRTX → titan-rtx, RTX2080TI → rtx2080ti, MI250X,
// MI300X (any case; '-', '_' and spaces ignored). To profile variants
// separately, name files by the device (`DeviceType.a100-40gb_tp1_bs2.json`):
// such a file overrides a Metis-named one for the same tp and micro-batch.
//
// Errors are InputError naming the file, the key path and the problem:
// malformed JSON, a missing or non-numeric key, list lengths that disagree
// with num_layers or with the model, a different model_name or num_layers
// than another file, an unknown device type, a name without _tp/_bs sizes,
// two files for one configuration, a directory without profiles.
//
// Callers: the CLI's --profiles flag, tests. Not thread-safe to share a
// table while adding; cost linear in the files' size.
#pragma once

#include <string>
#include <vector>

#include "autohaap/cost/profile_table.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// Device names a Metis device type stands for (rules above); empty if
// none. `cluster` supplies device names beyond the catalog.
std::vector<std::string> metis_device_names(const std::string& metis_type, const ClusterSpec& cluster);

// Adds every profile of `directory` for `problem`'s model and sequence length.
void add_metis_profiles(ProfileTable& table, const std::string& directory, const Problem& problem);
ProfileTable load_metis_profiles(const std::string& directory, const Problem& problem);

}  // namespace autohaap
