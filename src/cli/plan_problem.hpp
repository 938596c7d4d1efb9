// Shared by the commands that take a plan file (report, export): read the
// plan and the problem it is scored in. --model and --cluster default to
// the names the plan carries, so `autohaap report plan.yaml --out p.svg`
// works for plans on catalog models and clusters; the training settings
// take the plan's global batch and ZeRO stage, as `estimate --plan` does.
#pragma once

#include <string>

#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"
#include "commands.hpp"

namespace autohaap::cli {

struct PlanProblem {
  Plan plan;
  Problem problem;
};

// Throws InputError for a bad plan file, unknown specs, or a plan made for
// another model or cluster (check_plan_against).
PlanProblem load_plan_problem(const std::string& plan_file, ProblemArgs args);

}  // namespace autohaap::cli
