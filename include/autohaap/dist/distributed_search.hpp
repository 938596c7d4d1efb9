// DistributedSearch: the AutoHAAP search over the ranks of an MPI job
// (DESIGN.md "Distributed search (MPI)"), giving the plans run_search
// gives on one process, whatever the rank and thread counts. It is the one
// search driver (search/search_driver.hpp, which says how the search runs)
// with the MPI synchronizer (src/dist/mpi_synchronizer.hpp), which moves
// only data between the ranks and to the checkpoint:
//  - at start-up: one flag per rank for a failure (MpiSession::first_failure
//    rules) and for a stop during initialization (one all-reduce); then
//    rank 0's chunk table, broadcast with a digest of its skeleton list and
//    a fingerprint of the inputs, which every rank checks against its own;
//  - per round: a first all-gather of each rank's finished chunks, top-K
//    times with a key per skeleton, stop and failure flags; if another
//    round follows, a second one of the latency-cache entries each rank
//    computed since the last exchange, imported by the others as peer
//    entries (where exchange_cache is on). A rank out of work waits for
//    the exchange without spinning;
//  - at the end: each rank's top-K and report gathered on rank 0, and the
//    outcome broadcast.
// Checkpoints (checkpoint.hpp) are written by rank 0 at an exchange once
// checkpoint_interval_s has passed, and at the end; a search started with
// an existing checkpoint of the same inputs restores its finished chunks,
// plans and cache and searches only the rest. During the initialization
// (whose rounds the ranks share, every rank holding the same state after
// each) rank 0 saves its progress after a round of tasks once the interval
// has passed, and a rerun goes on from there (search/init_progress.hpp).
//
// Failures: an error while loading a checkpoint or setting up, on any
// rank, is returned in DistributedResult::failure on every rank. An
// exception while a rank searches its chunks is reported at the next
// exchange, which every rank reaches, and ends the search on all of them
// the same way. An exception inside a collective aborts the job
// (MpiSession::abort) with its message.
//
// With mpi == nullptr the same driver and synchronizer run in this one
// process (for --checkpoint without a launcher).
//
// Thread safety: call from the thread that owns the MpiSession. Progress
// and notes are called on rank 0 only, from that thread.
// Cost: the initialization shared (each rank balances the probes, then
// takes its share of the dives, of the walk's blocks and of the kept
// skeletons' bounds, each share exchanged), then per round a small all-gather and
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
#include "autohaap/search/search_driver.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap::dist {

using autohaap::InjectedFailure;

// DistributedSettings (search_options.hpp): the settings beyond the search's
// own, with the option table they follow.

// Throws InputError naming the first setting out of range (intervals not
// > 0, a checkpoint with a strategy other than autohaap), keyed as
// validate(SearchSettings) is: validate(SearchConfig) of the two.
void validate(const DistributedSettings& settings, const SearchSettings& search);

struct DistributedOptions : DistributedSettings {
  // strategy, threads (per rank), top_k, time_limit_s, cancel; progress is
  // called on rank 0 after each exchange with the job's totals.
  SearchOptions search;
  std::function<void(const std::string&)> note;  // rank 0: one-line notices (resume, checkpoints)
  InjectedFailure inject_failure;                // testing only; none by default
};

// Rank 0: the whole result, stats over every rank; other ranks: only
// result.status (search_driver.hpp).
using DistributedResult = DriverResult;

// Collective over `mpi`'s ranks (nullptr: this process alone).
DistributedResult run_distributed_search(const Problem& problem, const DistributedOptions& options,
                                         MpiSession* mpi);

}  // namespace autohaap::dist
