// InitRound: what one participant of a distributed initialization did in
// one round (prepare_search, searcher.hpp) — the blocks of tasks it walked
// and, per block, the skeletons kept, the removals counted and the plans
// its best bounds balanced to — exchanged so that every participant merges
// every block in block order and holds the same list and threshold after
// each round as one process would. Also how the round ended there: a stop,
// too many skeletons, or an error (an InputError travels as its four
// parts, so every participant reports it alike). One before the first
// round carries each participant's dives from the best probes (a block a
// dive, indexed by dive), and one after the last round its share of the
// list's tightened bounds.
//
// Its cereal form is in io/search_serialization.hpp. Plain data.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_space.hpp"

namespace autohaap {

struct InitBlock {
  std::uint32_t index = 0;      // within its round
  std::vector<Skeleton> kept;   // in task order
  PruneReport prune;
  std::vector<Plan> plans;      // its best bounds balanced: the plans that fit
  // The least bound of a skeleton its tasks dropped to stay within their
  // share of max_skeletons (infinity: none dropped).
  double dropped_bound_s = std::numeric_limits<double>::infinity();
  // Seconds its tasks took to walk, summed: how the next round's blocks
  // are dealt among participants (never what any keeps).
  double walk_s = 0;
};

struct InitRound {
  std::vector<InitBlock> blocks;
  bool stopped = false;   // a stop was seen: the blocks may be partial
  bool cancelled = false; // the stop was this participant's interrupt (a signal to it alone)
  bool overflow = false;  // more skeletons in the round than the memory guard allows
  // What its tasks held at their peaks, summed (the memory guard adds the
  // participants' up).
  std::int64_t peak_kept = 0;
  // Non-zero: the walk failed here (2: an InputError of these parts; 1:
  // another error, `value` its message).
  std::int32_t failure_code = 0;
  std::string file, key, value, allowed;
  // After the last round: the tightened bounds of this participant's
  // share of the list (every participants-th skeleton from its own index,
  // in list order; prepare_search), empty when stopped before.
  std::vector<double> bounds;
};

}  // namespace autohaap
