// `autohaap estimate`: score one plan (a file, or Megatron-style flags) with
// the cost model and print its per-stage time and memory breakdown.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/plan_printer.hpp"
#include "autohaap/plan_builder.hpp"
#include "commands.hpp"
#include "plan_problem.hpp"
#include "problem_args.hpp"

namespace autohaap::cli {
namespace {

struct EstimateArgs {
  ProblemArgs problem;
  std::string plan_file;
  // Unset: not given. Each given degree must be positive.
  std::optional<int> tp, pp, dp, micro_batch;
  int cp = 1, vpp = 1;
  std::string recompute = "none";
  std::string layer_split = "even";
  std::optional<int> zero;  // unset: keep the training settings'
  std::string out;
};

int run_estimate(const EstimateArgs& a) {
  if (a.zero && (*a.zero < 0 || *a.zero > 3))
    throw InputError("command line", "--zero", std::to_string(*a.zero), "0, 1, 2 or 3");
  for (const auto& [flag, value] : {std::pair{"--tp", a.tp}, std::pair{"--pp", a.pp}, std::pair{"--dp", a.dp},
                                    std::pair{"--micro-batch", a.micro_batch}})
    if (value && *value < 1) throw InputError("command line", flag, std::to_string(*value), "a positive integer");
  // -o may rewrite the plan it scores (in place), never the specs it reads.
  if (!a.out.empty()) check_plan_file_name(a.out, "-o");
  check_outputs_apart({{"-o", a.out}}, input_files(a.problem));
  check_overwrites_only(a.out, "-o", "plan");

  Problem problem;
  Plan plan;
  if (!a.plan_file.empty()) {
    // --model, --cluster and --train default to the specs the plan file
    // carries; the plan carries its own ZeRO stage and global batch, and
    // the cost model reads them there.
    PlanProblem pp = load_plan_problem(a.plan_file, a.problem);
    std::cout << pp.notes;
    problem = std::move(pp.problem);
    plan = std::move(pp.plan);
  } else {
    if (a.problem.model.empty() || a.problem.cluster.empty()) {
      throw InputError("command line", a.problem.model.empty() ? "--model" : "--cluster", "(missing)",
                       "a catalog name or YAML file (required without --plan)");
    }
    problem = load_problem_args(a.problem);
    if (!a.tp || !a.pp || !a.dp || !a.micro_batch) {
      throw InputError("command line", "--plan or --tp/--pp/--dp/--micro-batch", "(missing)",
                       "either --plan FILE or all of --tp, --pp, --dp and --micro-batch");
    }
    UniformPlanRequest r;
    r.tp = *a.tp, r.pp = *a.pp, r.dp = *a.dp, r.micro_batch_per_replica = *a.micro_batch;
    r.cp = a.cp, r.vpp = a.vpp;
    r.recompute = parse_recompute(a.recompute, "--recompute");
    r.layer_split = parse_layer_split(a.layer_split, "command line", "--layer-split");
    r.zero = a.zero;
    plan = make_uniform_plan(problem, r);
  }

  const CostModel model(problem);
  plan.predicted = model.estimate(plan);
  plan.search = SearchStats{};

  std::cout << "AutoHAAP estimate: " << problem.model.name << " on " << problem.cluster.name << " ("
            << plan.num_gpus() << " of " << problem.cluster.total_gpus() << " GPUs), global batch "
            << plan.global_batch << " = micro-batch " << plan.micro_batch_size << " x " << plan.num_micro_batches
            << ", zero " << plan.zero << "\n"
            << device_notes(problem, &plan) << "\n";
  std::cout << format_stage_table(model, plan) << "\nmemory per GPU (GiB)\n" << format_memory_table(model, plan)
            << "\n";
  std::cout << format_fit_problems(model, plan);
  if (!a.out.empty()) {
    write_plan(plan, a.out, problem);  // with the specs it was scored with
    std::cout << "plan written to " << a.out << "\n";
  }
  const PlanStatus status = plan.predicted.fits ? PlanStatus::estimated : PlanStatus::does_not_fit;
  std::cout << format_summary_block(plan, status);
  return exit_code(status);
}

}  // namespace

CLI::App* register_estimate_command(CLI::App& app, CommandAction& action) {
  auto a = std::make_shared<EstimateArgs>();
  auto* cmd = app.add_subcommand("estimate", "score one plan: per-stage time and memory, iteration time, MFU");
  add_problem_options(cmd, a->problem, false);
  CLI::Option* plan_option = cmd->add_option("--plan", a->plan_file, "plan file (YAML or JSON) to score");
  cmd->add_option("--tp", a->tp, "tensor-parallel degree (Megatron-style uniform plan)");
  cmd->add_option("--pp", a->pp, "pipeline stages");
  cmd->add_option("--dp", a->dp, "data-parallel degree");
  cmd->add_option("--cp", a->cp, "context-parallel degree: GPUs per sequence (Megatron's --context-parallel-size)")
      ->default_val(1);
  cmd->add_option("--vpp", a->vpp,
                  "model chunks per pipeline stage, interleaved 1F1B (Megatron's "
                  "--virtual-pipeline-model-parallel-size)")
      ->default_val(1);
  cmd->add_option("--micro-batch", a->micro_batch, "sequences per micro-batch per replica (Megatron's meaning)");
  cmd->add_option("--recompute", a->recompute, "none | selective | full")->default_val("none");
  cmd->add_option("--layer-split", a->layer_split,
                  "layers per stage: even (Megatron-LM), type:transformer or type:transformer|embedding "
                  "(Megatron-DeepSpeed's --pp-partition-method), or a list such as 7,7,6")
      ->default_val("even");
  cmd->add_option("--zero", a->zero, "ZeRO stage 0-3 (default: the training settings')");
  cmd->add_option("-o,--out", a->out, "write the scored plan here (.json or .yaml)");
  // A plan file fixes its own layout, layers and execution settings: the
  // flags that shape a uniform plan would be ignored with it, so they are
  // refused instead.
  for (const char* shaping :
       {"--tp", "--pp", "--dp", "--cp", "--vpp", "--micro-batch", "--recompute", "--layer-split", "--zero"})
    plan_option->excludes(cmd->get_option(shaping));
  cmd->footer(
      "--model and --cluster are required without --plan. With --plan they, and --train, default to the\n"
      "specs the plan file carries (or, for a plan file without them, to the names it gives).");
  action = [a] { return run_estimate(*a); };
  return cmd;
}

}  // namespace autohaap::cli
