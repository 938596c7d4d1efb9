// SearchSynchronizer: everything the search driver (search_driver.hpp)
// shares with the other participants of one search, or with a checkpoint,
// and nothing else. The driver holds the algorithm — initialization, chunks
// searched in rounds, the bound, rebalancing, the merge — and is the same
// code for one process and for every rank of an MPI job; a synchronizer
// only moves data, as OR-Tools CP-SAT's workers share through repositories:
//  - bounds: every participant's top-K iteration times and the least lower
//    bound of the work it has left (RoundReport);
//  - cache entries computed since the last round (exchange_cache);
//  - the initialization's rounds (exchange_initialization: each
//    participant's blocks of tasks, merged alike everywhere);
//  - chunk bookkeeping: the chunk table (share_chunks), finished chunks and
//    stop and failure flags (RoundReport), the final plans and reports;
//  - checkpoints: the state to resume from (restored_initialization,
//    share_chunks) and to save (write_initialization, write_checkpoint).
// Two implementations: LocalSynchronizer (below: one participant, nothing
// to exchange, no checkpoint, errors propagate as exceptions; run_search
// uses it) and the MPI one in src/dist (the ranks of an MPI job over
// Boost.MPI collectives, and the checkpoint file; also one process with
// --checkpoint). A new exchange is a field of RoundReport (every round) or
// a new method here implemented by both, called by the driver at the same
// point on every participant.
//
// Thread safety: every method is called from the driver's thread only (the
// MPI one is collective: every participant calls it, in the same order).
// Cost: local, nothing; MPI, see dist/distributed_search.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/plan_status.hpp"
#include "autohaap/search/init_progress.hpp"
#include "autohaap/search/init_round.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_space.hpp"

namespace autohaap {

struct SearchSettings;

// Why a step failed, and on which participant (rank).
struct SearchFailure {
  int rank = 0;
  int exit_code = 1;  // ExitCode of error.hpp: 2 invalid input, 1 otherwise
  std::string message;
};

// What one participant (rank) did — its share, the work it searched, how
// its latency cache served it, and where its time went — so a user can see
// whether the ranks were balanced and whether exchanging paid off
// (`autohaap search --rank-report`, dist/rank_report.hpp).
struct RankReport {
  int rank = 0;
  int threads = 1;
  // The share first dealt to this rank: chunks and the skeletons in them.
  std::int64_t share_chunks = 0;
  std::int64_t share_skeletons = 0;
  // Chunks this rank searched to the end, and how many of them it took over
  // from a peer that still had work queued (dynamic rebalancing).
  std::int64_t chunks_done = 0;
  std::int64_t chunks_taken = 0;
  // Search phase only (after initialization).
  std::int64_t evaluated = 0;        // plans fully estimated
  std::int64_t pruned = 0;           // skeletons skipped by the bound or with no feasible split
  std::int64_t cache_hits = 0;       // hits on entries this rank computed or restored
  std::int64_t cache_peer_hits = 0;  // hits on entries peers sent
  std::int64_t cache_misses = 0;
  // Exchanges: message bytes this rank sent once (every peer receives them)
  // and the bytes it received from all peers; rounds taken part in.
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  std::int64_t rounds = 0;
  double search_s = 0;    // searching its chunks
  double exchange_s = 0;  // in collectives once every rank had arrived, merging what came back,
                          // and (rank 0) writing checkpoints
  double idle_s = 0;      // waiting for peers to reach an exchange
  double wall_s = 0;      // the whole search on this rank

  double hit_rate() const {
    const double lookups = static_cast<double>(cache_hits + cache_peer_hits + cache_misses);
    return lookups > 0 ? static_cast<double>(cache_hits + cache_peer_hits) / lookups : 0.0;
  }
};

// Every participant to every participant, at each round's exchange.
struct RoundReport {
  std::vector<std::int32_t> finished;  // chunks searched to the end this round, in queue order
  // This participant's top-K, best first: a key per plan's skeleton and its
  // iteration time. From every list each participant computes the job's
  // K-th best over distinct skeletons: the bound for pruning.
  std::vector<std::uint64_t> top_keys;
  std::vector<double> top_times;
  std::int64_t evaluated = 0;     // cumulative, search phase
  std::int64_t skipped = 0;       // cumulative: skeletons skipped by the bound
  std::int64_t no_split = 0;      // cumulative: skeletons without a feasible split
  // The least lower bound over the skeletons this participant holds and has
  // not finished (its queued chunks, the frontier of one stopped inside);
  // infinity when none. With the job's best plan, every participant
  // computes the same proven bound on the optimum, hence the same gap.
  double open_bound = std::numeric_limits<double>::infinity();
  bool stop = false;              // time limit or interrupt seen here
  bool cancelled = false;         // the interrupt (a signal to this rank): the others stop for it too
  bool checkpoint_now = false;    // rank 0 decides; everyone then joins the plan gather
  std::int32_t failure_code = 0;  // 0: none
  std::string failure;            // message when failure_code != 0
};

// Rank 0 to every participant, at the end: how the search ended.
struct Outcome {
  PlanStatus status = PlanStatus::infeasible;
  std::int32_t failure_code = 0;
  std::string failure;
};

// The chunk bookkeeping of a search, as shared at its start and saved in a
// checkpoint: the chunks (chunk c holds positions [chunk_end[c-1],
// chunk_end[c]) of the skeleton list), which are done, and what the done
// ones gave.
struct SearchState {
  std::vector<std::uint64_t> chunk_end;
  std::vector<std::uint8_t> chunk_done;  // per chunk: 1 when searched to the end
  bool resumed = false;                  // restored from a checkpoint
  std::vector<Plan> top;                 // best plans of the done chunks, canonical order
  std::int64_t evaluated = 0;            // search-phase totals of the done chunks, all ranks
  PruneReport pruned;                    // search-phase skips so far (bound, no split)
  CacheDelta cache;                      // latency-cache entries (checkpoints)
};

class SearchSynchronizer {
 public:
  virtual ~SearchSynchronizer() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // --- agreement --------------------------------------------------------
  // Runs `step` here; every participant learns the failure of the lowest
  // failing one (InputError: exit code 2; other exceptions: 1), or that
  // none failed.
  virtual std::optional<SearchFailure> agree(const std::function<void()>& step) = 0;
  // Runs `step` here alone; its failure is returned, for the next exchange
  // to report everywhere.
  virtual std::optional<SearchFailure> attempt(const std::function<void()>& step) = 0;
  // Whether any participant passed true (e.g. saw a stop).
  virtual bool any(bool mine) = 0;
  // Blocks until every participant has called it; the seconds waited.
  virtual double wait_for_all() = 0;
  // Ends the search on every participant at once, for an error inside an
  // exchange, which the others could wait on for ever.
  [[noreturn]] virtual void abort(const std::string& message, int exit_code) = 0;

  // --- chunk bookkeeping and checkpoints ---------------------------------
  // Refuses (InputError) settings this synchronizer cannot honour.
  virtual void validate(const SearchSettings& /*settings*/) const {}
  // Before the initialization: reads what a previous run left, if anything
  // (a damaged or foreign checkpoint: InputError), its plans checked against
  // `searched`, the problem the search runs on (identical groups merged and
  // groups halved: the coordinates the plans it saves are in). Called
  // inside agree().
  virtual void open(const Problem& /*searched*/) {}
  // After open(), on every participant (collective): the progress of an
  // initialization the checkpoint saved (rank 0 read it; a search-phase
  // checkpoint's is the whole initialization), or none.
  virtual std::optional<InitProgress> restored_initialization() { return std::nullopt; }
  // Rank 0 alone, while the initialization runs (every participant's is
  // the same): saves its progress as the checkpoint; whether it was
  // written (one that fails is said, and the search goes on).
  virtual bool write_initialization(const InitProgress& /*progress*/) { return false; }
  // Rank 0 alone, once the initialization's last round is walked
  // (PrepareOptions::walked): kept for every checkpoint of the search that
  // follows, which restored_initialization() then returns, so a resumed
  // search does not walk the initialization again.
  virtual void keep_walked_initialization(InitProgress /*progress*/) {}
  // Once a round of the initialization, on every participant
  // (collective): every participant's round, indexed by rank
  // (PrepareOptions::exchange).
  virtual std::vector<InitRound> exchange_initialization(const InitRound& mine) = 0;
  // After the initialization, on every participant, inside agree():
  // refuses a restored state made for another skeleton list.
  virtual void check_list(const std::vector<Skeleton>& /*skeletons*/) {}
  // The chunks every participant searches: rank 0's cut of `skeletons`
  // into `count` chunks, or a restored state (chunk_done, plans, counters,
  // cache filled, resumed set). A failure is returned on every one.
  virtual std::optional<SearchFailure> share_chunks(const std::vector<Skeleton>& skeletons, std::size_t count,
                                                    SearchState& state) = 0;
  // A round's exchange: every participant's report, indexed by rank.
  virtual std::vector<RoundReport> exchange_round(const RoundReport& mine) = 0;
  // Cache entries computed here since `mark` to every peer, and theirs
  // imported as peer entries; advances `mark`.
  virtual void exchange_cache(LatencyCache& cache, std::uint64_t& mark) = 0;
  // Every participant's plans, indexed by rank, on rank 0 (empty elsewhere).
  virtual std::vector<std::vector<Plan>> gather_plans(const std::vector<Plan>& mine) = 0;
  virtual std::vector<RankReport> gather_reports(const RankReport& mine) = 0;
  // Rank 0's outcome to every participant.
  virtual void share_outcome(Outcome& outcome) = 0;
  // Seconds between checkpoints; 0: none kept.
  virtual double checkpoint_interval_s() const { return 0; }
  // Rank 0: saves `state`; whether it was written (one that fails is said,
  // the MPI synchronizer's note, and the search goes on). `final`: the last.
  virtual bool write_checkpoint(const SearchState& /*state*/, bool /*final*/) { return false; }
  // Message bytes this participant sent and received.
  virtual std::int64_t bytes_sent() const { return 0; }
  virtual std::int64_t bytes_received() const { return 0; }
};

// One participant: nothing to exchange, no checkpoint; `agree` and
// `attempt` run their step and let an exception propagate to the caller.
class LocalSynchronizer final : public SearchSynchronizer {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::optional<SearchFailure> agree(const std::function<void()>& step) override;
  std::optional<SearchFailure> attempt(const std::function<void()>& step) override;
  bool any(bool mine) override { return mine; }
  double wait_for_all() override { return 0; }
  [[noreturn]] void abort(const std::string& message, int exit_code) override;
  std::optional<SearchFailure> share_chunks(const std::vector<Skeleton>& skeletons, std::size_t count,
                                            SearchState& state) override;
  std::vector<InitRound> exchange_initialization(const InitRound& mine) override { return {mine}; }
  std::vector<RoundReport> exchange_round(const RoundReport& mine) override { return {mine}; }
  void exchange_cache(LatencyCache& /*cache*/, std::uint64_t& /*mark*/) override {}
  std::vector<std::vector<Plan>> gather_plans(const std::vector<Plan>& mine) override { return {mine}; }
  std::vector<RankReport> gather_reports(const RankReport& mine) override { return {mine}; }
  void share_outcome(Outcome& /*outcome*/) override {}
};

}  // namespace autohaap
