// The CLI's commands. Each parses nothing itself (main.cpp owns the CLI11
// definitions), calls the library, prints, and returns an exit code of
// error.hpp. Library errors (InputError) propagate to main, which prints them
// and exits 2.
#pragma once

#include <string>
#include <vector>

namespace autohaap::cli {

struct ProblemArgs {
  std::string model;
  std::string cluster;
  std::string train;     // empty: the default training settings
  std::string profiles;  // optional measured profile table
};

struct EstimateArgs {
  ProblemArgs problem;
  std::string plan_file;
  int tp = 0, pp = 0, dp = 0, micro_batch = 0;
  std::string recompute = "none";
  int zero = -1;         // -1: keep the training file's setting
  std::string out;
};

int run_estimate(const EstimateArgs& args);
int run_validate(const std::vector<std::string>& files);

}  // namespace autohaap::cli
