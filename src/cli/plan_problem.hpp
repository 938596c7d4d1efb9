// Shared by the commands that take a plan file (estimate --plan, report,
// export): read the plan and the problem it is scored in.
//
// Each of --model, --cluster and --train that is given wins. Those not
// given come from the specs the plan file embeds (io/plan_io.hpp), so a
// plan written by `search -o` is drawn, re-estimated and exported in any
// folder with no other file; for a plan file without embedded specs (older
// or hand-written ones), --model and --cluster default to the names the
// plan carries (catalog names, or files found from the current folder) and
// the training settings to the built-in default, as before. A spec given
// that differs from the embedded one (by fingerprint) is used, with a note.
// The plan carries its own global batch and ZeRO stage, which the cost
// model reads there (cost/cost_model.hpp).
#pragma once

#include <string>

#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"
#include "commands.hpp"

namespace autohaap::cli {

struct PlanProblem {
  Plan plan;
  Problem problem;
  std::string notes;  // lines "note: ..." on specs given that differ from the plan's
};

// Throws InputError for a bad plan file, unknown specs, or a plan made for
// another model or cluster (check_plan_against).
PlanProblem load_plan_problem(const std::string& plan_file, const ProblemArgs& args);

// A plan that does not fit runs out of memory wherever it is launched. What
// a command makes of it (an export, a report) is still written (the user
// may know better than the model), with the stage that overflows named on
// standard error, and the command exits 3 (a script that launches on
// success must not launch it). Returns whether it fits.
bool warn_if_out_of_memory(const PlanProblem& pp, const std::string& plan_file);

}  // namespace autohaap::cli
