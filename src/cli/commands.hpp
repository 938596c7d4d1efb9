// The CLI's commands. Each command lives in its own src/cli/<name>_command.cpp
// and registers itself on the CLI11 app through one function below: it
// declares its flags (CLI11 keeps name, type, default and help of each in
// one place) and returns the action main() runs when that subcommand was
// chosen. Actions call the library, print, and return an exit code of
// error.hpp; InputError propagates to main(), which prints it and exits 2.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace autohaap::cli {

using CommandAction = std::function<int()>;

// Flags shared by every command that plans for a model on a cluster.
struct ProblemArgs {
  std::string model;
  std::string cluster;
  std::string train;     // empty: the default training settings
  std::string profiles;  // optional measured profile table
  bool profiles_only = false;  // search: only the points the profiles measure (Problem::profiles_only)
  std::string runnable = "any";  // search: plans runnable by this framework (Problem::runnable_by)
};
void add_problem_options(CLI::App* command, ProblemArgs& args, bool required);

// Each returns the subcommand it added and sets `action`.
CLI::App* register_estimate_command(CLI::App& app, CommandAction& action);
CLI::App* register_validate_command(CLI::App& app, CommandAction& action);
CLI::App* register_batch_command(CLI::App& app, CommandAction& action);
CLI::App* register_report_command(CLI::App& app, CommandAction& action);
CLI::App* register_export_command(CLI::App& app, CommandAction& action);
CLI::App* register_device_command(CLI::App& app, CommandAction& action);
// `default_action` runs when no subcommand was given: a search on the built-in default.
CLI::App* register_search_command(CLI::App& app, CommandAction& action, CommandAction& default_action);

}  // namespace autohaap::cli
