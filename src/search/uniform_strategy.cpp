// The Megatron-style baseline: one stage size, tp, dp, micro-batch size and
// recompute mode for every stage, the used groups in cluster order, layers
// split evenly (the remainder to the first stages), optionally each with
// its best context-parallel degree and interleaving (search/refinement.hpp).
// Every such plan is estimated; the best that fit are kept.
#include <algorithm>

#include "autohaap/search/parallel.hpp"
#include "autohaap/search/refinement.hpp"
#include "strategies.hpp"

namespace autohaap {
namespace {

struct UniformCandidate {
  Skeleton skeleton;
  Recompute recompute;
};

std::vector<UniformCandidate> uniform_candidates(const Problem& problem, bool context_parallel) {
  const auto& groups = problem.cluster.groups;
  const int n = static_cast<int>(groups.size());
  const int layers = problem.model.layers;
  const std::vector<int> batches = searched_micro_batches(problem);
  std::vector<Recompute> modes = problem.training.recompute_modes;
  if (modes.empty()) modes = {Recompute::none};

  std::vector<UniformCandidate> out;
  // Every non-empty subset of groups, kept in cluster order (a bit mask;
  // clusters have a handful of groups).
  const int subsets = n < 24 ? 1 << n : 0;
  for (int mask = 1; mask < subsets; ++mask) {
    std::vector<int> used;
    int total = 0, smallest = 0;
    for (int g = 0; g < n; ++g) {
      if (!(mask & (1 << g))) continue;
      used.push_back(g);
      total += groups[g].gpus();
      smallest = smallest == 0 ? groups[g].gpus() : std::min(smallest, groups[g].gpus());
    }
    for (int size = 1; size <= smallest; ++size) {
      const bool fits_every_group = std::all_of(used.begin(), used.end(), [&](int g) {
        return groups[g].gpus() % size == 0 && valid_stage_size(size, groups[g].gpus_per_node);
      });
      if (!fits_every_group || total / size > layers) continue;
      for (int tp = 1; tp <= size; ++tp) {
        if (size % tp != 0) continue;
        for (int b : batches) {
          if (b <= 0 || problem.training.global_batch % b != 0) continue;
          // B need not divide over all size / tp replicas: context
          // parallelism may group them (refine_uniform_plan checks B over
          // the replicas left).
          const bool valid = std::all_of(used.begin(), used.end(), [&](int g) {
            const auto rule = layout_rule(problem, GroupLayout{g, groups[g].gpus() / size, size, tp, size / tp}, b);
            return !rule || (context_parallel && *rule == PruneRule::dp_not_dividing_micro_batch);
          });
          if (!valid) continue;
          Skeleton s;
          s.micro_batch = b;
          for (int g : used) {
            for (int k = 0; k < groups[g].gpus() / size; ++k) s.stages.push_back({g, k * size, size, tp, size / tp});
          }
          for (Recompute r : modes) out.push_back({s, r});
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<Plan> uniform_plans(const CostModel& cost, int top_k, std::int64_t& evaluated,
                                bool context_and_interleaving) {
  const Problem& problem = cost.problem();
  const std::vector<UniformCandidate> candidates = uniform_candidates(problem, context_and_interleaving);
  Incumbent best(top_k);
  parallel::for_each(candidates.size(), [&](std::size_t i) {
    const UniformCandidate& c = candidates[i];
    const int p = c.skeleton.num_stages();
    Plan plan =
        make_plan(problem, c.skeleton, even_split(problem.model.layers, p), std::vector<Recompute>(p, c.recompute));
    if (context_and_interleaving) {
      plan = refine_uniform_plan(cost, plan);
    } else {
      plan.predicted = cost.estimate(plan);
    }
    best.offer(plan);
  });
  evaluated += static_cast<std::int64_t>(candidates.size());
  return best.plans();
}

namespace strategy {

bool run_uniform(const CostModel& cost, const SearchOptions& options, const StopCondition&, ProgressReporter& progress,
                 SearchResult& result) {
  std::int64_t evaluated = 0;
  result.top = uniform_plans(cost, options.top_k, evaluated);
  result.candidates = evaluated;
  result.stats.evaluated = evaluated;
  progress.set_total(evaluated);
  progress.set_done(evaluated);
  progress.add_evaluated(evaluated);
  if (result.top.empty()) result.prune.add(PruneRule::no_feasible_split, evaluated);
  result.prune.considered = evaluated;
  return false;  // never stops early: a few hundred estimates
}

}  // namespace strategy
}  // namespace autohaap
