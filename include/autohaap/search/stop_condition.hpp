// StopCondition: whether a search must stop now — its cancel flag was
// raised (SIGINT, SIGTERM, a caller), its time limit has passed or its goal
// was met (the search driver raises `goal` once the requested --gap is
// proven) — and
// Stopwatch, the clock a search's time is measured on. Every long loop of
// every strategy, initialization included, and the search driver ask
// the same StopCondition, so a time limit or a signal stops them all alike
// (within about a second) with the best plan so far.
//
// Thread safety: a StopCondition is read-only once built; operator() may be
// called from any thread at once. Cost: one relaxed atomic load and, with a
// deadline, one clock read.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

namespace autohaap {

// Seconds since construction, on the steady clock.
class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct StopCondition {
  const std::atomic<bool>* cancel = nullptr;  // stop once set; nullptr: never
  double deadline_s = 0;                      // stop once `clock` passes it; 0: no deadline
  std::function<double()> clock;              // seconds since the search started
  const std::atomic<bool>* goal = nullptr;    // stop once set: what was asked for is reached; nullptr: never
  // Set when another MPI rank's cancel flag was raised (a signal sent to
  // that rank alone): a stop here for the same cause.
  const std::atomic<bool>* peer_cancel = nullptr;

  // A search's condition: its cancel flag and its time limit on `watch`
  // (which must outlive the condition).
  static StopCondition of(const std::atomic<bool>* cancel, double time_limit_s, const Stopwatch& watch) {
    return StopCondition{cancel, time_limit_s, [&watch] { return watch.seconds(); }};
  }

  // Whether to stop now.
  bool operator()() const { return cause()[0] != '\0'; }

  // What says stop now, as a search's summary names it (SearchResult::
  // stopped_by): "signal" (the cancel flag), "goal", "time-limit", or ""
  // while nothing does.
  const char* cause() const {
    if (cancel && cancel->load(std::memory_order_relaxed)) return "signal";
    if (peer_cancel && peer_cancel->load(std::memory_order_relaxed)) return "signal";
    if (goal && goal->load(std::memory_order_relaxed)) return "goal";
    if (deadline_s > 0 && clock && clock() > deadline_s) return "time-limit";
    return "";
  }
  // Whether this process's own cancel flag is raised (what a rank tells the
  // others, as their peer_cancel).
  bool cancelled_here() const { return cancel && cancel->load(std::memory_order_relaxed); }
  // The cause of a stop that has happened: cause(), or "time-limit" when
  // nothing here says stop any more (another MPI rank's clock ran out, and
  // the ranks agreed to stop).
  const char* cause_of_stop() const { return cause()[0] != '\0' ? cause() : "time-limit"; }
};

}  // namespace autohaap
