// Shared by the commands: turn --model/--cluster/--train/--profiles into a
// Problem, and parse enum-valued flags with errors that name the flag.
#pragma once

#include <string>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"
#include "commands.hpp"

namespace autohaap::cli {

Problem load_problem_args(const ProblemArgs& args);
// The --profiles argument for `problem`'s model and cluster: a Metis profile
// directory or a CSV table.
ProfileTable load_profiles_arg(const std::string& profiles, const Problem& problem);
// Lines that tell the user how the inputs were interpreted, e.g. BF16
// requested on a device without it (costed in FP16: same bytes, FP16 peak),
// or a device whose efficiency figures no measured training run checks:
// one note a line, with `plan` only for the devices its stages use.
std::string device_notes(const Problem& problem, const Plan* plan = nullptr);
Recompute parse_recompute(const std::string& value, const std::string& flag);

// A flag and the file it names ("" when it was not given).
struct FlagPath {
  const char* flag;
  std::string path;
};
// The model, cluster, training and profile files of `args` that were given
// as files, with their flags.
std::vector<FlagPath> input_files(const ProblemArgs& args);
// InputError under "command line" and the later flag when two outputs are
// one file, or an output is one of the inputs (the same file under any
// name): a plan written over its report, its checkpoint or its own model
// file would destroy it. Before any work, so nothing is lost.
void check_outputs_apart(const std::vector<FlagPath>& outputs, const std::vector<FlagPath>& inputs);
// InputError under "command line" and `flag` when the output `path` of
// kind `own_kind` (as validate names it: "plan", "launch manifest")
// already holds something else (an empty file aside): a device file a
// cluster names, a measured profile or any other input the flags above do
// not list would be lost under it. Before any work.
void check_overwrites_only(const std::string& path, const char* flag, const char* own_kind);

// The same for a text output, told by what its writer puts in its first
// lines (`marks`: an export's "# hostfile for " heading, a report's
// "<title>AutoHAAP plan: "): `path` may be new, empty or an earlier output
// holding one of them in its first 4 KB; a measured-runs CSV or a page of
// notes at that name had been replaced without a word. `output` names the
// kind in the error ("export", "report").
void check_overwrites_only_output(const std::string& path, const char* flag, const char* output,
                                  const std::vector<std::string>& marks);

}  // namespace autohaap::cli
