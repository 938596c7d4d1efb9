// SearchDriver: the AutoHAAP search, written once for one process and for
// every rank of an MPI job; what differs between them is behind a
// SearchSynchronizer (search_synchronizer.hpp). run_search drives it with a
// LocalSynchronizer, dist/distributed_search.hpp with the MPI one.
//
// How it runs (every participant calls drive_search at once):
//  1. Options are checked (validate, on every participant, agreed).
//  2. Initialization (prepare_search), the participants sharing its dives,
//     walk and bounds (PrepareOptions::exchange), every one holding the
//     same list after it, asking the search's time
//     limit and cancel flag; the participants then agree whether any was
//     stopped, and if so all stop, and rank 0's probe plans are the best
//     so far. No seed plans: the skeletons of least lower bound, balanced
//     first, are the first incumbent.
//  3. The list, in lower-bound order, is cut into chunks of about equal
//     work (cut_into_chunks: chunks_per_rank per participant) or restored
//     from a checkpoint, and dealt round-robin, so every participant's
//     share starts with some of the most promising skeletons.
//  4. Rounds: each participant searches its queued chunks in order
//     (search_share, its own TBB threads and LatencyCache) until about
//     exchange_interval_s has passed or its queue is empty, then joins the
//     exchange: finished chunks, top-K times (the job's K-th best over
//     distinct skeletons tightens every incumbent), stop and failure
//     flags; cache entries when another round follows; a checkpoint when
//     due. A participant whose queue ran dry takes every other chunk of the
//     queue with the most work left; every participant applies the same
//     rule to the same data, so the queues stay agreed without messages.
//     Each report also carries the least lower bound of the skeletons the
//     participant holds and has not finished (its open chunk's frontier,
//     its queued chunks): with the job's best plan, a proven lower bound on
//     the optimum, the same on every participant. With search.gap > 0 all
//     stop at the first exchange where (best - bound) / best <= gap (alone:
//     after any skeleton), and the status is gap_reached. The final bound
//     and gap go to SearchStats (bound_s, gap): gap 0 when run to the end.
//  5. Rank 0 gathers every top-K and merges them (merge_top_k): the bound
//     only skips skeletons that cannot enter the final top-K and chunks are
//     searched whole, so the answer is the exact top-K in canonical order,
//     whatever the participant and thread counts. Then the best uniform
//     plan that finish_plans adds (SearchResult::uniform), each
//     participant taking its share of the group sets, gathered alike.
// Strategies other than autohaap run on rank 0 alone (run_search); the
// others wait for the outcome.
//
// Failures: an error during set-up on any participant is agreed and
// returned in DriverResult::failure on every one; an exception while
// searching is reported at the next exchange and ends the search on all;
// one inside an exchange aborts (SearchSynchronizer::abort). With a
// LocalSynchronizer every error is an exception to the caller instead.
//
// Thread safety: call from one thread per participant (the one that owns
// its synchronizer). Progress is called on rank 0 only: per skeleton from
// the workers (never two at once) with live_progress, else after each
// exchange with the job's totals, from the calling thread. Cost: the
// probes once per participant, a share of the rest of the initialization,
// of the chunks and of the uniform plans, and per round what the
// synchronizer exchanges.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "autohaap/search/search_synchronizer.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// A failure on purpose, for the tests that check a failing rank ends the
// whole job with one message and never a hang (tests/mpi/rank_failure.sh
// sets it through the CLI's hidden --inject-failure RANK:WHERE).
struct InjectedFailure {
  enum class Where { search, exchange, input };
  int rank = -1;  // -1: none
  Where where = Where::search;
  // search: an exception on that rank after its first chunk (reported at
  // the next exchange); exchange: an exception inside an exchange (the job
  // is aborted); input: an InputError while setting up.
  bool fires(int my_rank, Where at) const { return rank >= 0 && rank == my_rank && where == at; }
};

struct DriverOptions {
  double exchange_interval_s = 0.1;  // length of a round
  int chunks_per_rank = 64;          // granularity of shares and rebalancing
  // Progress per skeleton from the workers (one process: a live line);
  // otherwise after each exchange, with the job's totals.
  bool live_progress = false;
  InjectedFailure inject_failure;    // testing only; none by default
};

struct DriverResult {
  // Rank 0: the whole result, stats over every participant. Others: only
  // result.status, enough to choose the exit code.
  SearchResult result;
  std::optional<SearchFailure> failure;  // set on every participant when the search failed
  std::vector<RankReport> ranks;         // rank 0: one per participant
  int rank_count = 1;
  // Chunks of the skeleton list; restored from a checkpoint; searched here.
  std::int64_t chunks = 0;
  std::int64_t chunks_restored = 0;
  std::int64_t chunks_searched = 0;
  bool resumed = false;
  // The checkpoint held the whole initialization: its list was rebuilt
  // without walking a round.
  bool initialization_restored = false;
  std::int64_t checkpoints_written = 0;
};

DriverResult drive_search(const Problem& problem, const SearchOptions& search, const DriverOptions& options,
                          SearchSynchronizer& sync);

}  // namespace autohaap
