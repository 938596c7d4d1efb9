// Shared by the commands: turn --model/--cluster/--train/--profiles into a
// Problem, and parse enum-valued flags with errors that name the flag.
#pragma once

#include <string>

#include "autohaap/specs/problem.hpp"
#include "commands.hpp"

namespace autohaap::cli {

Problem load_problem_args(const ProblemArgs& args);
// The --profiles argument for `problem`'s model and cluster: a Metis profile
// directory or a CSV table.
ProfileTable load_profiles_arg(const std::string& profiles, const Problem& problem);
// Lines that tell the user how the inputs were interpreted, e.g. BF16
// requested on a device without it (costed in FP16: same bytes, FP16 peak).
std::string precision_notes(const Problem& problem);
Recompute parse_recompute(const std::string& value, const std::string& flag);

}  // namespace autohaap::cli
