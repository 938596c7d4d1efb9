// Shared by the commands: turn --model/--cluster/--train/--profiles into a
// Problem, and parse enum-valued flags with errors that name the flag.
#pragma once

#include <string>

#include "autohaap/specs/problem.hpp"
#include "commands.hpp"

namespace autohaap::cli {

Problem load_problem_args(const ProblemArgs& args);
Recompute parse_recompute(const std::string& value, const std::string& flag);

}  // namespace autohaap::cli
