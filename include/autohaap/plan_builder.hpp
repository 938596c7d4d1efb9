// Plan builder: turns Megatron-style flags (tp, pp, dp, micro-batch per
// replica) into a uniform Plan over the first GPUs of a cluster, layers split
// evenly (the remainder to the first stages) or as the run split them
// (LayerSplit). This is how `estimate` scores a published Megatron-LM or
// Megatron-DeepSpeed configuration with the same model as the search.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autohaap/error.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// How a uniform plan's transformer layers are spread over its stages.
// even: Megatron-LM's split (equal when pp divides the layers; else the
// first layers % pp stages take one more). The other methods are
// DeepSpeed's PipelineModule (which Megatron-DeepSpeed runs):
// partition_balanced over unit weights finds the least bottleneck b and
// fills stages greedily, b items each, so the last stages take what is left
// (deepspeed/runtime/utils.py, partition_balanced and _lprobe).
// deepspeed_transformer: --pp-partition-method 'type:transformer', the
// transformer layers weigh 1 (78 layers on 12 stages: 7 on each of the
// first 11, 1 on the last); deepspeed_transformer_embedding:
// 'type:transformer|embedding', the word embedding and the tied output
// layer each take a slot too (BigScience's BLOOM runs from 2022-02-27:
// 70 layers + 2 on 12 stages put 5 layers next to each embedding, 6 on
// every other stage). counts: the layers of each stage, as given.
struct LayerSplit {
  enum class Method { even, deepspeed_transformer, deepspeed_transformer_embedding, counts };
  Method method = Method::even;
  std::vector<int> counts;  // Method::counts: transformer layers per stage
};
// Parses --layer-split: even | type:transformer | type:transformer|embedding
// | a comma-separated list of layers per stage. Throws InputError naming
// `key` and what is allowed.
LayerSplit parse_layer_split(const std::string& text, const std::string& source, const std::string& key);
// What parse_layer_split reads back as `split`.
std::string layer_split_name(const LayerSplit& split);
// Transformer layers per stage under `split` for `layers` layers on `stages`
// stages; an error message instead when it leaves a stage without a layer
// or (counts) does not match.
struct StageLayerCounts {
  std::vector<int> counts;
  std::string refusal;  // non-empty: why the split is not possible
};
StageLayerCounts stage_layer_counts(const LayerSplit& split, int layers, int stages);

struct UniformPlanRequest {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;   // Megatron's --context-parallel-size
  int vpp = 1;  // Megatron's --virtual-pipeline-model-parallel-size (1: plain 1F1B)
  int micro_batch_per_replica = 1;  // Megatron's --micro-batch-size: B = this x dp
  Recompute recompute = Recompute::none;
  LayerSplit layer_split;  // default: even
  // The plan's execution settings; unset: the training settings'.
  std::optional<int> global_batch;  // sequences per iteration
  std::optional<int> zero;          // ZeRO stage 0-3
};

// Places stage i on the next tp·cp·dp free GPUs of the cluster, group by group
// in cluster order; a stage never spans two groups. Each stage meets the
// stage rule (specs/parallel_rules.hpp) on its node group. Throws InputError
// (key named after the flag) when the request cannot be placed or does not
// divide.
Plan make_uniform_plan(const Problem& problem, const UniformPlanRequest& request);

// The same without throwing: the plan, or the InputError make_uniform_plan
// would throw (for callers that try many requests, such as the export's
// nearest Megatron plan).
struct UniformPlanResult {
  std::optional<Plan> plan;
  std::optional<InputError> refused;
};
UniformPlanResult build_uniform_plan(const Problem& problem, const UniformPlanRequest& request);

// Even split of `layers` over `stages` as each stage's end layer: the first
// (layers % stages) stages get one more (Megatron-LM's split when it divides).
std::vector<int> even_split(int layers, int stages);

}  // namespace autohaap
