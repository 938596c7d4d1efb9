#include "plan_problem.hpp"

#include "autohaap/io/plan_io.hpp"
#include "problem_args.hpp"

namespace autohaap::cli {

PlanProblem load_plan_problem(const std::string& plan_file, ProblemArgs args) {
  PlanProblem out;
  out.plan = read_plan(plan_file);
  if (args.model.empty()) args.model = out.plan.model;
  if (args.cluster.empty()) args.cluster = out.plan.cluster;
  out.problem = load_problem_args(args);
  check_plan_against(out.plan, out.problem.model, out.problem.cluster, plan_file);
  out.problem.training.zero = out.plan.zero;
  out.problem.training.global_batch = out.plan.global_batch;
  return out;
}

}  // namespace autohaap::cli
