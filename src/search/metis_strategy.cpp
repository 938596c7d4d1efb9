// The Metis-style baseline (Um et al., "Metis: Fast Automatic Distributed
// Training on Heterogeneous GPUs", USENIX ATC 2024), under this project's
// cost model: every group order, every number of stages per group and every
// micro-batch size; inside a stage data parallelism first — each group
// starts at its largest dp (and the fastest recompute) and only the groups
// whose stages overflow memory step to the next intra-stage option (leaner
// recompute, then smaller dp / larger tp). Layers are balanced on the
// slowest stage alone. No memory-aware initialization (overflow is found by
// scoring a plan) and no latency cache.
#include <algorithm>
#include <map>

#include "autohaap/search/metis_balancer.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/units.hpp"
#include "strategies.hpp"

namespace autohaap::strategy {
namespace {

struct Option {
  GroupLayout layout;
  Recompute recompute;
};

// One (group order, micro-batch size, stages per group) to explore; per
// used group its intra-stage options in the order Metis tries them.
struct Task {
  int micro_batch = 0;
  std::vector<std::vector<Option>> options;
};

std::vector<Task> metis_tasks(const SearchSpace& space) {
  const Problem& problem = space.problem();
  std::vector<Recompute> modes = problem.training.recompute_modes;
  if (modes.empty()) modes = {Recompute::none};
  std::sort(modes.begin(), modes.end());
  std::vector<Task> tasks;
  for (const auto& order : space.group_orders()) {
    for (int b : space.micro_batches()) {
      if (problem.training.global_batch % b != 0) continue;
      // Per group: stage count -> valid options, largest dp first.
      std::vector<std::map<int, std::vector<Option>>> by_count(order.size());
      for (std::size_t j = 0; j < order.size(); ++j) {
        for (const GroupLayout& layout : space.layouts(order[j])) {
          // Metis has no context parallelism: each replica takes whole
          // sequences, so its dp divides B.
          if (layout_rule(problem, layout, b) || b % layout.dp != 0) continue;
          for (Recompute r : modes) by_count[j][layout.stages].push_back({layout, r});
        }
        for (auto& [count, options] : by_count[j]) {
          std::stable_sort(options.begin(), options.end(),
                           [](const Option& x, const Option& y) { return x.layout.dp > y.layout.dp; });
        }
      }
      if (std::any_of(by_count.begin(), by_count.end(), [](const auto& m) { return m.empty(); })) continue;
      // Every combination of stage counts (mixed radix over the maps).
      std::vector<std::map<int, std::vector<Option>>::const_iterator> it(order.size());
      for (std::size_t j = 0; j < order.size(); ++j) it[j] = by_count[j].begin();
      while (true) {
        int stages = 0;
        for (std::size_t j = 0; j < order.size(); ++j) stages += it[j]->first;
        if (stages <= max_pipeline_stages(problem)) {
          Task task;
          task.micro_batch = b;
          for (std::size_t j = 0; j < order.size(); ++j) task.options.push_back(it[j]->second);
          tasks.push_back(std::move(task));
        }
        int j = static_cast<int>(order.size()) - 1;
        for (; j >= 0; --j) {
          if (++it[j] != by_count[j].end()) break;
          it[j] = by_count[j].begin();
        }
        if (j < 0) break;
      }
    }
  }
  return tasks;
}

}  // namespace

bool run_metis(const CostModel& cost, const SearchOptions& options, const StopCondition& stop, ProgressReporter& progress,
               SearchResult& result) {
  const Problem& problem = cost.problem();
  // Metis places every GPU of the groups it uses: no partial shares.
  const SearchSpace space(problem, /*every_share=*/false);
  const std::vector<Task> tasks = metis_tasks(space);
  const MetisBalancer balancer(cost);
  Incumbent incumbent(options.top_k, problem.cluster);
  std::atomic<std::int64_t> evaluated{0}, without_fit{0};
  std::atomic<bool> stopped{false};
  result.candidates = static_cast<std::int64_t>(tasks.size());
  progress.set_total(result.candidates);

  parallel::for_each_in_order(tasks.size(), [&](std::size_t t) {
    if (stop()) {
      stopped.store(true);
      return false;
    }
    const Task& task = tasks[t];
    std::vector<std::size_t> choice(task.options.size(), 0);
    bool fitted = false;
    while (true) {
      Skeleton s;
      s.micro_batch = task.micro_batch;
      std::vector<Recompute> recompute;
      std::vector<int> group_of_stage;
      for (std::size_t j = 0; j < task.options.size(); ++j) {
        const Option& o = task.options[j][choice[j]];
        for (int k = 0; k < o.layout.stages; ++k) {
          s.stages.push_back(
              {o.layout.group, k * o.layout.gpus_per_stage, o.layout.gpus_per_stage, o.layout.tp, o.layout.dp});
          recompute.push_back(o.recompute);
          group_of_stage.push_back(static_cast<int>(j));
        }
      }
      const BalancedSplit split = balancer.balance(s, recompute);
      Plan plan = make_plan(problem, s, split.layer_end, split.recompute);
      plan.predicted = cost.estimate(plan);
      evaluated.fetch_add(1, std::memory_order_relaxed);
      progress.add_evaluated(1);
      if (plan.predicted.fits) {
        incumbent.offer(plan);
        progress.set_best(plan.predicted.iteration_time_s);
        fitted = true;
        break;
      }
      // Step every group with an overflowing stage to its next option.
      std::vector<bool> overflow(task.options.size(), false);
      for (int i = 0; i < s.num_stages(); ++i) {
        if (plan.predicted.stage_memory_GiB[i] * kGiB > cost.capacity_bytes(s.stages[i].group)) {
          overflow[group_of_stage[i]] = true;
        }
      }
      bool exhausted = false, stepped = false;
      for (std::size_t j = 0; j < choice.size(); ++j) {
        if (!overflow[j]) continue;
        stepped = true;
        if (++choice[j] == task.options[j].size()) exhausted = true;
      }
      if (exhausted || !stepped) break;
    }
    if (!fitted) without_fit.fetch_add(1, std::memory_order_relaxed);
    progress.add_done(1);
    progress.tick();
    return true;
  });

  result.top = incumbent.plans();
  result.stats.evaluated = evaluated.load();
  result.stage_estimates = balancer.stage_estimates();
  result.prune.considered = result.candidates;
  result.prune.add(PruneRule::no_feasible_split, without_fit.load());
  return stopped.load();
}

}  // namespace autohaap::strategy
