// Parallel: the few scheduling and sharing primitives the search uses, so
// the search code reads as algorithm rather than scheduling. This is the
// only search header that includes oneTBB.
//
// Promises:
//  - with_threads(n, body) runs body with at most n worker threads (0: all
//    hardware threads); every helper below called inside body obeys it.
//  - for_each_in_order(n, fn) hands items out in increasing index order to
//    whichever worker is free, so the first items start first: a best-first
//    search sorted by lower bound relies on that. Stops handing out items
//    once any fn returns false; items already started finish.
//  - ConcurrentMap is a hash map any thread may read and insert into at
//    once; a value, once inserted, never changes.
//  - AtomicMin is a double that only ever decreases, read without locks.
//  - InOrderFrontier tracks, for items handed out in order and finished in
//    any order, the first one not finished: what a best-first search has
//    left starts there (its proven bound, searcher.hpp).
// Cost: a task per worker per loop; map operations lock one bucket.
#pragma once

#include <oneapi/tbb/concurrent_hash_map.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace autohaap::parallel {

// Hardware threads available to this process.
inline int hardware_threads() { return std::max(1, tbb::info::default_concurrency()); }

// Workers the current context may use (inside with_threads: its limit).
inline int current_threads() { return std::max(1, tbb::this_task_arena::max_concurrency()); }

// The workers a request for `asked` threads gets (0: all): never more
// than the hardware threads, which is all TBB runs (past them it warns and
// ignores the rest), so a summary reports what ran.
inline int usable_threads(int asked) { return asked > 0 ? std::min(asked, hardware_threads()) : hardware_threads(); }

template <class Body>
decltype(auto) with_threads(int threads, Body&& body) {
  tbb::task_arena arena(usable_threads(threads));
  return arena.execute(std::forward<Body>(body));
}

// fn(i) for every i in [0, n), in no particular order.
template <class Fn>
void for_each(std::size_t n, Fn&& fn) {
  tbb::parallel_for(std::size_t{0}, n, [&](std::size_t i) { fn(i); });
}

// fn(i) -> bool for i = 0, 1, ... handed out in order; false stops the loop.
template <class Fn>
void for_each_in_order(std::size_t n, Fn&& fn) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      if (!fn(i)) stop.store(true, std::memory_order_relaxed);
    }
  };
  const int workers = static_cast<int>(std::min<std::size_t>(n, static_cast<std::size_t>(current_threads())));
  if (workers <= 1) {
    worker();
    return;
  }
  tbb::task_group group;
  for (int w = 0; w < workers; ++w) group.run(worker);
  group.wait();
}

// Hash map for many readers and writers. Hash must provide
// `std::size_t operator()(const Key&) const`; Key must have operator==.
template <class Key, class Value, class Hash>
class ConcurrentMap {
 public:
  std::optional<Value> find(const Key& key) const {
    typename Map::const_accessor found;
    if (!map_.find(found, key)) return std::nullopt;
    return found->second;
  }
  // Inserts unless present; returns false (and keeps the old value) if present.
  bool insert(const Key& key, const Value& value) { return map_.insert({key, value}); }
  std::size_t size() const { return map_.size(); }
  // Visits every entry; not safe against concurrent inserts.
  template <class Fn>
  void visit(Fn&& fn) const {
    for (const auto& kv : map_) fn(kv.first, kv.second);
  }

 private:
  struct Compare {
    static std::size_t hash(const Key& k) { return Hash{}(k); }
    static bool equal(const Key& a, const Key& b) { return a == b; }
  };
  using Map = tbb::concurrent_hash_map<Key, Value, Compare>;
  Map map_;
};

class AtomicMin {
 public:
  explicit AtomicMin(double initial = std::numeric_limits<double>::infinity()) : value_(initial) {}
  double load() const { return value_.load(std::memory_order_acquire); }
  // Lowers the value to `candidate` if smaller; returns whether it did.
  bool lower(double candidate) {
    double current = value_.load(std::memory_order_relaxed);
    while (candidate < current) {
      if (value_.compare_exchange_weak(current, candidate, std::memory_order_acq_rel)) return true;
    }
    return false;
  }

 private:
  std::atomic<double> value_;
};

// The first of n items not finished yet, as workers finish them out of
// order. Thread-safe (a mutex: one call per finished item).
class InOrderFrontier {
 public:
  explicit InOrderFrontier(std::size_t n) : finished_(n, 0) {}
  // Marks item i finished; returns the first item not finished (n: all).
  std::size_t finish(std::size_t i) {
    std::lock_guard lock(mutex_);
    finished_.at(i) = 1;
    while (first_ < finished_.size() && finished_[first_]) ++first_;
    return first_;
  }

 private:
  std::mutex mutex_;
  std::vector<char> finished_;
  std::size_t first_ = 0;
};

}  // namespace autohaap::parallel
