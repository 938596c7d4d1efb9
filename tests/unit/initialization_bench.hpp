// What a test of the memory-aware initialization (prepare_search) holds for
// one problem: its cost model, memory pruner and latency cache, and a call
// on a given number of threads.
#pragma once

#include <utility>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/search/searcher.hpp"

namespace autohaap::search_fixtures {

struct InitializationBench {
  explicit InitializationBench(Problem p) : problem(std::move(p)), cost(problem), memory(cost) {}

  // prepare_search on `threads` threads, with this bench's cache (a fresh
  // cache: `fresh_cache`).
  PreparedSearch prepare(const PrepareOptions& options, int threads = 1, bool fresh_cache = false) {
    LatencyCache own;
    LatencyCache& used = fresh_cache ? own : cache;
    return parallel::with_threads(threads, [&] { return prepare_search(cost, memory, used, options); });
  }

  Problem problem;  // first: cost and memory refer to it
  CostModel cost;
  MemoryPruner memory;
  LatencyCache cache;
};

}  // namespace autohaap::search_fixtures
