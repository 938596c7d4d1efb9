// Flags of `autohaap search`, shared by the commands that run searches.
#pragma once

#include <cstdint>
#include <string>

#include "commands.hpp"

namespace autohaap::cli {

struct SearchArgs {
  ProblemArgs problem;       // empty model/cluster: the built-in default
  std::string strategy = "autohaap";
  int threads = 0;           // per process (per MPI rank)
  int top = 1;
  double time_limit = 0;
  std::int64_t max_skeletons = 1'000'000;
  bool explain = false;
  std::string out;
  std::string report;  // SVG/HTML picture of the best plan
  // Distributed search and checkpoints (dist/distributed_search.hpp).
  std::string checkpoint;    // empty: none
  double checkpoint_interval = 30;
  double exchange_interval = 0.1;
  bool no_cache_exchange = false;
  bool rank_report = false;
  // Testing only (hidden): RANK:WHERE, WHERE one of search, exchange, input
  // (dist::InjectedFailure); empty: none.
  std::string inject_failure;
};

void add_search_options(CLI::App* command, SearchArgs& args);
int run_search_command(const SearchArgs& args);

}  // namespace autohaap::cli
