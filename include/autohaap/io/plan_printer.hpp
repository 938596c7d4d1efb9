// Plan printer: the human-readable tables every command prints — per-stage
// time and memory breakdown of a plan — and the fixed, greppable summary
// block that ends every run (one `key: value` per line between fixed
// delimiters, so scripts can read it without parsing JSON).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/plan_status.hpp"

namespace autohaap {

// Per-stage table (devices, GPUs, tp x dp, layers, recompute, forward /
// backward / send / sync / optimizer times, memory vs capacity) and, for
// each stage that does not fit, by how much.
std::string format_stage_table(const CostModel& model, const Plan& plan);

// Per-stage memory breakdown per GPU in GiB.
std::string format_memory_table(const CostModel& model, const Plan& plan);

// Lines naming every stage that does not fit and by how much; empty if all fit.
std::string format_fit_problems(const CostModel& model, const Plan& plan);

// The summary block: status (summary_label), model, cluster, GPUs, stages, micro-batching,
// iteration time, tokens/s, MFU, HFU, TFLOP/s per GPU, max memory, search stats.
// `extra` (key, value) lines go last, before the end line.
std::string format_summary_block(const Plan& plan, PlanStatus status,
                                 const std::vector<std::pair<std::string, std::string>>& extra = {});

}  // namespace autohaap
