// Parallel rules: when interleaving (vpp) and context parallelism (cp) can
// run, as Megatron-LM allows them. One place for both rules; the plan
// checker (io/plan_io.hpp) and the plan builder (plan_builder.hpp) each
// report a violation under their own key (a plan field, a flag).
#pragma once

#include <string>
#include <vector>

#include "autohaap/specs/model.hpp"

namespace autohaap {

// Interleaved 1F1B over `vpp` chunks per stage (Narayanan et al. 2021,
// Sec. 2.2.2): at least two stages, each stage's layers split into vpp
// chunks of at least one layer, and the micro-batches a multiple of the
// stages (Megatron-LM asserts num_microbatches % pipeline_parallel_size == 0
// for the interleaved schedule). Chunks of a stage differ by at most one
// layer, the first ones larger: an even split where vpp divides the
// stage's layers (Megatron's --num-layers-per-virtual-pipeline-stage),
// else what --pipeline-model-parallel-layout writes out (Megatron-Core
// 0.13+; the 405B recipes put one layer beside the embedding and the loss).
// A transformer family only: generic layers differ from chunk to chunk.
// Returns what is allowed when the rule fails, else "".
std::string interleaving_violation(const ModelSpec& model, int vpp, const std::vector<int>& stage_layers,
                                   int num_micro_batches);

// Layers of chunk v (0-based) of a stage of `stage_layers` layers split
// into vpp chunks: as even as possible, the first chunks one larger.
inline int chunk_layers(int stage_layers, int vpp, int v) {
  return stage_layers / vpp + (v < stage_layers % vpp ? 1 : 0);
}

// Context parallelism over `cp` GPUs: a transformer family, and a sequence
// that splits into 2·cp equal chunks (Transformer Engine's load balancing
// of causal attention gives each GPU two mirrored chunks). Returns what is
// allowed when the rule fails, else "".
std::string context_parallel_violation(const ModelSpec& model, int seq_len, int cp);

}  // namespace autohaap
