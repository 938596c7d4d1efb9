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
  // when any was refused.
  action = [files] {
    int refused = 0;
    for (const std::string& f : *files) {
      try {
        const std::string kind = validate_file(f);
        // A plan is valid where estimate, report and export take it as
        // given: against the specs it embeds, or the model and cluster it
        // names (layers, GPUs, degrees, devices, the batch).
        if (kind == "plan") load_plan_problem(f, ProblemArgs{});
        if (kind == "launch manifest") read_launch_manifest(f);
        std::cout << f << ": valid " << kind << "\n";
      } catch (const InputError& e) {
        std::cerr << "error: " << e.what() << "\n";
        ++refused;
      }
    }
    return refused == 0 ? int{kExitOk} : int{kExitInvalidInput};
  };
  return cmd;
}

}  // namespace autohaap::cli
