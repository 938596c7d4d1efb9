// The dtype a plan's job trains its 16-bit work in: one for every rank (a
// launcher passes one --bf16 or --fp16), so a BF16 plan with a stage on a
// device without BF16 (a V100, a T4) runs FP16 everywhere. What `export
// --to megatron` passes and the launch manifest records; the cost model
// prices each stage in what its own device runs, the same peak where a
// device has both.
//
// Internal to src/io. Cost: one pass over the plan's stages.
#pragma once

#include "autohaap/plan.hpp"

namespace autohaap::detail {

inline bool every_device_has_bf16(const Problem& problem, const Plan& plan) {
  for (const StagePlan& s : plan.stages)
    if (!problem.cluster.groups.at(s.group).device.has_bf16) return false;
  return true;
}

inline Precision job_precision(const Problem& problem, const Plan& plan) {
  const Precision p = problem.training.precision;
  return p == Precision::bf16 && !every_device_has_bf16(problem, plan) ? Precision::fp16 : p;
}

}  // namespace autohaap::detail
