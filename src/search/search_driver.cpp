#include "autohaap/search/search_driver.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/error.hpp"
#include "autohaap/search/cluster_merge.hpp"
#include "autohaap/search/cluster_split.hpp"
#include "autohaap/search/incumbent.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/search/stop_condition.hpp"
#include "autohaap/units.hpp"
#include "strategies.hpp"

namespace autohaap {
namespace {

// After each exchange every participant runs this on the same queues, so
// they stay agreed without messages: each one with nothing queued takes
// every other chunk of the queue with the most estimated work left (ties:
// the lowest rank). Alternate chunks, not the tail, so the taker also gets
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

// The K-th best iteration time over the distinct skeletons of every
// participant's top-K: K different skeletons are known to be at least that
// fast, so no plan slower than it can enter the final top-K. Tighter than
// the minimum of the participants' own K-th bests (each holds only part of
// the top-K); distinct, because a resumed checkpoint's plans are on every
// participant. Infinity while fewer than K are known.
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


// `problem` on the merged cluster (cluster_merge.hpp).
Problem merged(const Problem& problem, const ClusterMerge& merge) {
  Problem out = problem;
  out.cluster = merge.cluster;
  return out;
}

CacheCounters minus(const CacheCounters& a, const CacheCounters& b) {
  return CacheCounters{a.hits - b.hits, a.peer_hits - b.peer_hits, a.misses - b.misses, a.entries - b.entries};
}

class SearchDriver {
 public:
  SearchDriver(const Problem& problem, const SearchOptions& search, const DriverOptions& options,
               SearchSynchronizer& sync)
      : problem_(problem), search_(search), options_(options), sync_(sync),
        merge_(merge_for_search(problem.cluster, search.groups_searched_apart)),
        split_(split_groups(merged(problem, merge_))),
        cost_(split_.problem), memory_(cost_),
        cache_(search.cache ? *search.cache : own_cache_), incumbent_(search.top_k, split_.problem.cluster),
        threads_(parallel::usable_threads(search.threads)),
        stop_(StopCondition::of(search.cancel, search.time_limit_s, clock_)), progress_(search, clock_) {
    stop_.goal = &goal_;
    stop_.peer_cancel = &peer_cancel_;
  }

  DriverResult run() {
    DriverResult out;
    out.rank_count = sync_.size();
    if (auto failure = sync_.agree([&] { validate_options(); })) {
      out.failure = failure;
      return out;
    }
    if (search_.strategy != "autohaap") return run_baseline(out);
    if (!set_up(out)) return out;
    if (!stopped_) search_rounds(out);
    if (!out.failure) finish(out);
    return out;
  }

 private:
  bool root() const { return sync_.rank() == 0; }
  bool checkpointing() const { return sync_.checkpoint_interval_s() > 0; }

  void validate_options() const {
    validate(search_);
    sync_.validate(search_);
  }

  // Baselines are single-process algorithms: rank 0 runs them, the others
  // wait (without spinning) for the outcome.
  DriverResult& run_baseline(DriverResult& out) {
    std::optional<SearchFailure> failure;
    if (root()) failure = sync_.attempt([&] { out.result = run_search(problem_, search_); });
    sync_.wait_for_all();
    Outcome outcome;
    if (root()) {
      outcome.status = failure ? PlanStatus::failed : out.result.status;
      if (failure) {
        outcome.failure_code = failure->exit_code;
        outcome.failure = failure->message;
      }
    }
    sync_.share_outcome(outcome);
    apply_outcome(outcome, out);
    return out;
  }

  void apply_outcome(const Outcome& outcome, DriverResult& out) const {
    out.result.status = outcome.status;
    if (outcome.failure_code != 0) out.failure = SearchFailure{0, outcome.failure_code, outcome.failure};
  }

  // Initialization on every participant, then the chunk table (and a
  // restored state) shared; every failure here is agreed before searching,
  // and so is a stop (time limit or signal) during initialization: then
  // stopped_ is set and rank 0's probes are the best plans so far, as when
  // one process stops there. Returns false on a failure.
  bool set_up(DriverResult& out) {
    // A damaged or foreign checkpoint is refused before the initialization,
    // which may take minutes; its skeleton list is compared after it.
    if (auto failure = sync_.agree([&] { sync_.open(cost_.problem()); })) {
      out.failure = failure;
      return false;
    }
    // A checkpoint saved while initializing: every participant goes on from
    // its progress (the list it builds is the one it would have built).
    std::optional<InitProgress> resume;
    if (auto failure = sync_.agree([&] { resume = sync_.restored_initialization(); })) {
      out.failure = failure;
      return false;
    }
    bool init_checkpointed = resume.has_value();  // the file holds an initialization's progress
    out.initialization_restored = resume && resume->walked_all();
    start_counters_ = cache_.counters();
    // Agreed before the initialization, whose rounds every participant
    // must reach.
    if (auto failure = sync_.agree([&] {
          if (options_.inject_failure.fires(sync_.rank(), InjectedFailure::Where::input))
            throw InputError("command line", "--inject-failure", std::to_string(sync_.rank()) + ":input",
                             "no failure (a test asked this rank to fail while loading inputs)");
        })) {
      out.failure = failure;
      return false;
    }
    auto initialize = [&] {
      parallel::with_threads(threads_, [&] {
        PrepareOptions prepare;
        prepare.top_k = search_.top_k;
        prepare.max_skeletons = search_.max_skeletons;
        prepare.stop = stop_;
        prepare.gap = search_.gap;
        prepare.resume = resume ? &*resume : nullptr;
        // The participants share the initialization's rounds.
        prepare.participant = sync_.rank();
        prepare.participants = sync_.size();
        if (sync_.size() > 1)
          prepare.exchange = [&](const InitRound& mine) {
            InitRound told = mine;
            told.cancelled = stop_.cancelled_here();
            std::vector<InitRound> all = sync_.exchange_initialization(told);
            heed_cancels(all);
            return all;
          };
        // Rank 0 saves the initialization's progress at the checkpoint
        // interval (every participant's is the same); a write that fails
        // is said, and the walk goes on.
        if (root() && checkpointing()) {
          prepare.walked = [&](const InitProgress& progress) { sync_.keep_walked_initialization(progress); };
          prepare.save_due = [&] { return clock_.seconds() - last_checkpoint_s_ >= sync_.checkpoint_interval_s(); };
          prepare.save = [&](const InitProgress& progress) {
            const bool written = sync_.write_initialization(progress);
            last_checkpoint_s_ = clock_.seconds();
            if (!written) return;
            init_checkpointed = true;
            ++out.checkpoints_written;
          };
        }
        // Rank 0 reports the initialization's rounds: on many groups it is
        // most of the search, and a log with nothing in it for minutes
        // reads as a hang.
        if (root() && search_.initialization_progress)
          prepare.round_done = [&](std::size_t done, std::size_t tasks, double best_s) {
            SearchProgress p;
            p.initializing = true;
            p.done = static_cast<std::int64_t>(done);
            p.total = static_cast<std::int64_t>(tasks);
            p.best_iteration_s = best_s;
            p.elapsed_s = clock_.seconds();
            search_.initialization_progress(p);
          };
        prepared_ = prepare_search(cost_, memory_, cache_, prepare);
      });
      // A stopped initialization holds part of the list: nothing to compare.
      if (!prepared_.stopped) sync_.check_list(prepared_.skeletons);
    };
    if (auto failure = sync_.agree(initialize)) {
      out.failure = failure;
      return false;
    }
    init_counters_ = cache_.counters();
    if (options_.live_progress) {
      progress_.set_total(static_cast<std::int64_t>(prepared_.skeletons.size()));
      progress_.add_pruned(prepared_.prune.removed_initially());
    }
    if (sync_.any(prepared_.stopped)) {
      // Within the gap asked for by the rate bound alone: the answer asked
      // for (every participant's probes, and with them this, are alike).
      if (prepared_.gap_reached) goal_.store(true);
      stopped_ = true;
      init_stopped_ = true;    // part of the space never listed: only the rate bound holds
      plans_gathered_ = true;  // rank 0's probes are the answer: nothing to gather
      if (root()) {
        Incumbent best(search_.top_k, split_.problem.cluster);
        for (const Plan& plan : prepared_.probes) best.offer(plan);
        final_top_ = best.plans();
        init_evaluated_ = static_cast<std::int64_t>(prepared_.probes.size());
      }
      return true;
    }

    const std::size_t count = static_cast<std::size_t>(std::max(1, options_.chunks_per_rank)) * sync_.size();
    if (auto failure = sync_.share_chunks(prepared_.skeletons, count, restored_)) {
      out.failure = failure;
      return false;
    }
    chunks_ = chunks_ending_at(prepared_.skeletons, restored_.chunk_end);
    done_ = restored_.chunk_done;
    done_.resize(chunks_.size(), 0);
    out.chunks = static_cast<std::int64_t>(chunks_.size());
    if (restored_.resumed) {
      for (const Plan& plan : restored_.top) incumbent_.offer(plan);
      // Entries restored from disk count as this participant's own hits.
      cache_.import(restored_.cache, false);
      restored_.cache = CacheDelta{};
      out.resumed = true;
      out.chunks_restored = std::count(done_.begin(), done_.end(), std::uint8_t{1});
    }

    // Deal the unfinished chunks round-robin: rank r starts with the r-th
    // most promising one.
    const int n = sync_.size(), me = sync_.rank();
    queues_.assign(n, {});
    taken_.assign(n, 0);
    int next = 0;
    for (std::size_t c = 0; c < chunks_.size(); ++c) {
      if (!done_[c]) queues_[next++ % n].push_back(static_cast<int>(c));
    }
    report_.rank = me;
    report_.threads = threads_;
    report_.share_chunks = static_cast<std::int64_t>(queues_[me].size());
    for (int c : queues_[me]) report_.share_skeletons += static_cast<std::int64_t>(chunks_[c].end - chunks_[c].begin);
    mark_ = cache_.mark();
    last_checkpoint_s_ = clock_.seconds();
    // The file holds the initialization's progress: the search's state
    // replaces it at once, so a kill before the search's first interval
    // does not walk the initialization again.
    if (checkpointing() && sync_.any(init_checkpointed)) save_checkpoint(false, out);
    return true;
  }

  // The least lower bound of chunk c's skeletons (the list is in
  // lower-bound order: its first).
  double chunk_bound(int c) const { return prepared_.skeletons[chunks_[c].begin].lower_bound_s; }

  // Alone, the bound is known after every skeleton: the incumbent's best
  // and the least lower bound left (the queue is in lower-bound order, so
  // the open chunk's frontier, or the next chunk's first). Raises goal_
  // once the gap asked for is proven.
  void live_bound() {
    const double best = incumbent_.best();
    const double bound = std::min(best, open_bound_.load());
    if (options_.live_progress) {
      progress_.set_best(best);
      progress_.set_bound(bound);
    }
    if (search_.gap > 0 && std::isfinite(best) && search_gap(best, bound) <= search_.gap) goal_.store(true);
  }

  // Searches this participant's queue from the front until the interval is
  // used up; records finished chunks in `mine`. Does not change the queues:
  // every participant applies every finished list after the exchange.
  // Keeps open_bound_ (the least lower bound this participant has left).
  void search_own_queue(RoundReport& mine, double round_start) {
    const std::deque<int>& queue = queues_[sync_.rank()];
    const bool fail_here = options_.inject_failure.fires(sync_.rank(), InjectedFailure::Where::search);
    // Until a share says otherwise, what is left is the whole queue.
    open_bound_.store(queue.empty() ? kInf : chunk_bound(queue.front()));
    if (fail_here && queue.empty()) throw std::runtime_error("test failure injected on this rank while searching");
    ShareControl control;
    control.stop = stop_;
    control.open_bound = &open_bound_;
    const bool alone = sync_.size() == 1;
    if (options_.live_progress || (alone && search_.gap > 0)) {
      control.on_skeleton = [this, alone](bool estimated) {
        if (options_.live_progress) {
          progress_.add_done(1);
          if (estimated) progress_.add_evaluated(1);
        }
        if (alone) live_bound();
        if (options_.live_progress) progress_.tick();
      };
    }
    parallel::with_threads(threads_, [&] {
      std::vector<std::size_t> positions;
      for (std::size_t q = 0; q < queue.size(); ++q) {
        const int c = queue[q];
        control.rest_bound = q + 1 < queue.size() ? chunk_bound(queue[q + 1]) : kInf;
        positions.resize(chunks_[c].end - chunks_[c].begin);
        std::iota(positions.begin(), positions.end(), chunks_[c].begin);
        const ShareOutcome outcome =
            search_share(cost_, memory_, cache_, prepared_.skeletons, positions, incumbent_, control);
        evaluated_ += outcome.evaluated;
        skipped_ += outcome.pruned.count(PruneRule::lower_bound_above_best);
        no_split_ += outcome.pruned.count(PruneRule::no_feasible_split);
        skeletons_done_ += outcome.done;
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

  void search_rounds(DriverResult& out) {
    const int me = sync_.rank();
    std::optional<SearchFailure> failure;
    while (true) {
      RoundReport mine;
      const double round_start = clock_.seconds();
      if (!failure) {
        failure = sync_.attempt([&] { search_own_queue(mine, round_start); });
        if (failure && sync_.size() > 1) failure->message = "rank " + std::to_string(me) + ": " + failure->message;
      }
      report_.search_s += clock_.seconds() - round_start;
      mine.stop = mine.stop || stop_();
      mine.cancelled = stop_.cancelled_here();

      // The exchange. Every participant gets here each round, finished or
      // not; an exception inside it cannot be agreed on, so it ends the job.
      try {
        report_.idle_s += sync_.wait_for_all();
        const double exchange_start = clock_.seconds();
        if (options_.inject_failure.fires(me, InjectedFailure::Where::exchange))
          throw std::runtime_error("test failure injected on this rank inside an exchange");
        if (failure) {
          mine.failure_code = failure->exit_code;
          mine.failure = failure->message;
        }
        // Alone, the incumbent's own bound is already the job's.
        if (sync_.size() > 1) {
          for (const Plan& plan : incumbent_.plans()) {
            mine.top_keys.push_back(skeleton_key(plan));
            mine.top_times.push_back(plan.predicted.iteration_time_s);
          }
        }
        mine.evaluated = evaluated_;
        mine.open_bound = open_bound_.load();
        mine.skipped = skipped_;
        mine.no_split = no_split_;
        mine.checkpoint_now =
            root() && checkpointing() && exchange_start - last_checkpoint_s_ >= sync_.checkpoint_interval_s();
        reports_ = sync_.exchange_round(mine);
        heed_cancels(reports_);
        ++report_.rounds;

        bool stop = false;
        for (int r = 0; r < sync_.size(); ++r) {
          const RoundReport& theirs = reports_[r];
          if (theirs.failure_code != 0 && !out.failure)
            out.failure = SearchFailure{r, theirs.failure_code, theirs.failure};
          for (int c : theirs.finished) {
            if (queues_[r].empty() || queues_[r].front() != c)
              throw std::logic_error("rank " + std::to_string(r) + " finished a chunk out of its queue's order");
            queues_[r].pop_front();
            done_[c] = 1;
            if (r == me) ++report_.chunks_done;
          }
          stop = stop || theirs.stop;
        }
        incumbent_.tighten(job_kth_best(reports_, search_.top_k));
        if (out.failure) return;
        // The job's proven bound, the same on every participant; a gap
        // reached stops them all at once (alone, goal_ may have said so
        // during the round).
        update_job_bound();
        if (search_.gap > 0 && std::isfinite(job_best_) && search_gap(job_best_, job_bound_) <= search_.gap)
          goal_.store(true);
        stop = stop || goal_.load();
        const bool all_done = std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q.empty(); });
        const bool last = stop || all_done;
        // Entries help only a round still to come: the last would ship
        // them for nothing.
        if (!last) sync_.exchange_cache(cache_, mark_);
        if (checkpointing() && (reports_[0].checkpoint_now || last)) save_checkpoint(last, out);
        if (last) {
          // Stopped with work left: the plans are the best so far.
          stopped_ = stop && !all_done;
          report_.exchange_s += clock_.seconds() - exchange_start;
          return;
        }
        rebalance(queues_, chunks_, taken_);
        report_progress();
        report_.exchange_s += clock_.seconds() - exchange_start;
      } catch (const std::exception& e) {
        const int code = dynamic_cast<const InputError*>(&e) ? kExitInvalidInput : kExitFailure;
        sync_.abort("rank " + std::to_string(me) + ": " + e.what(), code);
      }
    }
  }

  // Totals over every participant, from the latest exchange (search phase)
  // plus what a restored checkpoint had done.
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

  // After an exchange: the job's best plan (every participant's top-K, or
  // alone the incumbent) and its proven bound, the least of that best and
  // every participant's least open lower bound. Valid because a skeleton
  // is finished only once balanced exactly (its best plan offered) or
  // shown unable to beat the job's K-th best, and initialization drops
  // only skeletons no better than a probe that stays in the list.
  void update_job_bound() {
    job_best_ = incumbent_.best();
    double open = kInf;
    for (const RoundReport& r : reports_) {
      if (!r.top_times.empty()) job_best_ = std::min(job_best_, r.top_times.front());
      open = std::min(open, r.open_bound);
    }
    job_bound_ = std::min({job_best_, open, prepared_.dropped_bound_s});
  }

  // Rank 0, after each exchange: the job's totals (live progress reports
  // per skeleton instead).
  void report_progress() const {
    if (!root() || !search_.progress || options_.live_progress) return;
    SearchProgress p;
    for (std::size_t c = 0; c < chunks_.size(); ++c)
      if (done_[c]) p.done += static_cast<std::int64_t>(chunks_[c].end - chunks_[c].begin);
    p.total = static_cast<std::int64_t>(prepared_.skeletons.size());
    p.evaluated = init_evaluated_ + total_evaluated();
    p.pruned = prepared_.prune.removed_initially() + total_search_prune().skipped_in_search();
    p.best_iteration_s = job_best_;
    p.bound_s = std::isfinite(job_bound_) ? job_bound_ : 0;
    p.elapsed_s = clock_.seconds();
    search_.progress(p);
  }

  // Collective: rank 0 gathers every top-K and saves the state. A write
  // error is not fatal at once: it is reported at the next exchange (or in
  // the outcome) so every participant ends cleanly.
  void save_checkpoint(bool last, DriverResult& out) {
    std::vector<std::vector<Plan>> plans = sync_.gather_plans(incumbent_.plans());
    // Every participant must know the last gather happened, or finish()
    // would gather again on some only.
    plans_gathered_ = last;
    if (!root()) return;
    SearchState state;
    for (const SkeletonChunk& c : chunks_) state.chunk_end.push_back(c.end);
    state.chunk_done = done_;
    state.top = merge_top_k(plans, search_.top_k, split_.problem.cluster);
    state.evaluated = total_evaluated();
    state.pruned = total_search_prune();
    state.cache = cache_.snapshot();
    if (last) final_top_ = state.top;
    if (last && search_.ended && !state.top.empty()) search_.ended(state.top.front());
    const bool written = sync_.write_checkpoint(state, last);
    last_checkpoint_s_ = clock_.seconds();
    if (written) ++out.checkpoints_written;
  }

  void finish(DriverResult& out) {
    try {
      if (!plans_gathered_) {
        std::vector<std::vector<Plan>> plans = sync_.gather_plans(incumbent_.plans());
        if (root()) final_top_ = merge_top_k(plans, search_.top_k, split_.problem.cluster);
      }
      const CacheCounters search_phase = minus(cache_.counters(), init_counters_);
      // Set here too: a search stopped in its initialization never dealt
      // the chunks (its rows had all said rank 0).
      report_.rank = sync_.rank();
      report_.threads = threads_;
      report_.chunks_taken = taken_.empty() ? 0 : taken_[sync_.rank()];
      report_.evaluated = evaluated_;
      report_.pruned = skipped_ + no_split_;
      report_.cache_hits = search_phase.hits;
      report_.cache_peer_hits = search_phase.peer_hits;
      report_.cache_misses = search_phase.misses;
      report_.bytes_sent = sync_.bytes_sent();
      report_.bytes_received = sync_.bytes_received();
      report_.wall_s = clock_.seconds();
      out.ranks = sync_.gather_reports(report_);

      std::int64_t searched = 0;
      for (std::uint8_t d : done_) searched += d;
      out.chunks_searched = searched - out.chunks_restored;

      // The best uniform plans finish_plans adds, on the problem as given
      // (not merged), the participants sharing its group sets.
      const CostModel given(problem_);
      std::int64_t uniform_evaluated = 0;
      bool uniform_stopped = false;
      const std::vector<Plan> uniform = parallel::with_threads(threads_, [&] {
        return uniform_plans(given, kAnswerUniformPlans, uniform_evaluated, /*context_and_interleaving=*/true, stop_,
                             &uniform_stopped, sync_.rank(), sync_.size());
      });
      uniform_stopped = sync_.any(uniform_stopped);
      const std::vector<std::vector<Plan>> uniform_all = sync_.gather_plans(uniform);

      Outcome outcome;
      if (root()) {
        build_result(out, outcome);
        out.result.uniform = merge_top_k(uniform_all, kAnswerUniformPlans, split_.problem.cluster);
        out.result.uniform_searched = !uniform_stopped;
      }
      sync_.share_outcome(outcome);
      apply_outcome(outcome, out);
    } catch (const std::exception& e) {
      sync_.abort("rank " + std::to_string(sync_.rank()) + ": " + e.what(), kExitFailure);
    }
  }

  // The final bound and gap (SearchStats): to the end, the bound is the best
  // plan (gap 0); stopped in initialization, the per-layer rate bound
  // (prepare_search; 0 if stopped before it); stopped in the rounds, the
  // last exchange's open bounds with the merged best.
  // Whatever the skeleton limit dropped is at least its least bound.
  void set_bound(const std::vector<Plan>& top, SearchStats& stats) const {
    const double best = top.empty() ? kInf : top.front().predicted.iteration_time_s;
    double bound = std::min(best, prepared_.dropped_bound_s);
    if (!stopped_) {
      stats.bound_s = top.empty() ? 0 : bound;
      stats.gap = top.empty() ? 0 : search_gap(best, bound);
      return;
    }
    if (init_stopped_) {
      // Part of the space was never listed: only the rate bound holds.
      bound = std::min(bound, prepared_.rate_bound_s);
    } else {
      for (const RoundReport& r : reports_) bound = std::min(bound, r.open_bound);
    }
    if (!std::isfinite(bound)) bound = 0;
    stats.bound_s = bound;
    stats.gap = search_gap(best, bound);
  }

  void build_result(DriverResult& out, Outcome& outcome) {
    SearchResult& result = out.result;
    // Stopped in the rounds: the probes initialization balanced are plans of
    // listed skeletons too, and may beat what the search had reached (say,
    // stopped inside its first long balance). Run to the end they are found
    // again, so this never changes a finished answer.
    // The skeleton limit may have dropped a probe's skeleton from the list
    // (its bound above the list's last): its plan is kept here alike.
    if ((stopped_ || limited()) && !init_stopped_ && !prepared_.probes.empty())
      final_top_ = merge_top_k({*final_top_, prepared_.probes}, search_.top_k, split_.problem.cluster);
    result.top = std::move(*final_top_);
    for (Plan& plan : result.top) {
      if (split_.split()) plan = unsplit_plan(plan, split_);
      if (merge_.merged()) plan = unmerge_plan(plan, merge_);
    }
    result.prune = prepared_.prune;
    result.prune.merge(total_search_prune());
    result.candidates = result.prune.considered;
    SearchStats& stats = result.stats;
    stats.strategy = search_.strategy;
    stats.evaluated = init_evaluated_ + total_evaluated();
    stats.pruned = result.prune.removed_initially() + result.prune.skipped_in_search();
    // Initialization's cache use (rank 0's, as one process counts it) and
    // every participant's search phase.
    const CacheCounters initialization = minus(init_counters_, start_counters_);
    stats.cache_hits = initialization.hits + initialization.peer_hits;
    stats.cache_misses = initialization.misses;
    for (const RankReport& r : out.ranks) {
      stats.cache_hits += r.cache_hits + r.cache_peer_hits;
      stats.cache_misses += r.cache_misses;
    }
    result.stage_estimates = stats.cache_misses;
    stats.ranks = sync_.size();
    stats.threads = threads_;
    stats.wall_s = clock_.seconds();
    set_bound(result.top, stats);
    for (Plan& plan : result.top) plan.search = stats;
    // Limited and not proven optimal: the answer is the best of the kept
    // skeletons, short of the optimum by at most the gap printed.
    const bool short_of_proof = limited() && stats.gap > 0;
    const bool within_gap = search_.gap > 0 && stats.gap <= search_.gap;
    result.status = search_status(!result.top.empty(), stopped_ || short_of_proof,
                                  (stopped_ && goal_.load()) || (short_of_proof && within_gap));
    if (stopped_early(result.status))
      result.stopped_by = stopped_ ? stop_.cause_of_stop() : "max-skeletons";
    if (short_of_proof && !stopped_)
      result.stop_reason = "more than " + std::to_string(search_.max_skeletons) +
                           " skeletons left after memory-aware initialization (--max-skeletons): the best plan of "
                           "those with the least lower bounds, proven within the gap below";
    if (result.top.empty()) {
      result.infeasible_reason = stopped_ ? "the search stopped (time limit or interrupt) before any plan that "
                                            "fits memory was found"
                                          : infeasible_reason(CostModel(problem_), result.prune);  // the cluster as given, not its merged parts and halves
    }
    if (options_.live_progress) {
      progress_.add_pruned(total_search_prune().skipped_in_search());
      progress_.set_done(skeletons_done_);
      progress_.set_bound(stats.bound_s);
      progress_.finish();
    } else {
      job_bound_ = stats.bound_s;
      report_progress();
    }
    outcome.status = result.status;
  }

  // The problem as given (baselines run on it), and the one the autohaap
  // search runs on: identical node groups merged (cluster_merge.hpp), then
  // groups of a small space also offered as halves (cluster_split.hpp);
  // its plans are moved back onto the original groups in build_result.
  const Problem& problem_;
  const SearchOptions& search_;
  const DriverOptions& options_;
  SearchSynchronizer& sync_;
  const ClusterMerge merge_;
  const ClusterSplit split_;
  const CostModel cost_;
  const MemoryPruner memory_;
  LatencyCache own_cache_;
  LatencyCache& cache_;  // search_.cache, or own_cache_
  Incumbent incumbent_;
  const int threads_;
  Stopwatch clock_;
  // Raised once the gap asked for (search_.gap) is proven: then stop_ says
  // stop, and the search ends as gap_reached.
  std::atomic<bool> goal_{false};
  // Raised once another rank says its own cancel flag was raised: a stop
  // then says `signal`, as on that rank (not time-limit).
  std::atomic<bool> peer_cancel_{false};
  // Notes another participant's interrupt from what an exchange brought.
  template <class Reports>
  void heed_cancels(const Reports& all) {
    for (const auto& r : all)
      if (r.cancelled) peer_cancel_.store(true);
  }
  StopCondition stop_;  // the search's time limit, cancel flag and goal_, on clock_
  strategy::ProgressReporter progress_;

  PreparedSearch prepared_;
  std::int64_t init_evaluated_ = 0;  // rank 0: the probes' plans, when initialization stopped
  CacheCounters start_counters_;     // the cache's counters before and after initialization
  CacheCounters init_counters_;
  SearchState restored_;             // the chunk table; counters and plans of a resumed run

  std::vector<SkeletonChunk> chunks_;
  std::vector<std::uint8_t> done_;
  std::vector<std::deque<int>> queues_;  // per participant, chunks not yet started; identical everywhere
  std::vector<std::int64_t> taken_;      // per participant, chunks taken over from peers
  std::vector<RoundReport> reports_;     // the latest exchange's
  std::uint64_t mark_ = 0;
  double last_checkpoint_s_ = 0;
  // The skeleton limit dropped part of the list (PreparedSearch::dropped_bound_s).
  bool limited() const { return std::isfinite(prepared_.dropped_bound_s); }
  bool stopped_ = false;                        // initialization, or the rounds with chunks left, ended on a stop
  bool init_stopped_ = false;                   // initialization itself was stopped
  bool plans_gathered_ = false;                 // the last checkpoint gathered the final plans (everywhere)
  std::optional<std::vector<Plan>> final_top_;  // rank 0: the merged final plans

  // The least lower bound of the skeletons this participant holds and has
  // not finished (search_share keeps it while a chunk is open).
  std::atomic<double> open_bound_{0};
  // After the latest exchange: the job's best iteration time and proven
  // lower bound on the optimum (update_job_bound).
  double job_best_ = std::numeric_limits<double>::infinity();
  double job_bound_ = 0;

  // This participant's search-phase totals.
  std::int64_t evaluated_ = 0, skipped_ = 0, no_split_ = 0, skeletons_done_ = 0;
  RankReport report_;
};

}  // namespace

DriverResult drive_search(const Problem& problem, const SearchOptions& search, const DriverOptions& options,
                          SearchSynchronizer& sync) {
  SearchDriver driver(problem, search, options, sync);
  return driver.run();
}

// --- LocalSynchronizer ----------------------------------------------------------

std::optional<SearchFailure> LocalSynchronizer::agree(const std::function<void()>& step) {
  step();
  return std::nullopt;
}

std::optional<SearchFailure> LocalSynchronizer::attempt(const std::function<void()>& step) {
  step();
  return std::nullopt;
}

void LocalSynchronizer::abort(const std::string& message, int /*exit_code*/) { throw std::runtime_error(message); }

std::optional<SearchFailure> LocalSynchronizer::share_chunks(const std::vector<Skeleton>& skeletons,
                                                             std::size_t count, SearchState& state) {
  state = SearchState{};
  for (const SkeletonChunk& c : cut_into_chunks(skeletons, count)) state.chunk_end.push_back(c.end);
  return std::nullopt;
}

}  // namespace autohaap
