// `autohaap report PLAN --out FILE.svg|FILE.html`: draw a plan — its 1F1B
// timeline and per-stage time and memory — as an SVG picture or an HTML
// page with the plan's tables around the picture.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/report/report_writer.hpp"
#include "commands.hpp"
#include "plan_problem.hpp"
#include "problem_args.hpp"

namespace autohaap::cli {
namespace {

struct ReportArgs {
  ProblemArgs problem;
  std::string plan_file;
  std::string out;
};

int run_report(const ReportArgs& a) {
  // A wrong extension is reported before the plan is even read.
  const ReportFormat format = report_format_for(a.out, "--out");
  std::vector<FlagPath> inputs = input_files(a.problem);
  inputs.push_back({"PLAN", a.plan_file});
  check_outputs_apart({{"--out", a.out}}, inputs);
  check_overwrites_only_output(a.out, "--out", "report", {"<title>" + std::string(kReportTitle)});
  const PlanProblem pp = load_plan_problem(a.plan_file, a.problem);
  std::cout << pp.notes;
  const CostModel model(pp.problem);
  try {
    write_report(model, pp.plan, a.out);
  } catch (const InputError& e) {
    // What the picture cannot draw of the plan (its stage count): said of
    // the plan file, not of an unnamed input.
    if (!e.file().empty()) throw;
    throw InputError(a.plan_file, e.key(), e.value(), e.allowed());
  }
  const PredictedPerformance perf = model.estimate(pp.plan);
  std::cout << "report written to " << a.out << " (" << (format == ReportFormat::svg ? "svg" : "html") << ": "
            << pp.plan.stages.size() << " stages, " << pp.plan.num_micro_batches << " micro-batches, iteration "
            << perf.iteration_time_s << " s" << (perf.fits ? "" : ", does not fit in memory") << ")\n";
  // Drawn all the same; exit 3 as estimate and export do.
  return perf.fits || warn_if_out_of_memory(pp, a.plan_file) ? kExitOk : kExitInfeasible;
}

}  // namespace

CLI::App* register_report_command(CLI::App& app, CommandAction& action) {
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "draw a plan: 1F1B timeline, per-stage time and memory (SVG or HTML)");
  cmd->add_option("plan", a->plan_file, "plan file (YAML or JSON)")->required();
  cmd->add_option("-o,--out", a->out, "report file: .svg (picture) or .html (picture and tables)")->required();
  add_problem_options(cmd, a->problem, false);
  cmd->footer(
      "--model, --cluster and --train default to the specs the plan file carries (for a plan file without\n"
      "them: the model and cluster it names, the built-in training settings).");
  action = [a] { return run_report(*a); };
  return cmd;
}

}  // namespace autohaap::cli
