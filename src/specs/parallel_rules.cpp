#include "autohaap/specs/parallel_rules.hpp"

#include "autohaap/plan.hpp"
#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

std::string interleaving_violation(const ModelSpec& model, Runtime runtime, int vpp,
                                   const std::vector<int>& stage_layers, int num_micro_batches) {
  if (vpp < 1) return "an integer >= 1";
  if (vpp == 1) return "";
  if (runtime == Runtime::deepspeed) return "1 under runtime deepspeed (its pipeline engine has no interleaved schedule)";
  if (model.family == ModelFamily::generic) return "1 (generic layers are not interleaved)";
  const int stages = static_cast<int>(stage_layers.size());
  if (stages < 2) return "1 with a single stage (interleaving needs at least 2 pipeline stages)";
  for (int layers : stage_layers)
    if (layers < vpp)
      return "at most every stage's layer count (a stage has " + std::to_string(layers) + "): a chunk holds a layer or more";
  if (num_micro_batches % stages != 0)
    return "1 unless the micro-batches (" + std::to_string(num_micro_batches) + ") are a multiple of the " +
           std::to_string(stages) + " stages";
  return "";
}

std::string chunks_violation(const std::vector<int>& chunks, int vpp, int stage_layers) {
  if (chunks.empty()) return "";
  if (vpp <= 1) return "absent unless the plan interleaves (vpp > 1)";
  const std::string want = std::to_string(vpp) + " chunk sizes (the plan's vpp), each at least 1, summing to the stage's " +
                           std::to_string(stage_layers) + " layers";
  if (static_cast<int>(chunks.size()) != vpp) return want;
  long long sum = 0;  // a hostile file's counts must not overflow it
  for (int n : chunks) {
    if (n < 1) return want;
    sum += n;
  }
  return sum == stage_layers ? "" : want;
}

std::string searched_interleaving_violation(const std::vector<int>& stage_layers, int vpp) {
  if (vpp <= 1 || stage_layers.empty()) return "";
  for (int layers : stage_layers)
    if (layers != stage_layers.front())
      return "1 in a search unless every stage holds the same number of layers (the estimate prices interleaved "
             "chunks alike on every stage)";
  return "";
}

int max_interleaving(const ModelSpec& model, Runtime runtime, int stages, int num_micro_batches) {
  // A search interleaves stages of equal layers only
  // (searched_interleaving_violation), so stages must divide the layers.
  if (stages < 1 || model.layers % stages != 0) return 1;
  const int most = model.layers / stages;
  if (most < 2) return 1;
  // Every stage holds `most` layers; the other rules do not depend on vpp.
  const std::vector<int> even(static_cast<std::size_t>(stages), most);
  return interleaving_violation(model, runtime, most, even, num_micro_batches).empty() ? most : 1;
}

int max_pipeline_stages(const ModelSpec& model, Runtime runtime, int zero) {
  return runtime == Runtime::deepspeed && zero >= 2 ? 1 : model.layers;
}

std::string pipeline_stages_violation(const ModelSpec& model, Runtime runtime, int zero, int stages) {
  if (stages <= max_pipeline_stages(model, runtime, zero)) return "";
  if (stages > model.layers) return "at most the model's " + std::to_string(model.layers) + " layers";
  return "1 under runtime deepspeed with ZeRO-" + std::to_string(zero) +
         " (its pipeline engine refuses ZeRO-2 and ZeRO-3; ZeRO-1 or no ZeRO pipelines)";
}

std::string runtime_context_parallel_violation(Runtime runtime, Precision precision, int cp) {
  if (cp > 1 && runtime == Runtime::deepspeed)
    return "1 under runtime deepspeed (Megatron-DeepSpeed has no ring context parallelism)";
  if (cp > 1 && full_precision(precision))
    return std::string("1 under precision ") + to_string(precision) +
           " (ring context parallelism runs inside the fused attention kernels, which take 16-bit inputs only)";
  return "";
}

bool own_gpus_placement_allowed(int first_gpu, int gpus, int gpus_per_node) {
  if (gpus <= 0 || gpus_per_node <= 0) return false;
  const bool inside_one = first_gpu / gpus_per_node == (first_gpu + gpus - 1) / gpus_per_node;
  const bool whole_nodes = first_gpu % gpus_per_node == 0 && gpus % gpus_per_node == 0;
  return inside_one || whole_nodes;
}

bool fused_attention_kernel(Architecture architecture, Runtime runtime, int head_dim) {
  if (runtime == Runtime::fsdp) return true;
  return head_dim <= kMaxFusedHeadDim && architecture != Architecture::volta && architecture != Architecture::turing;
}

std::string device_context_parallel_violation(const DeviceSpec& device, Runtime runtime, int head_dim, int cp) {
  if (cp <= 1 || fused_attention_kernel(device.architecture, runtime, head_dim)) return "";
  if (head_dim > kMaxFusedHeadDim)
    return "1: ring context parallelism runs inside the fused attention kernels, which take head dimensions up to " +
           std::to_string(kMaxFusedHeadDim) + " (this model's: hidden / heads = " + std::to_string(head_dim) + ")";
  return "1 on " + device.name + " (" + to_string(device.architecture) +
         "): ring context parallelism runs inside the fused attention kernels, which this runtime has from Ampere on";
}

std::string stage_context_parallel_violation(const ClusterSpec& cluster, Runtime runtime, int head_dim,
                                             const StagePlan& stage, int cp) {
  std::vector<int> groups{stage.group};
  for (const ReplicaSet& r : stage.replicas) groups.push_back(r.group);
  for (const int g : groups)
    if (std::string rule = device_context_parallel_violation(cluster.groups.at(g).device, runtime, head_dim, cp);
        !rule.empty())
      return rule;
  return "";
}

std::string context_parallel_violation(const ModelSpec& model, int seq_len, int cp) {
  if (cp < 1) return "an integer >= 1";
  if (cp == 1) return "";
  if (model.family == ModelFamily::generic) return "1 (generic layers have no sequence to split)";
  if (!model.flash_attention)
    return "1 for a model with flash_attention: false (ring context parallelism runs inside the fused attention "
           "kernel: Megatron-Core's unfused DotProductAttention refuses cp > 1)";
  if (seq_len % (2 * cp) != 0)
    return "a cp with 2 x cp dividing the sequence length " + std::to_string(seq_len) +
           " (each GPU takes two mirrored chunks)";
  return "";
}

const char* stage_field(StageRule rule) {
  switch (rule) {
    case StageRule::tp_exceeds_node:
    case StageRule::tp_not_dividing_heads:
    case StageRule::tp_not_splitting_sequence:
      return "tp";
    case StageRule::cp_not_splitting_sequence:
      return "cp";
    case StageRule::dp_not_dividing_micro_batch:
      return "dp";
  }
  return "";
}

int stage_field_value(StageRule rule, const StageDegrees& degrees) {
  switch (rule) {
    case StageRule::tp_exceeds_node:
    case StageRule::tp_not_dividing_heads:
    case StageRule::tp_not_splitting_sequence:
      return degrees.tp;
    case StageRule::cp_not_splitting_sequence:
      return degrees.cp;
    case StageRule::dp_not_dividing_micro_batch:
      return degrees.dp;
  }
  return 0;
}

namespace {

// Megatron splits the query heads and the key/value head groups of
// grouped-query attention evenly over the tensor-parallel ranks
// (--tensor-model-parallel-size must divide --num-attention-heads and
// --num-query-groups), and the MLP's columns too (its column-parallel
// linear divides --ffn-hidden-size); generic layers are not
// tensor-parallel at all.
int key_value_heads(const ModelSpec& model) { return model.kv_heads > 0 ? model.kv_heads : model.heads; }

}  // namespace

// Sequence parallelism reduce-scatters each layer's activations along the
// sequence over the tp ranks (Korthikanti et al. 2022, sec. 4.2.2), and
// Megatron-LM asserts the split is even (tensor_parallel/mappings.py:
// "First dimension of the tensor should be divisible by tensor parallel
// size"); under context parallelism the sequence a tp group splits is a
// cp rank's seq_len / cp tokens.
static bool sequence_splits_over_tp(int seq_len, bool sequence_parallel, const StageDegrees& d) {
  // A sequence cp does not split evenly is the cp rule's to name.
  if (!sequence_parallel || d.tp <= 1 || d.cp < 1 || seq_len % d.cp != 0) return true;
  return (seq_len / d.cp) % d.tp == 0;
}

std::optional<StageRule> broken_stage_rule(const ModelSpec& model, int seq_len, bool sequence_parallel,
                                           const NodeGroup* group, const StageDegrees& d, int micro_batch) {
  // Tensor parallelism all-reduces every layer's activations, which only
  // intra-node links sustain (Narayanan et al. 2021, sec. 3.3).
  if (group && (d.tp < 1 || group->gpus_per_node <= 0 || group->gpus_per_node % d.tp != 0))
    return StageRule::tp_exceeds_node;
  const bool heads_ok = model.family == ModelFamily::generic
                            ? d.tp == 1
                            : d.tp >= 1 && model.heads % d.tp == 0 && key_value_heads(model) % d.tp == 0 &&
                                  model.ffn_hidden % d.tp == 0;
  if (!heads_ok) return StageRule::tp_not_dividing_heads;
  if (model.family != ModelFamily::generic && !sequence_splits_over_tp(seq_len, sequence_parallel, d))
    return StageRule::tp_not_splitting_sequence;
  if (!context_parallel_violation(model, seq_len, d.cp).empty()) return StageRule::cp_not_splitting_sequence;
  // Each replica of a stage takes micro_batch / dp sequences (DESIGN.md
  // "What a micro-batch means when stages differ").
  if (d.dp < 1 || micro_batch % d.dp != 0) return StageRule::dp_not_dividing_micro_batch;
  return std::nullopt;
}

std::optional<StageViolation> stage_violation(const ModelSpec& model, int seq_len, bool sequence_parallel,
                                              const NodeGroup* group, const StageDegrees& d, int micro_batch) {
  const std::optional<StageRule> rule = broken_stage_rule(model, seq_len, sequence_parallel, group, d, micro_batch);
  if (!rule) return std::nullopt;
  switch (*rule) {
    case StageRule::tp_exceeds_node:
      return StageViolation{*rule, "a divisor of the " + std::to_string(group->gpus_per_node) +
                                       " GPUs per node of group '" + group->name +
                                       "' (tensor parallelism stays inside a node)"};
    case StageRule::tp_not_dividing_heads:
      if (model.family == ModelFamily::generic)
        return StageViolation{*rule, "1 (generic layers are not tensor-parallel)"};
      if (d.tp < 1 || model.heads % d.tp != 0)
        return StageViolation{*rule, "a divisor of the model's " + std::to_string(model.heads) + " attention heads"};
      if (key_value_heads(model) % d.tp != 0)
        return StageViolation{*rule, "a divisor of the model's " + std::to_string(key_value_heads(model)) +
                                         " key/value heads (kv_heads)"};
      return StageViolation{*rule, "a divisor of the model's MLP width (ffn_hidden " +
                                       std::to_string(model.ffn_hidden) + ")"};
    case StageRule::tp_not_splitting_sequence:
      return StageViolation{*rule, "a tp dividing the " + std::to_string(d.cp > 0 ? seq_len / d.cp : seq_len) +
                                       " tokens of a sequence" + (d.cp > 1 ? " a cp rank holds" : "") +
                                       " (sequence parallelism splits them over the tp ranks), or "
                                       "sequence_parallel: false"};
    case StageRule::cp_not_splitting_sequence:
      return StageViolation{*rule, context_parallel_violation(model, seq_len, d.cp)};
    case StageRule::dp_not_dividing_micro_batch:
      return StageViolation{*rule, "a divisor of the micro-batch size (" + std::to_string(micro_batch) + ")"};
  }
  return std::nullopt;
}

}  // namespace autohaap
