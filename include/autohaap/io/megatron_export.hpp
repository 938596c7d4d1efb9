// Megatron-LM export: the command-line arguments of Megatron-LM's
// pretrain_gpt.py that run a plan, or — when stock Megatron-LM cannot run
// it — every reason why and the nearest plan it can run.
//
// Megatron-LM gives every rank one configuration: one tensor-parallel,
// context-parallel and data-parallel degree, one micro-batch, one recompute
// mode and one precision. The layers may be split any way: evenly; with a
// different count on the first and the last stage
// (--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers;
// the rest divided evenly among the middle stages); or, for any other split
// and for interleaved chunks, written out whole with Megatron-Core's
// --pipeline-model-parallel-layout (io/megatron_layout.hpp). Its
// distributed optimizer shards the optimizer states over data parallelism
// (ZeRO-1); it has no flag for sharding gradients and weights the way
// ZeRO-2/3 do.
//
// Stages may sit on different device types: Megatron-LM orders global
// ranks tensor-parallel fastest, then context-parallel, then data-parallel,
// then pipeline stage, so a launcher that starts the plan's nodes in the
// order of node_order (io/hostfile.hpp, `export --to nodelist`) puts every
// stage on its GPUs; the arguments' comment header says so. What a mixed
// plan cannot do is mix precisions: --fp8-format applies to every rank, so
// fp8 training with FP8 stages beside stages whose device has no FP8 is
// refused (train in bf16, or use only FP8 devices). A device without BF16
// takes every rank to --fp16 with loss scaling (one precision flag for all),
// as a comment line says; a plan whose devices all lack FP8 trains in 16
// bits, as its estimate assumed.
//
// Argument names follow Megatron-LM's megatron/training/arguments.py
// (2024–2025 releases). Callers: the export command, tests. Pure; the
// nearest-plan search scores O(tp choices × stages × dp × micro-batch ×
// recompute) uniform plans with the cost model (about a second for a
// thousand GPUs).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// Why stock Megatron-LM cannot run `plan` as it stands, one sentence per
// reason (naming the stages that differ and how, and what to do); empty
// when it can. Reasons: a generic layer list; tp, dp, cp or recompute mode
// differing across stages; fp8 training on devices with and without FP8;
// a stage of replica sets (each data-parallel rank of Megatron-LM takes
// the same micro-batch); ZeRO 2 or 3; and megatron_training_blocker.
std::vector<std::string> megatron_blockers(const Plan& plan, const Problem& problem);

// Why no plan of this model and training (at ZeRO stage `zero`) runs on
// stock Megatron-LM, whatever its layout; empty when some may: an
// embedding LayerNorm (no Megatron-LM flag); 8-bit Adam
// (Megatron-DeepSpeed's --use-bnb-optimizer; Megatron-LM's --optimizer has
// no 8-bit Adam, and its strict argument parser stops at an unknown flag);
// SGD under the distributed optimizer (zero 1: Megatron-Core's
// DistributedOptimizer asserts Adam or an optimizer with an init_state_fn,
// which its SGD is built without).
std::string megatron_training_blocker(const Problem& problem, int zero);

// The arguments, in a fixed order, as (flag, value) pairs; value is empty
// for switches. Requires megatron_blockers(plan, problem) to be empty.
std::vector<std::pair<std::string, std::string>> megatron_arguments(const Plan& plan, const Problem& problem);

// The arguments as shell continuation lines ("--flag value \"), the last
// without the backslash, after '#' comment lines describing the plan, the
// first beginning with kMegatronArgumentsHeading (an export that cannot
// express its plan begins with kNotExpressibleHeading instead).
inline constexpr std::string_view kMegatronArgumentsHeading = "# Megatron-LM arguments";
inline constexpr std::string_view kNotExpressibleHeading = "# not expressible with Megatron-LM arguments";
// `node_order` names where the launcher finds the nodes' order (by
// default the plan file's own `--to nodelist`).
std::string format_megatron_arguments(const Plan& plan, const Problem& problem,
                                      const std::string& node_order = "`autohaap export PLAN --to nodelist`");

// The best plan Megatron-LM can run on the plan's kind of GPUs: for each
// device type the plan uses, uniform plans (one tp, dp and recompute mode,
// layers split evenly as make_uniform_plan does) on the first GPUs of that
// type in the cluster, using more than half and at most all of the GPUs the
// plan has of that type; micro-batches per replica from the training
// settings' micro_batch_sizes; the plan's global batch, its ZeRO stage
// capped at 1 (each candidate carries both). The fastest that fits in
// memory wins (ties: fewer GPUs, then the enumeration order). Its
// `predicted` is filled in. nullopt when none fits or the model is not a
// transformer.
struct NearestMegatronPlan {
  Plan plan;
  Problem problem;  // the problem it was scored with; the plan carries the batch and ZeRO (capped at 1)
};
std::optional<NearestMegatronPlan> nearest_megatron_plan(const Problem& problem, const Plan& plan);

}  // namespace autohaap
