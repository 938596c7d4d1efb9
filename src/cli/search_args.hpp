// Flags of `autohaap search`, shared by the commands that run searches.
#pragma once

#include <string>

#include "commands.hpp"

namespace autohaap::cli {

struct SearchArgs {
  ProblemArgs problem;       // empty model/cluster: the built-in default
  std::string strategy = "autohaap";
  int threads = 0;
  int top = 1;
  double time_limit = 0;
  bool explain = false;
  std::string out;
};

void add_search_options(CLI::App* command, SearchArgs& args);
int run_search_command(const SearchArgs& args);

}  // namespace autohaap::cli
