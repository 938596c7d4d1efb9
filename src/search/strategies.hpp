// The strategies behind run_search besides autohaap (search_driver.hpp), and
// what they share with it: the progress reporter and the stop test
// (stop_condition.hpp). Private to src/search.
#pragma once

#include <atomic>
#include <cmath>
#include <mutex>
#include <optional>
#include <vector>

#include "autohaap/search/incumbent.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/search/stop_condition.hpp"

namespace autohaap::strategy {

// Calls the user's progress callback from whichever worker passes by once
// the interval has elapsed; never two at once (a busy reporter is skipped).
class ProgressReporter {
 public:
  ProgressReporter(const SearchOptions& options, const Stopwatch& clock) : options_(options), clock_(clock) {}

  void set_total(std::int64_t total) { total_.store(total); }
  void add_evaluated(std::int64_t n) { evaluated_.fetch_add(n, std::memory_order_relaxed); }
  void add_pruned(std::int64_t n) { pruned_.fetch_add(n, std::memory_order_relaxed); }
  void add_done(std::int64_t n) { done_.fetch_add(n, std::memory_order_relaxed); }
  void set_done(std::int64_t n) { done_.store(n); }
  void set_best(double best) { best_.lower(best); }
  // The latest proven bound (it may rise or fall: the best falls, the open
  // lower bounds rise).
  void set_bound(double bound) { bound_.store(std::isfinite(bound) ? bound : 0.0, std::memory_order_relaxed); }

  void tick() {
    if (!options_.progress) return;
    const double now = clock_.seconds();
    if (now - last_.load(std::memory_order_relaxed) < options_.progress_interval_s) return;
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    last_.store(now, std::memory_order_relaxed);
    options_.progress(snapshot());
  }
  // The final report, from the calling thread.
  void finish() {
    if (!options_.progress) return;
    std::lock_guard lock(mutex_);
    options_.progress(snapshot());
  }
  SearchProgress snapshot() const {
    SearchProgress p;
    p.done = done_.load();
    p.total = total_.load();
    p.evaluated = evaluated_.load();
    p.pruned = pruned_.load();
    p.best_iteration_s = best_.load();
    p.bound_s = bound_.load(std::memory_order_relaxed);
    p.elapsed_s = clock_.seconds();
    return p;
  }

 private:
  const SearchOptions& options_;
  const Stopwatch& clock_;
  std::mutex mutex_;
  std::atomic<double> last_{0};
  std::atomic<std::int64_t> total_{0}, done_{0}, evaluated_{0}, pruned_{0};
  parallel::AtomicMin best_;
  std::atomic<double> bound_{0};
};

// What a reference strategy finds on one skeleton: its best plan that fits,
// if any, and how many plans it scored.
struct SkeletonBest {
  std::optional<Plan> plan;
  std::int64_t evaluated = 0;
  bool skipped = false;  // not a pipeline the problem allows: counted nowhere
  bool stopped = false;  // the stop came while on it
};

// The reference strategies' loop: best_of(skeleton) on each skeleton of
// `skeletons`, in order on the worker threads, until `stop`; the top_k best
// plans of `cluster` (Incumbent) go to result.top, each skeleton without one is counted under
// no_feasible_split in result.prune, and the stats are filled. Returns
// whether it stopped early.
template <class BestOf>
bool sweep_skeletons(const std::vector<Skeleton>& skeletons, int top_k, const ClusterSpec& cluster,
                     const StopCondition& stop, ProgressReporter& progress, SearchResult& result, BestOf best_of) {
  Incumbent incumbent(top_k, cluster);
  std::atomic<std::int64_t> evaluated{0}, without_fit{0};
  std::atomic<bool> stopped{false};
  progress.set_total(static_cast<std::int64_t>(skeletons.size()));
  parallel::for_each_in_order(skeletons.size(), [&](std::size_t index) {
    if (stop()) {
      stopped.store(true);
      return false;
    }
    const SkeletonBest best = best_of(skeletons[index]);
    if (best.stopped) {
      stopped.store(true);
      return false;
    }
    evaluated.fetch_add(best.evaluated, std::memory_order_relaxed);
    progress.add_evaluated(best.evaluated);
    progress.add_done(1);
    if (best.plan) {
      incumbent.offer(*best.plan);
      progress.set_best(best.plan->predicted.iteration_time_s);
    } else if (!best.skipped) {
      without_fit.fetch_add(1, std::memory_order_relaxed);
    }
    progress.tick();
    return true;
  });
  result.top = incumbent.plans();
  result.stats.evaluated = evaluated.load();
  result.prune.add(PruneRule::no_feasible_split, without_fit.load());
  result.stats.pruned = result.prune.removed_initially();
  return stopped.load();
}

// Each strategy fills result.top (unranked stats), prune, candidates,
// stats.evaluated / pruned / cache counters, and returns whether it stopped
// early (time limit or cancel); run_search adds the rest and the status.
bool run_exhaustive(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                    ProgressReporter& progress, SearchResult& result);
bool run_reference(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                   ProgressReporter& progress, SearchResult& result);
bool run_uniform(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                 ProgressReporter& progress, SearchResult& result);
bool run_metis(const CostModel& cost, const SearchOptions& options, const StopCondition& stop, ProgressReporter& progress,
               SearchResult& result);

}  // namespace autohaap::strategy
