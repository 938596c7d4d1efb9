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

// The name of replica set k of stage i in every table and picture: "3a",
// "3b", ... (after the 26th: "3.26", ...).
std::string replica_set_label(int stage_index, std::size_t set_index);

// One row of the per-stage tables (here and in the reports): a one-device
// stage, or one replica set of a stage of sets, with its own estimate
// (CostModel::replica_set_estimates).
struct StageRow {
  std::string label;          // "3", or replica_set_label: "3a", "3b", ...
  std::string device;
  int group = 0;
  int first_gpu = 0;          // its GPUs: [first_gpu, first_gpu + gpus) of the group
  int gpus = 0;
  int dp = 0;                 // its replicas
  int sequences = 0;          // of each micro-batch (B for a one-device stage)
  bool replica_set = false;   // a set's row
  bool paces = false;         // the set that paces its stage (CostModel::pacing_set)
  StageEstimate estimate;
};
// Stage i's rows: one for a one-device stage, one per set in the plan's
// order for a stage of replica sets. Cost: one stage estimate per row.
std::vector<StageRow> stage_rows(const CostModel& model, const Plan& plan, int stage_index);

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
