// Refinement: interleaving (vpp) and context parallelism (cp) for plans the
// search found. The exact search (searcher.hpp) chooses stages, devices,
// tp, dp, layer split, recompute and B; neither vpp nor cp moves a GPU or
// a layer between stages: vpp re-schedules the same stages in chunks, and a
// cp of c turns c of a stage's dp replicas into one replica whose sequences
// are split over those c GPUs (Megatron's rank order tp, cp, dp keeps every
// tensor-parallel group where it was). So they are refined on each found
// plan: cp per stage by coordinate descent (each stage in turn takes the
// cp that makes the plan fastest, until no stage changes), then the vpp
// that makes the plan fastest; a change is kept only when it is strictly
// faster and every stage still fits. Within that neighbourhood the result
// is exact for vpp and a local optimum for the per-stage cp.
//
// Pure and deterministic: the same plan gives the same refinement whatever
// the thread or rank count. Cost: O(rounds · stages · divisors(dp) +
// layers) plan estimates of O(stages) each.
#pragma once

#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"

namespace autohaap {

// `plan` (predicted filled in by `model`) with the fastest vpp and per-stage
// cp found; `plan` itself when nothing is faster.
Plan refine_plan(const CostModel& model, const Plan& plan);

// A uniform plan (one tp, dp, layer count and recompute mode on every
// stage, as Megatron-LM runs) with the fastest cp and vpp that are the same
// on every stage, as Megatron-LM's --context-parallel-size and
// --virtual-pipeline-model-parallel-size set them: every cp (a divisor of
// the stages' dp) and every vpp the rules allow, estimated; the plan
// unchanged when none is faster. A plan that does not fit without cp (its
// activations halve with cp 2) can fit with it.
Plan refine_uniform_plan(const CostModel& model, const Plan& plan);

// Refines each plan and orders them fastest first again (stable, so ties
// keep the search's order).
void refine_plans(const CostModel& model, std::vector<Plan>& plans);

}  // namespace autohaap
