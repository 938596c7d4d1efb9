// Parallel rules: which parallel degrees a stage and a plan may use, as
// Megatron-LM allows them. One place for every such rule: a stage's tp, cp
// and dp against the model, its node group and the micro-batch (the stage
// rule, used by the search's pruning, the plan loader, the plan builder and
// the Megatron export), and when interleaving (vpp) and context parallelism
// (cp) can run. Each rule returns what would be allowed; the caller reports
// a violation under its own key (a plan field, a flag) or, in the search,
// counts it. Pure functions, thread-safe; cost O(1) (interleaving
// O(stages)), text built only for a violation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autohaap/specs/device.hpp"
#include "autohaap/specs/model.hpp"

namespace autohaap {

struct ClusterSpec;
struct NodeGroup;
struct StagePlan;  // plan.hpp
enum class Runtime;    // specs/training.hpp
enum class Precision;  // specs/training.hpp

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
// And a runtime that has the schedule: Megatron-LM and PyTorch's pipeline
// schedules (torchtitan's interleaved 1F1B) do; DeepSpeed's pipeline
// engine runs one chunk per stage (deepspeed/runtime/pipe/schedule.py,
// TrainSchedule: no virtual stages), so under `runtime: deepspeed` vpp is 1.
// Returns what is allowed when the rule fails, else "".
std::string interleaving_violation(const ModelSpec& model, Runtime runtime, int vpp,
                                   const std::vector<int>& stage_layers, int num_micro_batches);

// What the searches interleave: stages of equal layers only (the split
// Megatron-LM's --num-layers-per-virtual-pipeline-stage runs and the
// published interleaved recipes use). Megatron-LM runs each chunk for a
// group of micro-batches in turn, so where chunks differ in time across
// stages the stages wait for each other's, which the estimate's
// interleaved iteration (CostModel::iteration_time_1f1b, a stage's chunks
// together) does not price. Unequal layers make the most of it: a Llama 3
// 8B split of 9, 9, 9, 5 layers at vpp 5, estimated 2.53 s, runs 2.77 s or
// more in the schedule's event simulation under any cut of its chunks,
// against 2.62 s uninterleaved (tests/unit/timeline_test.cpp). Equal
// layers on one device type run as estimated; on stages of unequal speed,
// or with a heavy output layer in the last chunk, the simulation still
// runs up to 14% longer (the estimate's note says so, io/plan_printer.hpp).
// A plan a user writes may interleave unequal stages. Returns what the
// search allows when the rule fails, else "".
std::string searched_interleaving_violation(const std::vector<int>& stage_layers, int vpp);

// The largest vpp a search interleaves `stages` stages with, given
// `num_micro_batches` micro-batches: layers / stages where the stages
// divide the model's layers (the one split searched_interleaving_violation
// lets a search interleave) and interleaving_violation allows it, else 1.
// Every vpp from 2 to it is allowed for that split. The search enumerates
// vpp up to it (load_balancer.hpp) and its bounds hold for every vpp up to
// it (split_lower_bound.hpp).
int max_interleaving(const ModelSpec& model, Runtime runtime, int stages, int num_micro_batches);

// The most pipeline stages a plan may have: one layer or more each, and
// under `runtime: deepspeed` with ZeRO-2 or ZeRO-3 a single stage, since
// DeepSpeed's pipeline engine refuses them ("ZeRO-2 and ZeRO-3 are
// incompatible with pipeline parallelism", deepspeed/runtime/pipe/engine.py).
// Megatron-LM (its distributed optimizer is ZeRO-1) and PyTorch FSDP with
// pipeline schedules (torchtitan) have no such limit.
int max_pipeline_stages(const ModelSpec& model, Runtime runtime, int zero);
// What is allowed when `stages` exceeds it, else "".
std::string pipeline_stages_violation(const ModelSpec& model, Runtime runtime, int zero, int stages);

// Layers of chunk v (0-based) of a stage of `stage_layers` layers split
// into vpp chunks: as even as possible, the first chunks one larger.
inline int chunk_layers(int stage_layers, int vpp, int v) {
  return stage_layers / vpp + (v < stage_layers % vpp ? 1 : 0);
}
// Every stage's chunks so (cut[i][v]): the cut of a plan that states none.
inline std::vector<std::vector<int>> even_chunk_cut(const std::vector<int>& stage_layers, int vpp) {
  std::vector<std::vector<int>> cut;
  for (int layers : stage_layers) {
    cut.emplace_back();
    for (int v = 0; v < vpp; ++v) cut.back().push_back(chunk_layers(layers, vpp, v));
  }
  return cut;
}

// A stage's stated chunks (StagePlan::chunks): none, or one count per chunk
// of the plan's vpp, each at least one layer, summing to the stage's layers
// (Megatron-Core's layout runs any such cut, io/megatron_layout.hpp).
// Returns what is allowed when the rule fails, else "".
std::string chunks_violation(const std::vector<int>& chunks, int vpp, int stage_layers);

// Context parallelism over `cp` GPUs: a transformer family whose attention
// runs fused (the model's flash_attention: the ring runs inside Transformer
// Engine's fused attention; Megatron-Core's unfused DotProductAttention
// asserts cp == 1), and a sequence that splits into 2·cp equal chunks
// (Transformer Engine's load balancing of causal attention gives each GPU
// two mirrored chunks). Returns what is allowed when the rule fails, else "".
std::string context_parallel_violation(const ModelSpec& model, int seq_len, int cp);

// And a runtime that runs it: Megatron-LM (--context-parallel-size) and
// PyTorch (torchtitan's context_parallel) ring attention over cp GPUs;
// Megatron-DeepSpeed has no ring context parallelism (its sequence
// parallelism, DeepSpeed-Ulysses, splits heads with all-to-alls: another
// scheme, not priced here), so under `runtime: deepspeed` cp is 1. The ring
// runs inside the fused attention kernels (FlashAttention, cuDNN through
// Transformer Engine), which take 16-bit inputs only, so fp32 and tf32
// training (whose attention the cost model prices unfused:
// layer_work.cpp fused_attention_possible) keep cp 1 too.
// Returns what is allowed when the rule fails, else "".
std::string runtime_context_parallel_violation(Runtime runtime, Precision precision, int cp);

// Whether `runtime` runs a fused attention kernel (no s x s scores kept) on
// a device of this architecture. Megatron-LM and Megatron-DeepSpeed run
// FlashAttention (the flash-attn package; Transformer Engine's flash and
// cuDNN backends), which needs Ampere or newer (FlashAttention-2, Dao 2023;
// Transformer Engine's attention backends): on Volta and Turing they run
// attention unfused. PyTorch's SDPA (`fsdp`) has its memory-efficient
// kernel from Volta on; AMD's CDNA parts run Composable Kernel's
// FlashAttention. FlashAttention-2 and cuDNN's fused attention take head
// dimensions up to kMaxFusedHeadDim: past it Megatron's attention runs
// unfused (Transformer Engine falls back to its unfused backend), where
// SDPA keeps its memory-efficient kernel. A model without flash_attention
// runs unfused anywhere.
inline constexpr int kMaxFusedHeadDim = 256;
bool fused_attention_kernel(Architecture architecture, Runtime runtime, int head_dim);
// And ring context parallelism runs inside that kernel (Transformer
// Engine's attention; torchtitan's through SDPA): cp > 1 needs it on the
// stage's device for the model's head dimension. Returns what is allowed
// when the rule fails, else "".
std::string device_context_parallel_violation(const DeviceSpec& device, Runtime runtime, int head_dim, int cp);
// The same on every device a stage runs on (its own, or each replica
// set's): the first failing one's, else "".
std::string stage_context_parallel_violation(const ClusterSpec& cluster, Runtime runtime, int head_dim,
                                             const StagePlan& stage, int cp);

// ------------------------------------------------------ a stage's own GPUs
// Where a stage of its own GPUs, or one replica set of a stage, lies in its
// node group: inside one node, or on whole nodes from a node's first GPU,
// as the search lays stages out (search_space.hpp), the mixed stages place
// sets (mixed_stages.hpp), the cost model prices their rings
// (cost_model.cpp, cp_link) and a launch gives each node one rank list.
bool own_gpus_placement_allowed(int first_gpu, int gpus, int gpus_per_node);

// ---------------------------------------------------------------- stage rule
// Whether one pipeline stage's parallel degrees can run, as Megatron-LM
// allows them: the one rule the search's pruning, the plan loader, the plan
// builder and the Megatron export all apply. Rules in the order they are
// checked (the first one broken is reported; the search counts skeletons
// under it, so the order is part of `--explain`'s figures):
enum class StageRule {
  tp_exceeds_node,              // tp divides the GPUs of a node (TP all-reduces need intra-node links)
  tp_not_dividing_heads,        // tp divides the attention heads, the key/value heads and ffn_hidden
                                // (--tensor-model-parallel-size); 1 on a generic layer list
  tp_not_splitting_sequence,    // under sequence parallelism, tp divides a cp rank's tokens (seq_len / cp)
  cp_not_splitting_sequence,    // context_parallel_violation
  dp_not_dividing_micro_batch,  // each replica takes micro_batch / dp sequences
};

// A stage's degrees: tensor-, context- and data-parallel.
struct StageDegrees {
  int tp = 1;
  int cp = 1;
  int dp = 1;
};

struct StageViolation {
  StageRule rule;
  std::string allowed;  // what would be allowed, in words ("a divisor of the model's 32 attention heads")
};

// The degree a rule rejects: "tp", "cp" or "dp" (the plan field; a flag
// is "--" and this).
const char* stage_field(StageRule rule);
// That degree's value in `degrees`.
int stage_field_value(StageRule rule, const StageDegrees& degrees);

// The first rule a stage of `degrees` on node group `group`, taking
// micro-batches of `micro_batch` sequences, breaks; none if it is valid.
// `group` may be null when the stage is not placed yet: the node rule is
// then skipped. Pure; no text is built, so the search may call it per
// candidate layout.
// `sequence_parallel`: the training's (TrainingSpec::sequence_parallel),
// which adds the sequence's rule.
std::optional<StageRule> broken_stage_rule(const ModelSpec& model, int seq_len, bool sequence_parallel,
                                           const NodeGroup* group, const StageDegrees& degrees, int micro_batch);
// The same, with what is allowed in words (built only on a violation).
std::optional<StageViolation> stage_violation(const ModelSpec& model, int seq_len, bool sequence_parallel,
                                              const NodeGroup* group, const StageDegrees& degrees, int micro_batch);

}  // namespace autohaap
