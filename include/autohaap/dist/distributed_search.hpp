// DistributedSearch: the AutoHAAP search over the ranks of an MPI job
// (DESIGN.md "Distributed search (MPI)"), giving the plans run_search
// gives on one process, whatever the rank and thread counts.
//
// How it runs (every rank calls run_distributed_search at once):
//  1. Every rank initializes the skeleton list (prepare_search; it is
//     deterministic, and cheaper to recompute than to ship), asking the
//     search's time limit and cancel flag as run_search does; the ranks
//     then agree (one all-reduce) whether any was stopped, and if so all
//     stop, and rank 0's probe plans are the best so far. Rank 0 cuts
//     the list, in lower-bound order, into chunks of about equal estimated
//     work (cut_into_chunks) and deals them round-robin, so each rank's
//     share starts with some of the most promising skeletons; it
//     broadcasts that table with
//     a digest of its list and a fingerprint of the inputs, and every rank
//     checks both against its own before searching.
//  2. Rounds. Each rank searches its queued chunks in order (search_share,
//     with its own TBB threads and LatencyCache) until about
//     exchange_interval_s has passed or its queue is empty, then joins the
//     exchange. A first all-gather carries each rank's finished chunks, the
//     iteration times of its top-K (with a key per skeleton), and stop and
//     failure flags. From them every rank computes the job's K-th best
//     over distinct skeletons and tightens its incumbent with it: K
//     skeletons are known to be at least that fast, so nothing slower can
//     enter the final top-K. If another round
//     follows, a second all-gather carries the latency-cache entries each
//     rank computed since the last exchange, imported by the others as
//     peer entries (the last round skips it: nobody would use them). A
//     rank that has run out of work waits for the exchange without
//     spinning, and there takes over every other chunk of the queue of the
//     rank with the most work left; every rank applies the same rule to the
//     same gathered data, so the queues stay agreed without further
//     messages. Ranks with nothing left keep joining exchanges until every
//     queue is empty.
//  3. Rank 0 gathers each rank's top-K and merges them (merge_top_k). The
//     bound only ever skips skeletons that cannot enter the final top-K
//     and chunks are searched whole, so the merged list is the exact top-K
//     in canonical order: the same as run_search's.
// Checkpoints (checkpoint.hpp) are written by rank 0 at an exchange once
// checkpoint_interval_s has passed, and at the end; a search started with
// an existing checkpoint of the same inputs restores its finished chunks,
// plans and cache and searches only the rest.
//
// Failures: an error while loading a checkpoint or setting up, on any
// rank, is agreed through MpiSession::first_failure and returned in
// DistributedResult::failure on every rank. An exception while a rank
// searches its chunks is reported at the next exchange, which every rank
// reaches, and ends the search on all of them the same way. An exception
// inside a collective aborts the job (MpiSession::abort) with its message.
//
// Strategies other than autohaap (baselines) run on rank 0 alone through
// run_search; the other ranks wait. With mpi == nullptr the same driver
// runs in this one process, without MPI (for --checkpoint without a
// launcher).
//
// Thread safety: call from the thread that owns the MpiSession. Progress
// and notes are called on rank 0 only, from that thread.
// Cost: initialization once per rank, then per round a small all-gather and
// one whose size is the round's new cache entries (about 150 bytes each;
// shipping and importing an entry costs about as much as computing it
// for the built-in transformer models, so exchange_cache pays off only
// where entries are dear, e.g. long generic layer lists); a checkpoint
// gathers K plans per rank and writes the whole cache.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/dist/mpi_session.hpp"
#include "autohaap/dist/rank_report.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap::dist {

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

struct DistributedOptions {
  // strategy, threads (per rank), top_k, time_limit_s, cancel; progress is
  // called on rank 0 after each exchange with the job's totals.
  SearchOptions search;
  double exchange_interval_s = 0.1;
  bool exchange_cache = true;         // false: ranks exchange bounds only
  std::string checkpoint_path;        // empty: no checkpoint
  double checkpoint_interval_s = 30;
  int chunks_per_rank = 64;           // granularity of shares and rebalancing
  std::function<void(const std::string&)> note;  // rank 0: one-line notices (resume, checkpoints)
  InjectedFailure inject_failure;                // testing only; none by default
};

struct DistributedResult {
  // Rank 0: the whole result, stats over every rank. Other ranks: only
  // result.status, enough to choose the exit code.
  SearchResult result;
  std::optional<RankFailure> failure;  // set on every rank when the search failed
  std::vector<RankReport> ranks;      // rank 0: one per rank
  int rank_count = 1;
  // Chunks of the skeleton list; restored from a checkpoint; searched here.
  std::int64_t chunks = 0;
  std::int64_t chunks_restored = 0;
  std::int64_t chunks_searched = 0;
  bool resumed = false;
  std::int64_t checkpoints_written = 0;
};

// Collective over `mpi`'s ranks (nullptr: this process alone).
DistributedResult run_distributed_search(const Problem& problem, const DistributedOptions& options,
                                         MpiSession* mpi);

}  // namespace autohaap::dist
