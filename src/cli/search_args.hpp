// Flags of `autohaap search`, shared by the commands that run searches.
#pragma once

#include <cstdint>
#include <string>

#include "autohaap/search/search_options.hpp"
#include "commands.hpp"

namespace autohaap::cli {

struct SearchArgs {
  ProblemArgs problem;       // empty model/cluster: the built-in default
  // The search options (search_options.hpp: one flag per table row).
  SearchConfig settings;
  bool explain = false;
  std::string out;
  std::string report;  // SVG/HTML picture of the best plan
  bool rank_report = false;
  // Testing only (hidden): RANK:WHERE, WHERE one of search, exchange, input
  // (dist::InjectedFailure); empty: none.
  std::string inject_failure;
};

void add_search_options(CLI::App* command, SearchArgs& args);
int run_search_command(const SearchArgs& args);

}  // namespace autohaap::cli
