// PlanStatus: how a command that answers with a plan ended — found,
// infeasible, stopped (with or without a plan so far), or failed — carried
// in every search result (SearchResult::status) and set by `estimate` for
// the plan it scored. The one place that maps an outcome to the process
// exit code and to the `status` line of the summary block, so `search`,
// `estimate`, `batch` and every MPI rank agree (README "Exit codes").
//
//   status             exit  summary label
//   found                0   found
//   estimated            0   estimated               (estimate: the plan fits)
//   infeasible           3   infeasible              (no plan fits; the reason is given)
//   does_not_fit         3   does-not-fit            (estimate: the plan does not fit)
//   gap_reached          0   gap-reached             (--gap: best plan proven within the gap; search stopped)
//   stopped_with_plan    4   time-limit-best-so-far  (time limit, signal or a skeleton limit; best so
//                                                     far kept; the summary's `stopped_by` says which)
//   stopped_no_plan      4   interrupted-no-plan
//   failed               1   failed                  (an error that is not bad input)
//
// Bad input is never a status: it is an InputError (exit 2) before or
// instead of a result. Pure functions, no state; thread-safe.
#pragma once

#include "autohaap/error.hpp"

namespace autohaap {

enum class PlanStatus {
  found,
  gap_reached,
  estimated,
  infeasible,
  does_not_fit,
  stopped_with_plan,
  stopped_no_plan,
  failed,
};

// The outcome of a search that held `has_plan` plans when it ended,
// `stopped` early (time limit or cancel) or not, or stopped because its
// best plan was proven within the requested gap (`gap_reached`: the answer
// asked for, so a success).
constexpr PlanStatus search_status(bool has_plan, bool stopped, bool gap_reached = false) {
  if (gap_reached && has_plan) return PlanStatus::gap_reached;
  if (stopped) return has_plan ? PlanStatus::stopped_with_plan : PlanStatus::stopped_no_plan;
  return has_plan ? PlanStatus::found : PlanStatus::infeasible;
}

constexpr bool has_plan(PlanStatus s) {
  return s == PlanStatus::found || s == PlanStatus::gap_reached || s == PlanStatus::estimated ||
         s == PlanStatus::stopped_with_plan;
}

constexpr bool stopped_early(PlanStatus s) {
  return s == PlanStatus::stopped_with_plan || s == PlanStatus::stopped_no_plan;
}

constexpr int exit_code(PlanStatus s) {
  switch (s) {
    case PlanStatus::found:
    case PlanStatus::gap_reached:
    case PlanStatus::estimated:
      return kExitOk;
    case PlanStatus::infeasible:
    case PlanStatus::does_not_fit:
      return kExitInfeasible;
    case PlanStatus::stopped_with_plan:
    case PlanStatus::stopped_no_plan:
      return kExitInterrupted;
    case PlanStatus::failed:
      break;
  }
  return kExitFailure;
}

// The `status` line of the summary block (stable: scripts grep it).
constexpr const char* summary_label(PlanStatus s) {
  switch (s) {
    case PlanStatus::found:
      return "found";
    case PlanStatus::gap_reached:
      return "gap-reached";
    case PlanStatus::estimated:
      return "estimated";
    case PlanStatus::infeasible:
      return "infeasible";
    case PlanStatus::does_not_fit:
      return "does-not-fit";
    case PlanStatus::stopped_with_plan:
      return "time-limit-best-so-far";
    case PlanStatus::stopped_no_plan:
      return "interrupted-no-plan";
    case PlanStatus::failed:
      break;
  }
  return "failed";
}

}  // namespace autohaap
