// The Megatron-style baseline: one stage size, tp, dp, micro-batch size and
// recompute mode for every stage, the used groups in cluster order, layers
// split evenly (the remainder to the first stages), optionally each with
// its best context-parallel degree and interleaving (search/refinement.hpp).
// Every such plan is estimated; the best that fit are kept.
#include <algorithm>
#include <cstdint>

#include "autohaap/search/cluster_merge.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/search/refinement.hpp"
#include "strategies.hpp"

namespace autohaap {
namespace {

struct UniformCandidate {
  Skeleton skeleton;
  Recompute recompute;
};

// The GPUs a uniform plan may use: whole groups (cluster order), or the
// first `prefix_gpus` GPUs of one group (a power-of-two count of its
// nodes), leaving the rest idle.
struct UsedGpus {
  std::vector<int> groups;
  int prefix_gpus = 0;  // > 0: groups holds one group, of which these GPUs

  int gpus(const ClusterSpec& cluster, int g) const { return prefix_gpus > 0 ? prefix_gpus : cluster.groups[g].gpus(); }
  std::int64_t total(const ClusterSpec& cluster) const {
    std::int64_t n = 0;
    for (int g : groups) n += gpus(cluster, g);
    return n;
  }
};

// The sets of groups a uniform plan may use, as lists of group indices in
// cluster order (uniform_plans, searcher.hpp). Up to kUniformSubsetGroups
// groups, every subset up to identical groups (merge_identical_groups,
// cluster_merge.hpp: priced alike, links included): of a kind of n groups
// a set takes the first 0..n, since any k of them make the same plans on
// other GPUs (8 identical racks: 8 sets, not 255). Beyond, every subset
// of the kinds of group (a kind whole or not at all); beyond that many
// kinds, the whole cluster and each kind alone. And each one-part group's
// first 1, 2, 4, ... nodes, fewer than it has: a small model on a large
// group can run faster on fewer nodes than on all of them (GPT-3 350M under
// ZeRO-3 on 2 nodes of 8 H100s: 0.32 s on 16 GPUs, 0.15 s on 8), and more
// GPUs must never give a slower plan.
std::vector<UsedGpus> uniform_group_sets(const ClusterSpec& cluster) {
  const int n = static_cast<int>(cluster.groups.size());
  const std::vector<std::vector<int>> kinds = merge_identical_groups(cluster).members;
  std::vector<UsedGpus> sets;
  // The set of the first taken[u] groups of each kind u, in cluster order.
  auto add = [&](const std::vector<std::size_t>& taken) {
    std::vector<int> used;
    for (std::size_t u = 0; u < kinds.size(); ++u)
      used.insert(used.end(), kinds[u].begin(), kinds[u].begin() + static_cast<std::ptrdiff_t>(taken[u]));
    std::sort(used.begin(), used.end());
    sets.push_back({std::move(used), 0});
  };
  std::vector<std::size_t> taken(kinds.size(), 0);
  if (n <= kUniformSubsetGroups) {
    // Every count of each kind, as a mixed-radix counter (the first kind
    // counting fastest), the empty set left out.
    while (true) {
      std::size_t k = 0;
      while (k < kinds.size() && taken[k] == kinds[k].size()) taken[k++] = 0;
      if (k == kinds.size()) break;
      ++taken[k];
      add(taken);
    }
  } else if (kinds.size() <= static_cast<std::size_t>(kUniformSubsetGroups)) {
    for (std::uint32_t mask = 1; mask < (1u << kinds.size()); ++mask) {
      for (std::size_t u = 0; u < kinds.size(); ++u) taken[u] = mask & (1u << u) ? kinds[u].size() : 0;
      add(taken);
    }
  } else {
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int g = 0; g < n; ++g) all[static_cast<std::size_t>(g)] = g;
    sets.push_back({std::move(all), 0});
    for (const std::vector<int>& u : kinds) sets.push_back({u, 0});
  }
  // Node prefixes of one group of each kind (any of a kind makes the same
  // plans).
  for (const std::vector<int>& u : kinds) {
    const NodeGroup& g = cluster.groups[u.front()];
    if (g.parts > 1) continue;
    for (long long nodes = 1; nodes < g.nodes; nodes *= 2)
      sets.push_back({{u.front()}, static_cast<int>(nodes) * g.gpus_per_node});
  }
  return sets;
}

// Every uniform candidate on the GPUs `on`.
std::vector<UniformCandidate> uniform_candidates(const Problem& problem, const UsedGpus& on, bool context_parallel) {
  const auto& groups = problem.cluster.groups;
  const std::vector<int>& used = on.groups;
  auto gpus = [&](int g) { return on.gpus(problem.cluster, g); };
  const std::vector<int> batches = searched_micro_batches(problem);
  std::vector<Recompute> modes = problem.training.recompute_modes;
  if (modes.empty()) modes = {Recompute::none};

  std::vector<UniformCandidate> out;
  int total = 0, smallest = 0;
  for (int g : used) {
    total += gpus(g);
    smallest = smallest == 0 ? gpus(g) : std::min(smallest, gpus(g));
  }
  for (int size = 1; size <= smallest; ++size) {
    const bool fits_every_group = std::all_of(used.begin(), used.end(), [&](int g) {
      return gpus(g) % size == 0 && valid_stage_size(size, groups[g].gpus_per_node);
    });
    if (!fits_every_group || total / size > max_pipeline_stages(problem)) continue;
    for (int tp = 1; tp <= size; ++tp) {
      if (size % tp != 0) continue;
      for (int b : batches) {
        if (b <= 0 || problem.training.global_batch % b != 0) continue;
        // B need not divide over all size / tp replicas: context
        // parallelism may group them (refine_uniform_plan checks B over
        // the replicas left).
        const bool valid = std::all_of(used.begin(), used.end(), [&](int g) {
          const auto rule = layout_rule(problem, GroupLayout{g, gpus(g) / size, size, tp, size / tp}, b);
          return !rule || (context_parallel && *rule == PruneRule::dp_not_dividing_micro_batch);
        });
        if (!valid) continue;
        Skeleton s;
        s.micro_batch = b;
        for (int g : used) {
          for (int k = 0; k < gpus(g) / size; ++k) s.stages.push_back({g, k * size, size, tp, size / tp});
        }
        for (Recompute r : modes) out.push_back({s, r});
      }
    }
  }
  return out;
}

// A time no plan on the GPUs of `used` goes below: the iteration's work
// spread over every one of those GPUs at once, each working at the floor
// CostModel::iteration_floor_s prices it at (every op at the fastest
// matrix peak the training's precision allows on its device); the cost
// model adds recompute, communication and the pipeline's bubble on top.
// 0 (no bound) without floors.
double uniform_rate_bound(const Problem& problem, const std::vector<double>& iteration_floor_s, const UsedGpus& on) {
  if (iteration_floor_s.empty()) return 0;
  double iterations_per_s = 0;
  for (int g : on.groups) {
    if (iteration_floor_s[g] <= 0) return 0;
    iterations_per_s += on.gpus(problem.cluster, g) / iteration_floor_s[g];
  }
  return iterations_per_s > 0 ? 1 / iterations_per_s * (1 - 1e-9) : 0;
}

}  // namespace

std::vector<Plan> uniform_plans(const CostModel& cost, int top_k, std::int64_t& evaluated,
                                bool context_and_interleaving, const StopCondition& stop, bool* stopped, int share,
                                int shares) {
  const Problem& problem = cost.problem();
  Incumbent best(top_k, problem.cluster);
  if (stopped) *stopped = false;
  // The sets of most GPUs first: their plans are the likeliest to be the
  // best, and a set whose rate bound is above the K-th best plan found
  // cannot place one (the plans kept are the same in any order:
  // Incumbent's order is total). Skipped only where each candidate costs a
  // refinement (context_and_interleaving); the strategy's own run
  // estimates, and counts, every candidate.
  std::vector<UsedGpus> sets = uniform_group_sets(problem.cluster);
  std::stable_sort(sets.begin(), sets.end(), [&](const UsedGpus& a, const UsedGpus& b) {
    return a.total(problem.cluster) > b.total(problem.cluster);
  });
  // Each group's iteration floor, where the skip test is asked; none where
  // times come from measured profiles, whose corrections may scale an op
  // below its floor.
  std::vector<double> floors;
  if (context_and_interleaving && problem.profiles.empty())
    for (std::size_t g = 0; g < problem.cluster.groups.size(); ++g)
      floors.push_back(cost.iteration_floor_s(static_cast<int>(g)));
  for (std::size_t k = static_cast<std::size_t>(share); k < sets.size(); k += static_cast<std::size_t>(shares)) {
    const UsedGpus& used = sets[k];
    if (stop()) {
      if (stopped) *stopped = true;
      break;
    }
    if (context_and_interleaving && uniform_rate_bound(problem, floors, used) > best.bound()) continue;
    const std::vector<UniformCandidate> candidates = uniform_candidates(problem, used, context_and_interleaving);
    parallel::for_each(candidates.size(), [&](std::size_t i) {
      const UniformCandidate& c = candidates[i];
      const int p = c.skeleton.num_stages();
      Plan plan =
          make_plan(problem, c.skeleton, even_split(problem.model.layers, p), std::vector<Recompute>(p, c.recompute));
      if (context_and_interleaving) {
        plan = refine_uniform_plan(cost, plan, stop);
      } else {
        plan.predicted = cost.estimate(plan);
      }
      best.offer(plan);
    });
    evaluated += static_cast<std::int64_t>(candidates.size());
  }
  return best.plans();
}

namespace strategy {

bool run_uniform(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                 ProgressReporter& progress, SearchResult& result) {
  std::int64_t evaluated = 0;
  bool stopped = false;
  result.top = uniform_plans(cost, options.top_k, evaluated, false, stop, &stopped);
  result.candidates = evaluated;
  result.stats.evaluated = evaluated;
  progress.set_total(evaluated);
  progress.set_done(evaluated);
  progress.add_evaluated(evaluated);
  if (result.top.empty()) result.prune.add(PruneRule::no_feasible_split, evaluated);
  result.prune.considered = evaluated;
  return stopped;  // the best of the group sets tried before the stop
}

}  // namespace strategy
}  // namespace autohaap
