// The strategies behind run_search besides autohaap (search_driver.hpp), and
// what they share with it: the progress reporter and the stop test
// (stop_condition.hpp). Private to src/search.
#pragma once

#include <atomic>
#include <cmath>
#include <mutex>

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

// Each strategy fills result.top (unranked stats), prune, candidates,
// stats.evaluated / pruned / cache counters, and returns whether it stopped
// early (time limit or cancel); run_search adds the rest and the status.
bool run_exhaustive(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                    ProgressReporter& progress, SearchResult& result);
bool run_uniform(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                 ProgressReporter& progress, SearchResult& result);
bool run_metis(const CostModel& cost, const SearchOptions& options, const StopCondition& stop, ProgressReporter& progress,
               SearchResult& result);

}  // namespace autohaap::strategy
