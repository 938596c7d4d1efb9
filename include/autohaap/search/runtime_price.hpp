// Runtime price: what keeping to plans one training framework runs costs
// (`search --runnable megatron`, specs/runnable_by.hpp), shown next to the
// plan found so a user can weigh a heterogeneous runtime against stock
// Megatron-LM:
//   - the unrestricted best: the same search with every plan AutoHAAP can
//     score (per-stage devices, tp, dp and recompute);
//   - the best uniform plan over all GPUs: one stage size, tp, dp, B and
//     recompute mode on every node group, layers split evenly (with its own
//     cp and vpp) — what a Megatron user writes by hand for the whole cluster;
//   - the best uniform plan on the fastest device alone (the node groups of
//     the device with the highest dense 16-bit peak) — what a user who keeps
//     to one GPU type gets.
// Every plan is scored by the same cost model; each is optional (none may
// fit). Callers: the search command, tests. Cost: one more search (the
// unrestricted one, with the caller's options) and two uniform
// enumerations.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

struct RuntimePrice {
  std::optional<Plan> unrestricted;
  std::optional<Plan> uniform_all_gpus;
  std::optional<Plan> uniform_fastest_device;
  std::string fastest_device;  // its name
  int fastest_device_gpus = 0;
};

// The comparison plans for `problem` (its runnable_by is ignored: the
// unrestricted search runs with RunnableBy::any). `runnable_best`, the
// restricted search's answer if any, is a plan of the unrestricted space
// too: the unrestricted best is never slower than it. (Context parallelism
// is refined after each search, search/refinement.hpp, so the unrestricted
// search alone can miss a restricted plan whose cp pays more.)
RuntimePrice runtime_price(const Problem& problem, const SearchOptions& options,
                           const std::optional<Plan>& runnable_best);

// One row of the comparison: its label, the plan if one fits, its time
// over the unrestricted best's minus one.
struct PriceRow {
  std::string label;
  std::optional<Plan> plan;
  double versus_best = 0;
};
// The rows in table order: unrestricted, runnable (`runnable_best`),
// uniform over all GPUs, uniform on the fastest device alone.
std::vector<PriceRow> price_rows(const RuntimePrice& price, const std::optional<Plan>& runnable_best,
                                 RunnableBy runnable);

// A plan's pipeline in one short line: runs of stages of one device and
// shape as "device:tp x [cp x] dp[layers,layers,...]" (stage_summary in
// plan.hpp, which names each replica set of a stage), then "(vpp V)".
std::string pipeline_summary(const Plan& plan);

// A table: each comparison plan and `runnable_best` (labelled with
// `runnable`), its predicted iteration time, its difference to the
// unrestricted best and its pipeline in one line.
std::string format_runtime_price(const RuntimePrice& price, const std::optional<Plan>& runnable_best,
                                 RunnableBy runnable);

}  // namespace autohaap
