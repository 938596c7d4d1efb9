// Plan builder: turns Megatron-style flags (tp, pp, dp, micro-batch per
// replica) into a uniform Plan over the first GPUs of a cluster, layers split
// evenly (the remainder to the first stages). This is how `estimate` scores a
// published Megatron-LM configuration with the same model as the search.
#pragma once

#include <optional>

#include "autohaap/error.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

struct UniformPlanRequest {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;   // Megatron's --context-parallel-size
  int vpp = 1;  // Megatron's --virtual-pipeline-model-parallel-size (1: plain 1F1B)
  int micro_batch_per_replica = 1;  // Megatron's --micro-batch-size: B = this x dp
  Recompute recompute = Recompute::none;
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
