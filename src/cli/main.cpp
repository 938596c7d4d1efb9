// autohaap: the command line. Parses flags (CLI11), calls the library, prints,
// and maps outcomes to the exit codes of DESIGN.md: 0 found/estimated,
// 2 invalid input, 3 no feasible plan, 4 interrupted / time limit.
#include <CLI/CLI.hpp>

#include <iostream>

#include "autohaap/error.hpp"
#include "commands.hpp"

namespace {

using namespace autohaap;
using namespace autohaap::cli;

void add_problem_options(CLI::App* cmd, ProblemArgs& p, bool required) {
  auto* m = cmd->add_option("-m,--model", p.model, "model: catalog name (e.g. llama3-8b) or YAML file");
  auto* c = cmd->add_option("-c,--cluster", p.cluster, "cluster: catalog name or YAML file");
  if (required) {
    m->required();
    c->required();
  }
  cmd->add_option("-t,--train", p.train, "training settings: catalog name or YAML file (default: built-in)");
  cmd->add_option("--profiles", p.profiles, "measured latency profile: CSV file");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"AutoHAAP: heterogeneity-aware asymmetric partitioning for LLM training.\n"
               "Without a command: a search on the built-in default (llama3-8b on a mixed A100+V100 cluster)."};
  app.set_version_flag("--version", std::string("autohaap ") + AUTOHAAP_VERSION);
  app.require_subcommand(0, 1);

  EstimateArgs est;
  auto* estimate = app.add_subcommand("estimate", "score one plan: per-stage time and memory, iteration time, MFU");
  add_problem_options(estimate, est.problem, true);
  estimate->add_option("--plan", est.plan_file, "plan file (YAML or JSON) to score");
  estimate->add_option("--tp", est.tp, "tensor-parallel degree (Megatron-style uniform plan)");
  estimate->add_option("--pp", est.pp, "pipeline stages");
  estimate->add_option("--dp", est.dp, "data-parallel degree");
  estimate->add_option("--micro-batch", est.micro_batch, "sequences per micro-batch per replica (Megatron's meaning)");
  estimate->add_option("--recompute", est.recompute, "none | selective | full")->default_val("none");
  estimate->add_option("--zero", est.zero, "ZeRO stage 0-3 (default: the training settings')");
  estimate->add_option("-o,--out", est.out, "write the scored plan here (.json or .yaml)");

  std::vector<std::string> validate_files;
  auto* validate = app.add_subcommand("validate", "check input files (model, device, cluster, training, plan)");
  validate->add_option("files", validate_files, "files to check")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitInvalidInput;
  }

  try {
    if (*estimate) return run_estimate(est);
    if (*validate) return run_validate(validate_files);
    std::cout << app.help();
    return kExitOk;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitFailure;
  }
}
