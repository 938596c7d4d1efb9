// InitProgress: where the search's initialization (prepare_search,
// searcher.hpp) stands after a round of (group order, B) tasks — what a
// resumed initialization needs to go on from the next round and list the
// same skeletons, with the same threshold and probe plans, as one never
// stopped. Everything the pass decides after a round depends only on the
// rounds before it (rounds are a fixed number of tasks, skeletons chosen
// by (bound, id)), so this state and the tasks left determine the rest.
//
// A checkpoint saves it while the initialization runs (dist/checkpoint.hpp);
// its cereal form is in io/search_serialization.hpp. Plain data.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_space.hpp"

namespace autohaap {

struct InitProgress {
  std::uint64_t next_task = 0;   // tasks [0, next_task) are walked; a round boundary
  std::uint64_t tasks = 0;       // tasks in all (a resume checks it against its own)
  std::vector<Skeleton> kept;    // the list so far, in the order the pass built it
  std::vector<Plan> probes;      // the best plans balanced so far (at most top-K)
  double threshold_s = std::numeric_limits<double>::infinity();
  PruneReport prune;             // removals counted so far
  std::uint64_t cut_at = 0;      // list size at which the pass next cuts the list to the threshold
  // What the skeleton limit dropped so far (PreparedSearch::dropped_bound_s)
  // and the bound above which the next rounds drop (the list's, when cut).
  double dropped_bound_s = std::numeric_limits<double>::infinity();
  double limit_cutoff_s = std::numeric_limits<double>::infinity();

  // Every round walked: a resume from it walks none (PrepareOptions::walked).
  bool walked_all() const { return tasks > 0 && next_task == tasks; }
};

}  // namespace autohaap
