// `autohaap export PLAN --to megatron|hostfile|nodelist|json|launch-json`:
// turn a plan into what a training run needs — Megatron-LM arguments, a
// rank-to-GPU hostfile, the order to launch its nodes in, the plan as JSON
// with its predicted performance, or the launch manifest a heterogeneous
// runtime starts every rank from (io/launch_manifest.hpp).
//
// Exit codes: 0 written; 2 invalid input; 3 (megatron only) stock
// Megatron-LM cannot run this plan — the reasons and the nearest plan it
// can run, with its arguments, are printed instead.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/hostfile.hpp"
#include "autohaap/io/launch_manifest.hpp"
#include "autohaap/io/megatron_export.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"  // limits
#include "autohaap/units.hpp"
#include "commands.hpp"
#include "plan_problem.hpp"
#include "problem_args.hpp"

namespace autohaap::cli {
namespace {

struct ExportArgs {
  ProblemArgs problem;
  std::string plan_file;
  std::string to;
  std::string out;
};

std::string uniform_description(const Plan& p) {
  const StagePlan& s = p.stages.front();
  return s.devices() + ": tp " + std::to_string(s.tp) + " x pp " + std::to_string(p.stages.size()) + " x dp " +
         std::to_string(s.dp) + " = " + std::to_string(p.num_gpus()) + " GPUs, micro-batch " +
         std::to_string(p.micro_batch_size / s.dp) + " per replica, recompute " + to_string(s.recompute) +
         ", layers split evenly";
}

// Megatron-LM: the arguments when they express the plan, else why not and
// the nearest plan they do express.
int export_megatron(const PlanProblem& pp, std::string& text) {
  const std::vector<std::string> blockers = megatron_blockers(pp.plan, pp.problem);
  if (blockers.empty()) {
    text = format_megatron_arguments(pp.plan, pp.problem);
    return kExitOk;
  }
  const CostModel model(pp.problem);
  const double own = model.estimate(pp.plan).iteration_time_s;
  text = std::string(kNotExpressibleHeading) + ":\n";
  for (const std::string& why : blockers) text += "#   - " + why + "\n";
  // A training setting no layout changes: no nearest plan to offer.
  if (!megatron_training_blocker(pp.problem, pp.plan.zero).empty()) {
    text += "# nearest expressible plan: none — no plan of this training and model runs on Megatron-LM\n";
    return kExitInfeasible;
  }
  const auto nearest = nearest_megatron_plan(pp.problem, pp.plan);
  if (!nearest) {
    text += "# nearest expressible plan: none — no uniform plan on these GPUs fits in memory";
    text += pp.problem.model.family == ModelFamily::generic ? " (or the model is not a transformer)\n" : "\n";
    return kExitInfeasible;
  }
  const double t = nearest->plan.predicted.iteration_time_s;
  char times[128];
  std::snprintf(times, sizeof times, "%.4f s vs %.4f s for this plan (%+.1f%%)", t, own, 100 * (t / own - 1));
  text += "# nearest expressible plan: " + uniform_description(nearest->plan) + "\n";
  text += std::string("# predicted iteration ") + times + "\n";
  // Its own nodes, in its own rank order: PLAN's node list is another
  // plan's.
  text += "# its node list (node rank = line):\n";
  std::istringstream nodes(format_nodelist(nearest->plan, nearest->problem.cluster));
  for (std::string line; std::getline(nodes, line);) text += "#   " + line + "\n";
  text += format_megatron_arguments(nearest->plan, nearest->problem, "its node list above");
  return kExitInfeasible;
}

int run_export(const ExportArgs& a) {
  std::vector<FlagPath> inputs = input_files(a.problem);
  inputs.push_back({"PLAN", a.plan_file});
  check_outputs_apart({{"-o", a.out}}, inputs);
  // Never over one of AutoHAAP's inputs (a model or cluster file), which
  // search -o and estimate -o refuse too.
  if (a.out == "-")
    throw InputError("command line", "-o", a.out,
                     "a file name (without -o the export goes to standard output)");
  if (a.to == "json" || a.to == "launch-json")
    check_overwrites_only(a.out, "-o", a.to == "json" ? "plan" : "launch manifest");
  else
    check_overwrites_only_output(a.out, "-o", "export",
                                 {std::string(kHostfileHeading), std::string(kNodelistHeading),
                                  std::string(kMegatronArgumentsHeading), std::string(kNotExpressibleHeading)});
  const PlanProblem pp = load_plan_problem(a.plan_file, a.problem);
  std::cerr << pp.notes;  // standard output may be the export itself
  const bool fits = warn_if_out_of_memory(pp, a.plan_file);
  std::string text;
  int code = kExitOk;
  if (a.to == "megatron") {
    code = export_megatron(pp, text);
  } else if (a.to == "hostfile") {
    text = format_hostfile(pp.plan, pp.problem.cluster);
  } else if (a.to == "launch-json") {
    if (pp.plan.num_gpus() > limits::kMaxLaunchRanks)
      throw InputError(a.plan_file, "stages", std::to_string(pp.plan.num_gpus()) + " GPUs",
                       "at most " + std::to_string(limits::kMaxLaunchRanks) +
                           " GPUs for --to launch-json (its manifest lists every rank and its peers)");
    text = launch_manifest_to_json(launch_manifest(pp.plan, pp.problem));
  } else if (a.to == "nodelist") {
    text = format_nodelist(pp.plan, pp.problem.cluster);
  } else {
    Plan scored = pp.plan;
    const CostModel model(pp.problem);
    scored.predicted = model.estimate(scored);
    text = plan_to_json(scored, pp.problem);
  }
  if (a.out.empty()) {
    std::cout << text;
  } else if (code != kExitOk) {
    // Arguments of another plan (the nearest expressible) must not land
    // where a launch script reads this plan's: the file is left as it was,
    // and the verdict and the nearest plan go to the terminal.
    std::cout << text << "note: not written to " << a.out << ": the plan is not expressible (exit "
              << code << "); the nearest plan's arguments are above\n";
  } else {
    write_file_atomically(a.out, text);
    std::cout << a.to << " export written to " << a.out << "\n";
  }
  return fits ? code : kExitInfeasible;
}

}  // namespace

CLI::App* register_export_command(CLI::App& app, CommandAction& action) {
  auto a = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export", "turn a plan into Megatron-LM arguments, a hostfile, its node launch order, JSON or a launch manifest");
  cmd->add_option("plan", a->plan_file, "plan file (YAML or JSON)")->required();
  cmd->add_option("--to", a->to, "megatron | hostfile | nodelist | json | launch-json")
      ->required()
      ->check(CLI::IsMember({"megatron", "hostfile", "nodelist", "json", "launch-json"}));
  cmd->add_option("-o,--out", a->out, "write here instead of standard output");
  add_problem_options(cmd, a->problem, false);
  cmd->footer(
      "--model, --cluster and --train default to the specs the plan file carries (for a plan file without\n"
      "them: the model and cluster it names, the built-in training settings).\n"
      "Exit 3 with --to megatron: stock Megatron-LM cannot run this plan; the reasons and the nearest plan it\n"
      "can run (with its arguments and predicted iteration time) are printed instead. Exit 3 with any --to,\n"
      "after writing: the plan does not fit in memory (the stage that overflows is named on standard error).\n"
      "--to nodelist: the plan's nodes in Megatron-LM rank order; launch line k as node rank k so every stage\n"
      "runs on its device type (slurm/megatron-plan.sbatch does it on Slurm).");
  action = [a] { return run_export(*a); };
  return cmd;
}

}  // namespace autohaap::cli
