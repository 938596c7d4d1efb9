#include "problem_args.hpp"

#include "autohaap/error.hpp"
#include "autohaap/io/profile_loader.hpp"
#include "autohaap/io/spec_loader.hpp"

namespace autohaap::cli {

Problem load_problem_args(const ProblemArgs& a) {
  Problem p = load_problem(a.model, a.cluster, a.train);
  if (!a.profiles.empty()) p.profiles = load_profile_csv(a.profiles);
  return p;
}

Recompute parse_recompute(const std::string& value, const std::string& flag) {
  if (value == "none") return Recompute::none;
  if (value == "selective") return Recompute::selective;
  if (value == "full") return Recompute::full;
  throw InputError("command line", flag, value, "none, selective or full");
}

}  // namespace autohaap::cli
