#include "autohaap/search/searcher.hpp"

#include <algorithm>
#include <limits>

#include "autohaap/error.hpp"
#include "autohaap/search/load_balancer.hpp"
#include "autohaap/search/parallel.hpp"
#include "strategies.hpp"

namespace autohaap {

const std::vector<std::string>& search_strategies() {
  static const std::vector<std::string> names = {"autohaap", "exhaustive", "uniform", "metis"};
  return names;
}

SearchResult run_search(const Problem& problem, const SearchOptions& options) {
  const auto& names = search_strategies();
  if (std::find(names.begin(), names.end(), options.strategy) == names.end()) {
    throw InputError("", "strategy", options.strategy, "autohaap, exhaustive, uniform, metis");
  }
  if (options.top_k < 1) throw InputError("", "top", std::to_string(options.top_k), "an integer >= 1");
  if (options.threads < 0) throw InputError("", "threads", std::to_string(options.threads), "0 (all) or more");

  const CostModel cost(problem);
  strategy::Stopwatch clock;
  strategy::ProgressReporter progress(options, clock);
  SearchResult result;
  const int threads = options.threads > 0 ? options.threads : parallel::hardware_threads();
  parallel::with_threads(threads, [&] {
    if (options.strategy == "autohaap")
      strategy::run_autohaap(cost, options, clock, progress, result);
    else if (options.strategy == "exhaustive")
      strategy::run_exhaustive(cost, options, clock, progress, result);
    else if (options.strategy == "uniform")
      strategy::run_uniform(cost, options, clock, progress, result);
    else
      strategy::run_metis(cost, options, clock, progress, result);
  });

  result.stats.strategy = options.strategy;
  result.stats.threads = threads;
  result.stats.ranks = 1;
  result.stats.wall_s = clock.seconds();
  for (Plan& plan : result.top) plan.search = result.stats;
  if (result.top.empty()) {
    result.infeasible_reason = result.timed_out ? "the search stopped (time limit or interrupt) before any plan that "
                                                  "fits memory was found"
                                                : infeasible_reason(cost, result.prune);
  }
  progress.finish();
  return result;
}

std::int64_t exhaustive_candidates(const Problem& problem) {
  const SearchSpace space(problem);
  const SkeletonList list = initialize_skeletons(space, nullptr);
  const int layers = problem.model.layers;
  const long double modes = std::max<std::size_t>(1, problem.training.recompute_modes.size());
  const long double cap = static_cast<long double>(std::numeric_limits<std::int64_t>::max());
  long double total = 0;
  for (const Skeleton& s : list.skeletons) {
    long double n = static_cast<long double>(count_splits(layers, s.num_stages()));
    for (int i = 0; i < s.num_stages() && n < cap; ++i) n *= modes;
    total += n;
    if (total >= cap) return std::numeric_limits<std::int64_t>::max();
  }
  return static_cast<std::int64_t>(total);
}

PreparedSearch prepare_search(const CostModel& cost, const MemoryPruner& memory, LatencyCache& cache) {
  const SearchSpace space(cost.problem());
  SkeletonList list = initialize_skeletons(space, &memory);
  const LoadBalancer balancer(cost, memory, &cache);
  const int layers = cost.problem().model.layers;
  parallel::for_each(list.skeletons.size(), [&](std::size_t i) {
    Skeleton& s = list.skeletons[i];
    s.lower_bound_s = balancer.lower_bound(s);
    // The balancer's DP touches about stages x layers-per-stage cells per
    // threshold; more stages also mean more thresholds.
    s.work = static_cast<double>(layers) + static_cast<double>(s.num_stages()) * s.num_stages();
  });
  std::sort(list.skeletons.begin(), list.skeletons.end(), [](const Skeleton& a, const Skeleton& b) {
    return a.lower_bound_s != b.lower_bound_s ? a.lower_bound_s < b.lower_bound_s : a.id < b.id;
  });
  return PreparedSearch{std::move(list.skeletons), list.report};
}

ShareOutcome search_share(const CostModel& cost, const MemoryPruner& memory, LatencyCache& cache,
                          const std::vector<Skeleton>& skeletons, std::span<const std::size_t> positions,
                          Incumbent& incumbent, const ShareControl& control) {
  const LoadBalancer balancer(cost, memory, &cache);
  std::atomic<std::int64_t> balanced{0}, evaluated{0}, above{0}, no_split{0};
  std::atomic<bool> stopped{false};
  auto must_stop = [&] {
    if (control.cancel && control.cancel->load(std::memory_order_relaxed)) return true;
    return control.deadline_s > 0 && control.clock && control.clock() > control.deadline_s;
  };
  parallel::for_each_in_order(positions.size(), [&](std::size_t j) {
    if (must_stop()) {
      stopped.store(true);
      return false;
    }
    const Skeleton& s = skeletons[positions[j]];
    const double bound = incumbent.bound();
    // Sorted by lower bound: this skeleton and all later ones cannot beat
    // the K-th best plan (slack: a tie must still be searched).
    if (s.lower_bound_s > bound * (1 + 1e-9)) return false;
    const BalanceResult r = balancer.balance(s, bound);
    const bool estimated = r.status == BalanceResult::Status::found;
    switch (r.status) {
      case BalanceResult::Status::found: {
        Plan plan = make_plan(cost.problem(), s, r.split.layer_end, r.split.recompute);
        plan.predicted = cost.estimate(plan);
        evaluated.fetch_add(1, std::memory_order_relaxed);
        incumbent.offer(plan);
        break;
      }
      case BalanceResult::Status::above_bound:
        above.fetch_add(1, std::memory_order_relaxed);
        break;
      case BalanceResult::Status::no_feasible_split:
        no_split.fetch_add(1, std::memory_order_relaxed);
        break;
    }
    balanced.fetch_add(1, std::memory_order_relaxed);
    if (control.on_skeleton) control.on_skeleton(estimated);
    return true;
  });
  ShareOutcome out;
  out.stopped = stopped.load();
  out.evaluated = evaluated.load();
  // Unless stopped, whatever was not balanced was skipped by the bound.
  const std::int64_t skipped = out.stopped ? 0 : static_cast<std::int64_t>(positions.size()) - balanced.load();
  out.done = balanced.load() + skipped;
  out.pruned.add(PruneRule::lower_bound_above_best, skipped + above.load());
  out.pruned.add(PruneRule::no_feasible_split, no_split.load());
  return out;
}

std::vector<std::vector<std::size_t>> partition_by_work(const std::vector<Skeleton>& skeletons, int shares) {
  shares = std::max(1, shares);
  std::vector<std::vector<std::size_t>> out(shares);
  std::vector<double> load(shares, 0.0);
  for (std::size_t j = 0; j < skeletons.size(); ++j) {
    const int target = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    out[target].push_back(j);
    load[target] += std::max(skeletons[j].work, 1e-9);
  }
  return out;
}

}  // namespace autohaap
