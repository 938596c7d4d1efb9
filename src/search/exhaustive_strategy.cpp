// The reference optimum: every structurally valid skeleton x every vpp the
// interleaving rule allows (specs/parallel_rules.hpp) x every contiguous
// layer split (interleaved: stages of equal layers, at least vpp each, as
// interleaving_searched allows, search/search_space.hpp) x every per-stage recompute
// mode (one mode for all stages in a Megatron-runnable search), each scored with
// a full CostModel::estimate. No memory pruning, no bounds, no cache: only
// for small problems, hence the candidate limit.
#include <algorithm>

#include "autohaap/error.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "strategies.hpp"

namespace autohaap::strategy {
namespace {

// Next composition of `layers` into ends[0..p-1] (every stage >= 1 layer),
// lexicographic on the ends; false after the last.
bool next_split(std::vector<int>& ends, int layers) {
  const int p = static_cast<int>(ends.size());
  for (int k = p - 2; k >= 0; --k) {
    const int limit = layers - (p - 1 - k);  // leave one layer per later stage
    if (ends[k] < limit) {
      ++ends[k];
      for (int j = k + 1; j < p - 1; ++j) ends[j] = ends[j - 1] + 1;
      return true;
    }
  }
  return false;
}

}  // namespace

bool run_exhaustive(const CostModel& cost, const SearchOptions& options, const StopCondition& stop,
                    ProgressReporter& progress, SearchResult& result) {
  const Problem& problem = cost.problem();
  // Counted (streaming) before the list is built: a refused problem must
  // not first materialize its skeletons.
  if (const std::string why = strategy_size_violation(problem, options, "exhaustive", &result.candidates); !why.empty())
    throw InputError("search options", "strategy", "exhaustive", why);
  const SearchSpace space(problem);
  const SkeletonList list = initialize_skeletons(space, nullptr);
  result.prune = list.report;

  std::vector<Recompute> modes = problem.training.recompute_modes;
  if (modes.empty()) modes = {Recompute::none};
  const int layers = problem.model.layers;
  // A Megatron-runnable search gives every stage one recompute mode
  // (specs/runnable_by.hpp); its skeletons already share one stage shape.
  const bool one_mode = uniform_stages_required(problem.runnable_by);
  const ClusterSpec& cluster = cost.problem().cluster;
  return sweep_skeletons(list.skeletons, options.top_k, cluster, stop, progress, result, [&](const Skeleton& s) {
    SkeletonBest out;
    const int p = s.num_stages();
    if (p > max_pipeline_stages(problem)) {
      out.skipped = true;
      return out;
    }
    const int most_vpp = max_interleaving(problem.model, problem.training.runtime, p, num_micro_batches(problem, s));
    std::vector<int> ends(p);
    std::vector<int> mode(p, 0);
    Plan plan = make_plan(problem, s, even_split(layers, p), std::vector<Recompute>(p, modes[0]));
    for (int vpp = 1; vpp <= most_vpp; ++vpp) {
      plan.vpp = vpp;
      for (int i = 0; i < p; ++i) ends[i] = i + 1;
      ends[p - 1] = layers;
      do {
        int begin = 0;
        std::vector<int> stage_layers;
        for (int i = 0; i < p; ++i) {
          plan.stages[i].layer_begin = begin;
          plan.stages[i].layer_end = ends[i];
          stage_layers.push_back(ends[i] - begin);
          begin = ends[i];
        }
        // Every stage holds a layer per chunk, and equal layers where interleaved.
        if (!interleaving_searched(problem, vpp, stage_layers, plan.num_micro_batches)) continue;
        std::fill(mode.begin(), mode.end(), 0);
        while (true) {
          for (int i = 0; i < p; ++i) plan.stages[i].recompute = modes[mode[i]];
          plan.predicted = cost.estimate(plan);
          ++out.evaluated;
          if (plan.predicted.fits && (!out.plan || plan_before(plan, *out.plan))) out.plan = plan;
          if (one_mode) {  // every stage the same mode, the next one
            if (++mode[0] == static_cast<int>(modes.size())) break;
            std::fill(mode.begin(), mode.end(), mode[0]);
            continue;
          }
          int i = p - 1;
          while (i >= 0 && ++mode[i] == static_cast<int>(modes.size())) mode[i--] = 0;
          if (i < 0) break;
        }
      } while (next_split(ends, layers));
    }
    return out;
  });
}

}  // namespace autohaap::strategy
