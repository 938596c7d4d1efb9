// `autohaap validate FILE...`: check input files of every kind.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "autohaap/error.hpp"
#include "autohaap/io/launch_manifest.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "commands.hpp"
#include "plan_problem.hpp"

namespace autohaap::cli {

CLI::App* register_validate_command(CLI::App& app, CommandAction& action) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("validate", "check input files (model, device, cluster, training, plan, launch manifest)");
  cmd->add_option("files", *files, "files to check")->required();
  // Every file is checked, each reported on a line of its own (a fleet's
  // specs checked at once show all their faults, not the first); exit 2
  // when any was refused, else 3 when a valid plan does not fit in memory
  // (as estimate, report and export exit), else 0.
  action = [files] {
    int refused = 0, overflowing = 0;
    for (const std::string& f : *files) {
      try {
        const std::string kind = validate_file(f);
        // A plan is valid where estimate, report and export take it as
        // given: against the specs it embeds, or the model and cluster it
        // names (layers, GPUs, degrees, devices, the batch). What they
        // would say of it is said here too: its price where it differs from
        // the file's, and a stage that overflows (a plan whose specs were
        // edited to 1 GiB a GPU had been "valid" while all three refused
        // it).
        bool fits = true;
        if (kind == "plan") {
          const PlanProblem pp = load_plan_problem(f, ProblemArgs{});
          std::cerr << pp.notes;
          fits = warn_if_out_of_memory(pp, f);
        }
        if (kind == "launch manifest") read_launch_manifest(f);
        std::cout << f << ": valid " << kind << (fits ? "" : ", but it does not fit in memory") << "\n";
        overflowing += !fits;
      } catch (const InputError& e) {
        std::cerr << "error: " << e.what() << "\n";
        ++refused;
      }
    }
    if (refused > 0) return int{kExitInvalidInput};
    return overflowing > 0 ? int{kExitInfeasible} : int{kExitOk};
  };
  return cmd;
}

}  // namespace autohaap::cli
