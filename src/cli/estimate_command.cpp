#include <cstdio>
#include <iostream>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/plan_printer.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/plan_builder.hpp"
#include "commands.hpp"
#include "problem_args.hpp"

namespace autohaap::cli {

int run_estimate(const EstimateArgs& a) {
  Problem problem = load_problem_args(a.problem);
  if (a.zero >= 0) {
    if (a.zero > 3) throw InputError("command line", "--zero", std::to_string(a.zero), "0, 1, 2 or 3");
    problem.training.zero = a.zero;
  }

  Plan plan;
  if (!a.plan_file.empty()) {
    plan = read_plan(a.plan_file);
    check_plan_against(plan, problem.model, problem.cluster, a.plan_file);
    problem.training.zero = plan.zero;
    problem.training.global_batch = plan.global_batch;
  } else {
    if (a.tp <= 0 || a.pp <= 0 || a.dp <= 0 || a.micro_batch <= 0) {
      throw InputError("command line", "--plan or --tp/--pp/--dp/--micro-batch", "(missing)",
                       "either --plan FILE or all of --tp, --pp, --dp and --micro-batch");
    }
    UniformPlanRequest r;
    r.tp = a.tp, r.pp = a.pp, r.dp = a.dp, r.micro_batch_per_replica = a.micro_batch;
    r.recompute = parse_recompute(a.recompute, "--recompute");
    plan = make_uniform_plan(problem, r);
  }

  const CostModel model(problem);
  plan.predicted = model.estimate(plan);
  plan.search = SearchStats{};

  std::cout << "AutoHAAP estimate: " << problem.model.name << " on " << problem.cluster.name << " ("
            << plan.num_gpus() << " of " << problem.cluster.total_gpus() << " GPUs), global batch "
            << plan.global_batch << ", micro-batch " << plan.micro_batch_size << " x " << plan.num_micro_batches
            << ", zero " << problem.training.zero << "\n\n";
  std::cout << format_stage_table(model, plan) << "\nmemory per GPU (GiB)\n" << format_memory_table(model, plan)
            << "\n";
  const std::string problems = format_fit_problems(model, plan);
  std::cout << problems;
  if (!a.out.empty()) {
    write_plan(plan, a.out, problem.cluster);
    std::cout << "plan written to " << a.out << "\n";
  }
  std::cout << format_summary_block(plan, plan.predicted.fits ? "estimated" : "does-not-fit");
  return plan.predicted.fits ? kExitOk : kExitInfeasible;
}

int run_validate(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    const std::string kind = validate_file(f);
    if (kind == "plan") read_plan(f);
    std::cout << f << ": valid " << kind << "\n";
  }
  return kExitOk;
}

}  // namespace autohaap::cli
