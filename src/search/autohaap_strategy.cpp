// The AutoHAAP strategy: memory-aware initialization, then skeletons best
// lower bound first, each balanced by the load balancer through the latency
// cache, skipping those whose bound cannot beat the K-th best plan.
#include <numeric>

#include "autohaap/search/load_balancer.hpp"
#include "strategies.hpp"

namespace autohaap::strategy {

bool run_autohaap(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                  ProgressReporter& progress, SearchResult& result) {
  LatencyCache own_cache;
  LatencyCache& cache = options.cache ? *options.cache : own_cache;
  const CacheCounters before = cache.counters();
  const MemoryPruner memory(cost);

  PrepareOptions prepare;
  prepare.top_k = options.top_k;
  prepare.max_skeletons = options.max_skeletons;
  prepare.stop = stop;
  PreparedSearch prepared = prepare_search(cost, memory, cache, prepare);
  result.prune = prepared.prune;
  result.candidates = prepared.prune.considered;
  progress.set_total(static_cast<std::int64_t>(prepared.skeletons.size()));
  progress.add_pruned(prepared.prune.removed_initially());

  // No seed plan: the skeleton of least lower bound, balanced first, is
  // already a near-optimal incumbent (seeding with every uniform plan cost
  // hundreds of estimates and never changed which skeletons were skipped).
  Incumbent incumbent(options.top_k);
  if (prepared.stopped) {
    // Stopped during initialization: the probes are the best so far.
    for (const Plan& plan : prepared.probes) incumbent.offer(plan);
    result.top = incumbent.plans();
    result.stats.evaluated = static_cast<std::int64_t>(prepared.probes.size());
    result.stats.pruned = result.prune.removed_initially() + result.prune.skipped_in_search();
    return true;
  }

  std::vector<std::size_t> positions(prepared.skeletons.size());
  std::iota(positions.begin(), positions.end(), std::size_t{0});
  ShareControl control;
  control.stop = stop;
  control.on_skeleton = [&](bool estimated) {
    progress.add_done(1);
    if (estimated) progress.add_evaluated(1);
    progress.set_best(incumbent.bound());
    progress.tick();
  };
  const ShareOutcome outcome = search_share(cost, memory, cache, prepared.skeletons, positions, incumbent, control);

  result.prune.merge(outcome.pruned);
  result.top = incumbent.plans();
  result.stats.evaluated = outcome.evaluated;
  result.stats.pruned = result.prune.removed_initially() + result.prune.skipped_in_search();
  const CacheCounters after = cache.counters();
  result.stats.cache_hits = (after.hits - before.hits) + (after.peer_hits - before.peer_hits);
  result.stats.cache_misses = after.misses - before.misses;
  result.stage_estimates = result.stats.cache_misses;
  progress.add_pruned(result.prune.skipped_in_search());
  progress.set_done(outcome.done);
  return outcome.stopped;
}

}  // namespace autohaap::strategy
