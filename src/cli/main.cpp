// autohaap: the command line. Parses flags (CLI11), runs the chosen command,
// and maps outcomes to the exit codes of DESIGN.md: 0 found/estimated,
// 2 invalid input, 3 no feasible plan, 4 interrupted / time limit.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "autohaap/error.hpp"
#include "autohaap/io/yaml_value.hpp"
#include "commands.hpp"

namespace {

// A command's exit code once everything it printed reached standard
// output: a write that failed (a full disk, a closed pipe: SIGPIPE is
// ignored during searches) would otherwise end with exit 0 and a partial
// plan, manifest or table where the caller redirected it.
int with_output_written(int code) {
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) == 0 && !std::ferror(stdout) && !std::cout.fail()) return code;
  const int err = errno;
  std::cerr << "error: standard output: " << (err != 0 ? std::strerror(err) : "write failed")
            << " (what was printed is incomplete)\n";
  return code == autohaap::kExitOk ? autohaap::kExitFailure : code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autohaap;
  using namespace autohaap::cli;
  // Output reaches a terminal, a pipe or a log line by line as it is
  // produced (std::cout writes through C's stdout): a job killed after its
  // grace period (Slurm: SIGTERM, then SIGKILL) keeps all it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);

  CLI::App app{"AutoHAAP: heterogeneity-aware asymmetric partitioning for LLM training.\n"
               "Without a command: a search on the built-in default (llama3-8b on a mixed A100+V100 cluster)."};
  app.set_version_flag("--version", std::string("autohaap ") + AUTOHAAP_VERSION);
  app.require_subcommand(0, 1);

  // Every command: (subcommand, action to run when it was chosen).
  std::vector<std::pair<CLI::App*, CommandAction>> commands(7);
  CommandAction default_action;
  commands[0].first = register_search_command(app, commands[0].second, default_action);
  commands[1].first = register_estimate_command(app, commands[1].second);
  commands[2].first = register_validate_command(app, commands[2].second);
  commands[3].first = register_report_command(app, commands[3].second);
  commands[4].first = register_export_command(app, commands[4].second);
  commands[5].first = register_batch_command(app, commands[5].second);
  commands[6].first = register_device_command(app, commands[6].second);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ConversionError& e) {
    // CLI11 says "Could not convert: --micro-batch = 99999999999": told as
    // every other bad input, by flag, value and what is allowed.
    const std::string said = e.what(), lead = "Could not convert: ", sep = " = ";
    const std::size_t at = said.find(sep);
    if (said.rfind(lead, 0) != 0 || at == std::string::npos) {
      app.exit(e);
      return kExitInvalidInput;
    }
    const std::string name = said.substr(lead.size(), at - lead.size()), value = said.substr(at + sep.size());
    std::string type;
    std::vector<const CLI::App*> apps{&app};
    for (const auto& [cmd, action] : commands) apps.push_back(cmd);
    for (const CLI::App* cmd : apps)
      for (const CLI::Option* option : cmd->get_options())
        if (option->get_name() == name) type = option->get_type_name();
    // The type's range, as the files' readers say it: a flag's own range
    // (a positive --micro-batch) is checked, and said, once it converts.
    const std::string allowed = type == "INT"    ? "an integer of at most 2147483647 in magnitude, written in decimal "
                                                   "(each flag's own range is smaller)"
                                : type == "UINT" ? "a non-negative integer up to 4294967295, written in decimal"
                                : type == "FLOAT" ? "a number written in decimal"
                                                  : "a value of type " + (type.empty() ? std::string("the flag's") : type);
    std::cerr << "error: " << InputError("command line", name, value, allowed).what() << "\n";
    return kExitInvalidInput;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitInvalidInput;
  }

  try {
    // Every option that takes a value names a file, a name or a number: an
    // empty one (`-o ''`) would silently mean "none" or "the default". A
    // number is written in decimal, as in every input file (the scalar
    // rules, io/yaml_value.hpp): CLI11 reads 010 as octal 8, 0x10 as 16
    // and 0x1p4 as a hexadecimal float.
    std::vector<const CLI::App*> parsed{&app};
    for (auto& [cmd, action] : commands)
      if (cmd->parsed()) parsed.push_back(cmd);
    for (const CLI::App* cmd : parsed) {
      for (const CLI::Option* option : cmd->get_options()) {
        if (option->get_expected_min() == 0 || option->count() == 0) continue;
        const std::string type = option->get_type_name();
        for (const std::string& value : option->results()) {
          if (value.empty()) throw InputError("command line", option->get_name(), "", "a non-empty value");
          if ((type == "INT" || type == "UINT") && !is_decimal_integer(value))
            throw InputError("command line", option->get_name(), value, "an integer written in decimal");
          // CLI11 saturates a 64-bit flag's value past its range (--index
          // 1e23's digits read as 9223372036854775807): told here, as given.
          long long parsed_value = 0;
          if (type == "INT" &&
              std::from_chars(value.data() + (value[0] == '+' ? 1 : 0), value.data() + value.size(), parsed_value).ec ==
                  std::errc::result_out_of_range)
            throw InputError("command line", option->get_name(), value,
                             "an integer of at most 9223372036854775807 in magnitude (each flag's own range is "
                             "smaller)");
          if (type == "FLOAT" && !is_decimal_number(value))
            throw InputError("command line", option->get_name(), value, "a number written in decimal");
        }
      }
    }
    for (auto& [cmd, action] : commands) {
      if (cmd->parsed()) return with_output_written(action());
    }
    return with_output_written(default_action());
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitFailure;
  }
}
