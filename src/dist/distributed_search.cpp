#include "autohaap/dist/distributed_search.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/dist/checkpoint.hpp"
#include "autohaap/error.hpp"
#include "autohaap/search/parallel.hpp"
#include "messages.hpp"
#include "mpi_session_impl.hpp"
#include "rank_group.hpp"

namespace autohaap::dist {
namespace {

// After each exchange every rank runs this on the same queues, so they
// stay agreed without messages: each rank with nothing queued takes every
// other chunk of the queue with the most estimated work left (ties: the
// lowest rank). Alternate chunks, not the tail, so the taker also gets
// promising ones and both queues stay in lower-bound order.
void rebalance(std::vector<std::deque<int>>& queues, const std::vector<SkeletonChunk>& chunks,
               std::vector<std::int64_t>& taken) {
  const int n = static_cast<int>(queues.size());
  for (int taker = 0; taker < n; ++taker) {
    if (!queues[taker].empty()) continue;
    int donor = -1;
    double most = 0;
    for (int r = 0; r < n; ++r) {
      if (queues[r].size() < 2) continue;
      double work = 0;
      for (int c : queues[r]) work += chunks[c].work;
      if (work > most) {
        most = work;
        donor = r;
      }
    }
    if (donor < 0) return;
    std::deque<int> keep, give;
    for (std::size_t i = 0; i < queues[donor].size(); ++i) (i % 2 ? give : keep).push_back(queues[donor][i]);
    taken[taker] += static_cast<std::int64_t>(give.size());
    queues[donor] = std::move(keep);
    queues[taker] = std::move(give);
  }
}

// Which skeleton a plan is on (what same_skeleton compares: B and every
// stage's placement and degrees), hashed. Two skeletons that collide only
// merge in the count below, which makes the bound looser, never unsound.
std::uint64_t skeleton_key(const Plan& plan) {
  std::vector<std::int32_t> fields = {plan.micro_batch_size, static_cast<std::int32_t>(plan.stages.size())};
  for (const StagePlan& s : plan.stages) fields.insert(fields.end(), {s.group, s.first_gpu, s.gpus, s.tp, s.dp});
  return fnv1a64(std::string_view(reinterpret_cast<const char*>(fields.data()), fields.size() * sizeof fields[0]));
}

// The K-th best iteration time over the distinct skeletons of every rank's
// top-K: K different skeletons are known to be at least that fast, so no
// plan slower than it can enter the final top-K. Tighter than the minimum
// of the ranks' own K-th bests (each rank holds only part of the top-K);
// distinct, because a resumed checkpoint's plans are on every rank. Infinity while fewer
// than K are known.
double job_kth_best(const std::vector<RoundReport>& reports, int k) {
  std::unordered_map<std::uint64_t, double> best;
  for (const RoundReport& r : reports) {
    for (std::size_t i = 0; i < r.top_keys.size() && i < r.top_times.size(); ++i) {
      auto [it, added] = best.emplace(r.top_keys[i], r.top_times[i]);
      if (!added) it->second = std::min(it->second, r.top_times[i]);
    }
  }
  if (static_cast<int>(best.size()) < k) return std::numeric_limits<double>::infinity();
  std::vector<double> times;
  times.reserve(best.size());
  for (const auto& [key, time] : best) times.push_back(time);
  std::nth_element(times.begin(), times.begin() + (k - 1), times.end());
  return times[k - 1];
}

class Driver {
 public:
  Driver(const Problem& problem, const DistributedOptions& options, RankGroup& group)
      : problem_(problem), options_(options), group_(group), cost_(problem), memory_(cost_),
        incumbent_(options.search.top_k), hook_(options.inject_failure),
        threads_(options.search.threads > 0 ? options.search.threads : parallel::hardware_threads()),
        stop_(StopCondition::of(options.search.cancel, options.search.time_limit_s, clock_)) {}

  DistributedResult run() {
    DistributedResult out;
    out.rank_count = group_.size();
    if (auto failure = group_.first_failure([&] { validate(); })) {
      out.failure = failure;
      return out;
    }
    if (options_.search.strategy != "autohaap") return run_baseline(out);
    if (!set_up(out)) return out;
    if (!stopped_) search_rounds(out);
    if (!out.failure) finish(out);
    return out;
  }

 private:
  bool root() const { return group_.rank() == 0; }
  bool checkpointing() const { return !options_.checkpoint_path.empty(); }
  void note(const std::string& line) const {
    if (root() && options_.note) options_.note(line);
  }

  void validate() const {
    const SearchOptions& s = options_.search;
    autohaap::validate(s);
    if (!(options_.exchange_interval_s > 0))
      throw InputError("", "exchange interval", std::to_string(options_.exchange_interval_s), "seconds > 0");
    if (!(options_.checkpoint_interval_s > 0))
      throw InputError("", "checkpoint interval", std::to_string(options_.checkpoint_interval_s), "seconds > 0");
    if (checkpointing() && s.strategy != "autohaap")
      throw InputError("", "checkpoint", options_.checkpoint_path,
                       "checkpoints with strategy autohaap only (the baselines are not resumable)");
  }

  // Baselines are single-process algorithms: rank 0 runs them, the others
  // wait (without spinning) for the outcome.
  DistributedResult& run_baseline(DistributedResult& out) {
    std::optional<RankFailure> failure;
    if (root()) {
      failure = try_step([&] { out.result = run_search(problem_, options_.search); });
    }
    group_.wait_for_all();
    Outcome outcome;
    if (root()) {
      outcome.status = failure ? PlanStatus::failed : out.result.status;
      if (failure) {
        outcome.failure_code = failure->exit_code;
        outcome.failure = failure->message;
      }
    }
    group_.broadcast(outcome, 0);
    apply_outcome(outcome, out);
    return out;
  }

  void apply_outcome(const Outcome& outcome, DistributedResult& out) const {
    out.result.status = outcome.status;
    if (outcome.failure_code != 0) out.failure = RankFailure{0, outcome.failure_code, outcome.failure};
  }

  // Initialization on every rank, then rank 0's share table (and
  // checkpoint) to all; every failure here is agreed before searching, and
  // so is a stop (time limit or signal) during initialization: then
  // stopped_ is set and the probes are the best plans so far, as in
  // run_search. Returns false on a failure.
  bool set_up(DistributedResult& out) {
    std::optional<SearchCheckpoint> restored;
    const std::string inputs = describe_search(problem_, options_.search.strategy, options_.search.top_k);
    fingerprint_ = search_fingerprint(problem_, cost_.parameters(), options_.search.strategy, options_.search.top_k);
    // A damaged or foreign checkpoint is refused before the initialization,
    // which may take minutes; its skeleton list is compared after it.
    auto read = [&] {
      if (root() && checkpointing()) restored = read_checkpoint(options_.checkpoint_path, fingerprint_, inputs);
    };
    if (auto failure = group_.first_failure(read)) {
      out.failure = failure;
      return false;
    }
    auto local = [&] {
      if (hook_.fires(group_.rank(), InjectedFailure::Where::input))
        throw InputError("command line", "--inject-failure", std::to_string(hook_.rank) + ":input",
                         "no failure (a test asked this rank to fail while loading inputs)");
      parallel::with_threads(threads_, [&] {
        // Same options as run_search, so both keep the same list; no seed
        // plans, as there: the first skeletons balanced are the incumbent.
        PrepareOptions prepare;
        prepare.top_k = options_.search.top_k;
        prepare.max_skeletons = options_.search.max_skeletons;
        prepare.stop = stop_;
        prepared_ = prepare_search(cost_, memory_, cache_, prepare);
      });
      digest_ = skeleton_list_digest(prepared_.skeletons);
      // A stopped initialization holds part of the list: nothing to compare.
      if (restored && !prepared_.stopped && (restored->skeletons != prepared_.skeletons.size() || restored->list_digest != digest_))
        throw InputError(options_.checkpoint_path, "checkpoint",
                         "a checkpoint whose skeleton list differs from this search's (another autohaap version?)",
                         "a checkpoint written by this version for this search; remove the file or choose "
                         "another --checkpoint path");
    };
    if (auto failure = group_.first_failure(local)) {
      out.failure = failure;
      return false;
    }
    // What initialization cost (rank 0's, as run_search counts it); the
    // rank reports count the search phase alone.
    if (root()) prepare_counters_ = cache_.counters();
    cache_.reset_counters();
    if (group_.any(prepared_.stopped)) {
      stopped_ = true;
      plans_gathered_ = true;  // rank 0's probes are the answer: nothing to gather
      if (root()) {
        Incumbent best(options_.search.top_k);
        for (const Plan& plan : prepared_.probes) best.offer(plan);
        final_top_ = best.plans();
        init_evaluated_ = static_cast<std::int64_t>(prepared_.probes.size());
      }
      return true;
    }

    ShareTable table;
    if (root()) {
      table.fingerprint = fingerprint_;
      table.list_digest = digest_;
      table.skeletons = prepared_.skeletons.size();
      table.resumed = restored.has_value();
      const std::size_t count = static_cast<std::size_t>(std::max(1, options_.chunks_per_rank)) * group_.size();
      // A resumed search keeps the chunks of the run that wrote the
      // checkpoint, whatever the rank count is now.
      if (restored) {
        table.chunk_end = restored->chunk_end;
      } else {
        for (const SkeletonChunk& c : cut_into_chunks(prepared_.skeletons, count)) table.chunk_end.push_back(c.end);
      }
    }
    group_.broadcast(table, 0);
    auto agree = [&] {
      if (table.fingerprint != fingerprint_)
        throw InputError("", "inputs", "rank " + std::to_string(group_.rank()) + "'s inputs differ from rank 0's",
                         "the same model, cluster, training and options on every rank");
      if (table.list_digest != digest_ || table.skeletons != prepared_.skeletons.size())
        throw std::runtime_error("rank " + std::to_string(group_.rank()) +
                                 " initialized another skeleton list than rank 0 (mixed autohaap builds in one job?)");
      std::uint64_t previous = 0;
      for (std::uint64_t end : table.chunk_end) {
        if (end <= previous || end > table.skeletons)
          throw InputError(options_.checkpoint_path, "checkpoint", "chunk boundaries that do not fit the list",
                           "a checkpoint written by this search");
        previous = end;
      }
      if (!table.chunk_end.empty() && previous != table.skeletons)
        throw InputError(options_.checkpoint_path, "checkpoint", "chunks that do not cover the list",
                         "a checkpoint written by this search");
    };
    if (auto failure = group_.first_failure(agree)) {
      out.failure = failure;
      return false;
    }

    chunks_ = chunks_ending_at(prepared_.skeletons, table.chunk_end);
    done_.assign(chunks_.size(), 0);
    out.chunks = static_cast<std::int64_t>(chunks_.size());

    if (table.resumed) {
      CerealPayload<SearchCheckpoint> payload;
      if (root()) payload.value = std::move(*restored);
      group_.broadcast(payload, 0);
      restored_ = std::move(payload.value);
      done_ = restored_.chunk_done;
      for (const Plan& plan : restored_.top) incumbent_.offer(plan);
      // Entries restored from disk count as this rank's own hits.
      cache_.import(restored_.cache, false);
      restored_.cache = CacheDelta{};
      out.resumed = true;
      out.chunks_restored = restored_.chunks_done();
      note("resuming from checkpoint " + options_.checkpoint_path + ": " + std::to_string(out.chunks_restored) +
           " of " + std::to_string(out.chunks) + " chunks restored, " +
           std::to_string(out.chunks - out.chunks_restored) + " to search");
    }

    // Deal the unfinished chunks round-robin: rank r starts with the r-th
    // most promising one.
    queues_.assign(group_.size(), {});
    taken_.assign(group_.size(), 0);
    int next = 0;
    for (std::size_t c = 0; c < chunks_.size(); ++c) {
      if (!done_[c]) queues_[next++ % group_.size()].push_back(static_cast<int>(c));
    }
    RankReport& me = report_;
    me.rank = group_.rank();
    me.threads = threads_;
    me.share_chunks = static_cast<std::int64_t>(queues_[group_.rank()].size());
    for (int c : queues_[group_.rank()])
      me.share_skeletons += static_cast<std::int64_t>(chunks_[c].end - chunks_[c].begin);
    mark_ = cache_.mark();
    last_checkpoint_s_ = clock_.seconds();
    return true;
  }

  // Searches this rank's queue from the front until the interval is used
  // up; records finished chunks in `mine`. Does not change the queues:
  // every rank applies every rank's finished list after the exchange.
  void search_own_queue(RoundReport& mine, double round_start) {
    const std::deque<int>& queue = queues_[group_.rank()];
    const bool fail_here = hook_.fires(group_.rank(), InjectedFailure::Where::search);
    if (fail_here && queue.empty()) throw std::runtime_error("test failure injected on this rank while searching");
    ShareControl control;
    control.stop = stop_;
    parallel::with_threads(threads_, [&] {
      std::vector<std::size_t> positions;
      for (int c : queue) {
        positions.resize(chunks_[c].end - chunks_[c].begin);
        std::iota(positions.begin(), positions.end(), chunks_[c].begin);
        const ShareOutcome outcome =
            search_share(cost_, memory_, cache_, prepared_.skeletons, positions, incumbent_, control);
        evaluated_ += outcome.evaluated;
        skipped_ += outcome.pruned.count(PruneRule::lower_bound_above_best);
        no_split_ += outcome.pruned.count(PruneRule::no_feasible_split);
        if (outcome.stopped) {
          mine.stop = true;
          return;
        }
        mine.finished.push_back(c);
        if (fail_here) throw std::runtime_error("test failure injected on this rank while searching");
        if (clock_.seconds() - round_start >= options_.exchange_interval_s) return;
      }
    });
  }

  void search_rounds(DistributedResult& out) {
    const int me = group_.rank();
    std::optional<RankFailure> failure;
    while (true) {
      RoundReport mine;
      const double round_start = clock_.seconds();
      if (!failure) {
        failure = try_step([&] { search_own_queue(mine, round_start); }, me);
        if (failure && group_.size() > 1) failure->message = "rank " + std::to_string(me) + ": " + failure->message;
      }
      report_.search_s += clock_.seconds() - round_start;
      if (!failure && pending_failure_) failure = std::exchange(pending_failure_, std::nullopt);
      mine.stop = mine.stop || stop_();

      // The exchange. Every rank gets here each round, finished or not;
      // an exception inside it cannot be agreed on, so it ends the job.
      try {
        report_.idle_s += group_.wait_for_all();
        const double exchange_start = clock_.seconds();
        if (hook_.fires(me, InjectedFailure::Where::exchange))
          throw std::runtime_error("test failure injected on this rank inside an exchange");
        if (failure) {
          mine.failure_code = failure->exit_code;
          mine.failure = failure->message;
        }
        // Alone, the incumbent's own bound is already the job's.
        if (group_.size() > 1) {
          for (const Plan& plan : incumbent_.plans()) {
            mine.top_keys.push_back(skeleton_key(plan));
            mine.top_times.push_back(plan.predicted.iteration_time_s);
          }
        }
        mine.evaluated = evaluated_;
        mine.skipped = skipped_;
        mine.no_split = no_split_;
        mine.checkpoint_now =
            root() && checkpointing() && exchange_start - last_checkpoint_s_ >= options_.checkpoint_interval_s;
        reports_ = group_.all_gather(mine);
        ++report_.rounds;

        bool stop = false;
        for (int r = 0; r < group_.size(); ++r) {
          const RoundReport& theirs = reports_[r];
          if (theirs.failure_code != 0 && !out.failure)
            out.failure = RankFailure{r, theirs.failure_code, theirs.failure};
          for (int c : theirs.finished) {
            if (queues_[r].empty() || queues_[r].front() != c)
              throw std::logic_error("rank " + std::to_string(r) + " finished a chunk out of its queue's order");
            queues_[r].pop_front();
            done_[c] = 1;
            if (r == me) ++report_.chunks_done;
          }
          stop = stop || theirs.stop;
        }
        const double bound = job_kth_best(reports_, options_.search.top_k);
        incumbent_.tighten(bound);
        if (out.failure) return;
        const bool all_done = std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q.empty(); });
        const bool last = stop || all_done;
        // Entries help only a round still to come: the last would ship
        // them for nothing.
        if (!last && options_.exchange_cache && group_.size() > 1) exchange_cache_entries();
        if (checkpointing() && (reports_[0].checkpoint_now || last)) save_checkpoint(last, out);
        if (last) {
          // Stopped with work left: the plans are the best so far.
          stopped_ = stop && !all_done;
          report_.exchange_s += clock_.seconds() - exchange_start;
          return;
        }
        rebalance(queues_, chunks_, taken_);
        report_progress(incumbent_.bound());
        report_.exchange_s += clock_.seconds() - exchange_start;
      } catch (const std::exception& e) {
        const int code = dynamic_cast<const InputError*>(&e) ? kExitInvalidInput : kExitFailure;
        group_.abort("rank " + std::to_string(me) + ": " + e.what(), code);
      }
    }
  }

  // Collective: every rank's entries computed since the last exchange, to
  // every other rank, imported as peer entries.
  void exchange_cache_entries() {
    CacheEntries mine{cache_.delta_since(mark_)};
    mark_ = cache_.mark();
    const std::vector<CacheEntries> all = group_.all_gather(mine);
    for (int r = 0; r < group_.size(); ++r) {
      if (r != group_.rank() && !all[r].value.empty()) cache_.import(all[r].value, true);
    }
  }

  // Totals over every rank, from the latest exchange (search phase) plus
  // what a restored checkpoint had done.
  std::int64_t total_evaluated() const {
    std::int64_t n = restored_.evaluated;
    for (const RoundReport& r : reports_) n += r.evaluated;
    return n;
  }
  PruneReport total_search_prune() const {
    PruneReport p = restored_.pruned;
    for (const RoundReport& r : reports_) {
      p.add(PruneRule::lower_bound_above_best, r.skipped);
      p.add(PruneRule::no_feasible_split, r.no_split);
    }
    return p;
  }

  void report_progress(double bound) const {
    if (!root() || !options_.search.progress) return;
    SearchProgress p;
    for (std::size_t c = 0; c < chunks_.size(); ++c)
      if (done_[c]) p.done += static_cast<std::int64_t>(chunks_[c].end - chunks_[c].begin);
    p.total = static_cast<std::int64_t>(prepared_.skeletons.size());
    p.evaluated = init_evaluated_ + total_evaluated();
    p.pruned = prepared_.prune.removed_initially() + total_search_prune().skipped_in_search();
    p.best_iteration_s = bound;
    p.elapsed_s = clock_.seconds();
    options_.search.progress(p);
  }

  // Collective: rank 0 gathers every rank's top-K and writes the state. A
  // write error is not fatal at once: it is reported at the next exchange
  // (or in the outcome) so every rank ends cleanly.
  void save_checkpoint(bool last, DistributedResult& out) {
    std::vector<PlanList> lists = group_.gather(PlanList{incumbent_.plans()}, 0);
    // Every rank must know the last gather happened, or finish() would
    // gather again on some ranks only.
    plans_gathered_ = last;
    if (!root()) return;
    std::vector<std::vector<Plan>> plans;
    for (PlanList& l : lists) plans.push_back(std::move(l.value));
    SearchCheckpoint state;
    state.fingerprint = fingerprint_;
    state.inputs = describe_search(problem_, options_.search.strategy, options_.search.top_k);
    state.skeletons = prepared_.skeletons.size();
    state.list_digest = digest_;
    for (const SkeletonChunk& c : chunks_) state.chunk_end.push_back(c.end);
    state.chunk_done = done_;
    state.top = merge_top_k(plans, options_.search.top_k);
    state.evaluated = total_evaluated();
    state.pruned = total_search_prune();
    state.cache = cache_.snapshot();
    if (last) final_top_ = state.top;
    const std::optional<RankFailure> failure =
        try_step([&] { write_checkpoint(options_.checkpoint_path, state); });
    last_checkpoint_s_ = clock_.seconds();
    if (failure) {
      pending_failure_ = failure;
      return;
    }
    ++out.checkpoints_written;
    if (last)
      note("checkpoint written to " + options_.checkpoint_path + ": " + std::to_string(state.chunks_done()) + " of " +
           std::to_string(state.chunk_done.size()) + " chunks done");
  }

  void finish(DistributedResult& out) {
    try {
      if (!plans_gathered_) {
        std::vector<PlanList> lists = group_.gather(PlanList{incumbent_.plans()}, 0);
        if (root()) {
          std::vector<std::vector<Plan>> plans;
          for (PlanList& l : lists) plans.push_back(std::move(l.value));
          final_top_ = merge_top_k(plans, options_.search.top_k);
        }
      }
      const CacheCounters counters = cache_.counters();
      report_.chunks_taken = taken_.empty() ? 0 : taken_[group_.rank()];
      report_.evaluated = evaluated_;
      report_.pruned = skipped_ + no_split_;
      report_.cache_hits = counters.hits;
      report_.cache_peer_hits = counters.peer_hits;
      report_.cache_misses = counters.misses;
      report_.bytes_sent = group_.bytes_sent();
      report_.bytes_received = group_.bytes_received();
      report_.wall_s = clock_.seconds();
      out.ranks = group_.gather(report_, 0);

      std::int64_t searched = 0;
      for (std::uint8_t d : done_) searched += d;
      out.chunks_searched = searched - out.chunks_restored;

      Outcome outcome;
      if (root()) build_result(out, outcome);
      group_.broadcast(outcome, 0);
      apply_outcome(outcome, out);
    } catch (const std::exception& e) {
      group_.abort("rank " + std::to_string(group_.rank()) + ": " + e.what(), kExitFailure);
    }
  }

  void build_result(DistributedResult& out, Outcome& outcome) {
    SearchResult& result = out.result;
    result.top = std::move(*final_top_);
    result.prune = prepared_.prune;
    result.prune.merge(total_search_prune());
    result.candidates = result.prune.considered;
    SearchStats& stats = result.stats;
    stats.strategy = options_.search.strategy;
    stats.evaluated = init_evaluated_ + total_evaluated();
    stats.pruned = result.prune.removed_initially() + result.prune.skipped_in_search();
    stats.cache_hits = prepare_counters_.hits + prepare_counters_.peer_hits;
    stats.cache_misses = prepare_counters_.misses;
    for (const RankReport& r : out.ranks) {
      stats.cache_hits += r.cache_hits + r.cache_peer_hits;
      stats.cache_misses += r.cache_misses;
    }
    result.stage_estimates = stats.cache_misses;
    stats.ranks = group_.size();
    stats.threads = threads_;
    stats.wall_s = clock_.seconds();
    for (Plan& plan : result.top) plan.search = stats;
    result.status = search_status(!result.top.empty(), stopped_);
    if (result.top.empty()) {
      result.infeasible_reason = stopped_ ? "the search stopped (time limit or interrupt) before any plan "
                                                    "that fits memory was found"
                                                  : infeasible_reason(cost_, result.prune);
    }
    report_progress(incumbent_.bound());
    outcome.status = result.status;
    if (pending_failure_) {
      outcome.failure_code = pending_failure_->exit_code;
      outcome.failure = pending_failure_->message;
    }
  }

  const Problem& problem_;
  const DistributedOptions& options_;
  RankGroup& group_;
  const CostModel cost_;
  const MemoryPruner memory_;
  LatencyCache cache_;
  Incumbent incumbent_;
  const InjectedFailure hook_;
  const int threads_;
  Stopwatch clock_;
  const StopCondition stop_;  // the search's time limit and cancel flag, on clock_

  PreparedSearch prepared_;
  std::uint64_t fingerprint_ = 0;
  std::uint64_t digest_ = 0;
  std::int64_t init_evaluated_ = 0;  // rank 0: the probes' plans, when initialization stopped
  CacheCounters prepare_counters_;    // rank 0: initialization's cache use
  SearchCheckpoint restored_;         // counters and plans of a resumed run (cache dropped once imported)

  std::vector<SkeletonChunk> chunks_;
  std::vector<std::uint8_t> done_;
  std::vector<std::deque<int>> queues_;  // per rank, chunks not yet started; identical on every rank
  std::vector<std::int64_t> taken_;      // per rank, chunks taken over from peers
  std::vector<RoundReport> reports_;     // the latest exchange's
  std::uint64_t mark_ = 0;
  double last_checkpoint_s_ = 0;
  std::optional<RankFailure> pending_failure_;
  bool stopped_ = false;  // initialization, or the rounds with chunks left, ended on a stop
  bool plans_gathered_ = false;                 // the last checkpoint gathered the final plans (every rank)
  std::optional<std::vector<Plan>> final_top_;  // rank 0: the merged final plans

  // This rank's search-phase totals.
  std::int64_t evaluated_ = 0, skipped_ = 0, no_split_ = 0;
  RankReport report_;
};

}  // namespace

DistributedResult run_distributed_search(const Problem& problem, const DistributedOptions& options,
                                         MpiSession* mpi) {
  // A job of one rank has no one to exchange with: it runs as one process.
  RankGroup group = mpi && mpi->size() > 1 ? RankGroup(mpi->impl().world) : RankGroup();
  Driver driver(problem, options, group);
  return driver.run();
}

}  // namespace autohaap::dist
