#include "autohaap/search/refinement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autohaap/search/mixed_stages.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {
namespace {

// Whether every device stage `s` runs on can split its sequences over cp
// (stage_context_parallel_violation, specs/parallel_rules.hpp).
bool cp_runs_on(const Problem& problem, const StagePlan& s, int cp) {
  return stage_context_parallel_violation(problem.cluster, problem.training.runtime, problem.model.head_dim(), s, cp)
      .empty();
}

// Splits stage i's replicas into dp / cp replicas of cp GPUs each.
void set_cp(StagePlan& s, int cp) {
  const int replicas = s.cp * s.dp;
  s.cp = cp;
  s.dp = replicas / cp;
}

bool same_sets(const std::vector<ReplicaSet>& a, const std::vector<ReplicaSet>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const ReplicaSet& x, const ReplicaSet& y) {
    return x.group == y.group && x.first_gpu == y.first_gpu && x.gpus == y.gpus && x.sequences == y.sequences;
  });
}

// The same layout in the top K's sense: the same skeleton (same_skeleton:
// B, each stage's placement and degrees) with the same replica sets on the
// same GPUs, whatever their shares, split, vpp and recompute. Replica sets
// count: the same first set with another device's set beside it is
// another layout.
bool same_layout(const Plan& a, const Plan& b) {
  if (!same_skeleton(a, b)) return false;
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const auto &x = a.stages[i].replicas, &y = b.stages[i].replicas;
    if (!std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const ReplicaSet& r, const ReplicaSet& t) {
          return r.group == t.group && r.first_gpu == t.first_gpu && r.gpus == t.gpus;
        }))
      return false;
  }
  return true;
}

// The same layout: stages, degrees, layers, recompute, replica sets, B and
// vpp.
bool same_plan(const Plan& a, const Plan& b) {
  if (a.vpp != b.vpp || a.micro_batch_size != b.micro_batch_size || a.stages.size() != b.stages.size()) return false;
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const StagePlan &x = a.stages[i], &y = b.stages[i];
    if (x.group != y.group || x.first_gpu != y.first_gpu || x.tp != y.tp || x.cp != y.cp || x.dp != y.dp ||
        x.layer_begin != y.layer_begin || x.layer_end != y.layer_end || x.recompute != y.recompute ||
        !same_sets(x.replicas, y.replicas))
      return false;
  }
  return true;
}

}  // namespace

double candidate_time(const CostModel& model, Plan& plan, TimeSource least) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  plan.predicted = model.estimate(plan);
  for (const StagePlan& s : plan.stages)
    if (!s.has_replica_sets() && plan.micro_batch_size % s.dp != 0) return kNone;
  // With profiles, a measured or corrected plan is never traded for a
  // faster analytic one (search/refinement.hpp).
  if (plan.predicted.time_source > least) return kNone;
  return plan.predicted.fits ? plan.predicted.iteration_time_s : kNone;
}

Plan refine_plan(const CostModel& model, const Plan& plan, const StopCondition& stop) {
  const Problem& problem = model.problem();
  Plan best = plan;
  double best_time = candidate_time(model, best);
  if (problem.model.family == ModelFamily::generic) return best;
  const TimeSource least = best.predicted.time_source;

  const int p = static_cast<int>(plan.stages.size());
  auto try_plan = [&](Plan& candidate) {
    if (stop()) return false;
    const double t = candidate_time(model, candidate, least);
    if (t < best_time) {
      best_time = t;
      best = candidate;
      return true;
    }
    return false;
  };

  bool changed = true;
  for (int round = 0; round < 4 && changed && !stop(); ++round) {
    changed = false;
    // Context parallelism, one stage at a time.
    for (int i = 0; i < p; ++i) {
      if (best.stages[i].has_replica_sets()) continue;  // its sets' shares fix its replicas
      const int replicas = best.stages[i].cp * best.stages[i].dp;
      for (int cp = 1; cp <= replicas; ++cp) {
        if (replicas % cp != 0 || cp == best.stages[i].cp) continue;
        if (!context_parallel_allowed(problem, cp) || !cp_runs_on(problem, best.stages[i], cp)) continue;
        Plan candidate = best;
        set_cp(candidate.stages[i], cp);
        if (best.micro_batch_size % candidate.stages[i].dp != 0) continue;
        changed = try_plan(candidate) || changed;
      }
    }
    // Interleaving: every vpp the rules allow (the search chose one for cp 1;
    // a cp change moves sends and activations, and with them the best vpp).
    std::vector<int> stage_layers;
    for (const StagePlan& s : best.stages) stage_layers.push_back(s.num_layers());
    const int most = *std::min_element(stage_layers.begin(), stage_layers.end());
    for (int vpp = 1; vpp <= most; ++vpp) {
      if (vpp == best.vpp || !interleaving_searched(problem, vpp, stage_layers, best.num_micro_batches)) continue;
      Plan candidate = best;
      candidate.vpp = vpp;
      changed = try_plan(candidate) || changed;
    }
  }
  return best;
}

Plan refine_uniform_plan(const CostModel& model, const Plan& plan, const StopCondition& stop) {
  const Problem& problem = model.problem();
  Plan best = plan;
  double best_time = candidate_time(model, best);
  if (problem.model.family == ModelFamily::generic || plan.stages.empty()) {
    // No cp to group the replicas: B must divide over them all, or the
    // incumbent refuses the plan (a generic model's 3 replicas once shared
    // B = 8 in a written plan no other command accepted).
    if (!std::isfinite(best_time)) best.predicted.fits = false;
    return best;
  }
  const TimeSource least = best.predicted.time_source;
  const int replicas = plan.stages.front().cp * plan.stages.front().dp;
  std::vector<int> stage_layers;
  for (const StagePlan& s : plan.stages) stage_layers.push_back(s.num_layers());
  const int most = *std::min_element(stage_layers.begin(), stage_layers.end());
  for (int cp = 1; cp <= replicas; ++cp) {
    if (replicas % cp != 0 || plan.micro_batch_size % (replicas / cp) != 0) continue;
    if (!context_parallel_allowed(problem, cp) ||
        !std::all_of(plan.stages.begin(), plan.stages.end(), [&](const StagePlan& s) { return cp_runs_on(problem, s, cp); }))
      continue;
    for (int vpp = 1; vpp <= most && !stop(); ++vpp) {
      if (!interleaving_searched(problem, vpp, stage_layers, plan.num_micro_batches)) continue;
      Plan candidate = plan;
      candidate.vpp = vpp;
      for (StagePlan& s : candidate.stages) set_cp(s, cp);
      const double t = candidate_time(model, candidate, least);
      if (t < best_time) {
        best_time = t;
        best = candidate;
      }
    }
  }
  if (!std::isfinite(best_time)) best.predicted.fits = false;  // no valid variant: the incumbent refuses it
  return best;
}

void refine_plans(const CostModel& model, std::vector<Plan>& plans, bool mixed_stages, const StopCondition& stop) {
  // A Megatron-runnable search keeps one cp and vpp for every stage, and
  // one device type per stage.
  const bool uniform = uniform_stages_required(model.problem().runnable_by);
  for (Plan& plan : plans) {
    if (stop()) break;
    const SearchStats stats = plan.search;
    plan = uniform ? refine_uniform_plan(model, plan, stop) : refine_plan(model, plan, stop);
    if (mixed_stages && !uniform) plan = add_idle_replica_sets(model, plan, stop);
    plan.search = stats;
  }
  // With profiles, a plan scored on measured or corrected times ranks
  // before any analytic one (issue of trust, not speed: the analytic model
  // is what the profiles showed to be optimistic).
  const bool by_source = !model.problem().profiles.empty();
  std::stable_sort(plans.begin(), plans.end(), [by_source](const Plan& a, const Plan& b) {
    if (by_source && a.predicted.time_source != b.predicted.time_source)
      return a.predicted.time_source < b.predicted.time_source;
    return a.predicted.iteration_time_s < b.predicted.iteration_time_s;
  });
}

namespace {

// With profiles that measure only part of what the search may use (one
// device type of two), the fastest plans can all be analytic, and the
// answer ranks plans on measured times first (refine_plans): then the
// best plan on measured points is searched for too, as --profiles-only
// searches (exactly, in that space), so the measured plan ranked first is
// that space's best, not whichever measured plan the answer happened to
// hold (GPT-3 125M with A100 profiles on A100 + V100: a uniform A100 plan
// at 1.239 s ranked first where the measured points allow 1.127 s).
std::vector<Plan> best_on_measured_points(const CostModel& model, const std::vector<Plan>& top,
                                          const SearchSettings& settings, const StopCondition& stop) {
  const Problem& problem = model.problem();
  const bool none_measured = std::none_of(top.begin(), top.end(), [](const Plan& p) {
    return p.predicted.time_source == TimeSource::measured;
  });
  if (settings.strategy != "autohaap" || problem.profiles.empty() || problem.profiles_only || !none_measured ||
      stop())
    return {};
  Problem measured = problem;
  measured.profiles_only = true;
  SearchOptions options;
  static_cast<SearchSettings&>(options) = settings;
  options.cancel = stop.cancel;
  options.time_limit_s = stop.deadline_s > 0 && stop.clock ? std::max(1e-3, stop.deadline_s - stop.clock()) : 0.0;
  options.gap = 0;
  return run_search(measured, options).top;
}

std::vector<Plan> finish_plans_here(const CostModel& model, const SearchResult& result, const SearchSettings& settings,
                                    const StopCondition& stop) {
  const Stopwatch refining;
  std::vector<Plan> top = result.top;
  if (top.empty()) return top;
  for (Plan& p : best_on_measured_points(model, top, settings, stop)) {
    const bool known = std::any_of(top.begin(), top.end(), [&](const Plan& q) { return same_plan(p, q); });
    if (!known) top.push_back(std::move(p));
  }
  if (settings.strategy == "autohaap") {
    std::int64_t evaluated = 0;
    std::vector<Plan> uniform =
        result.uniform_searched
            ? result.uniform
            : uniform_plans(model, kAnswerUniformPlans, evaluated, /*context_and_interleaving=*/true, stop);
    for (Plan& u : uniform) {
      const bool known = std::any_of(top.begin(), top.end(), [&](const Plan& p) { return same_plan(p, u); });
      if (!known) {
        u.search = result.stats;
        top.push_back(std::move(u));
      }
    }
  }
  refine_plans(model, top, settings.mixed_stages, stop);
  // One plan per layout, its best, as the search's own top K keeps one
  // per skeleton (incumbent.hpp): the refinement can bring two splits or
  // vpps of one skeleton (a uniform plan's even split beside the
  // search's), which are not two layouts to choose between.
  std::vector<Plan> distinct;
  for (Plan& p : top)
    if (std::none_of(distinct.begin(), distinct.end(), [&](const Plan& q) { return same_layout(p, q); }))
      distinct.push_back(std::move(p));
  top = std::move(distinct);
  if (static_cast<int>(top.size()) > settings.top_k) top.resize(static_cast<std::size_t>(settings.top_k));
  // The time a plan took is the search's and its refinement's. A plan
  // the refinement made faster than the search's bound (mixed stages lie
  // outside the space the bound covers) is at the bound: never a proven
  // bound above the answer.
  for (Plan& p : top) {
    p.search.wall_s = result.stats.wall_s + refining.seconds();
    if (p.search.bound_s > p.predicted.iteration_time_s) {
      p.search.bound_s = p.predicted.iteration_time_s;
      p.search.gap = 0;
    }
  }
  return top;
}

}  // namespace

StopCondition refinement_stop(const std::atomic<bool>* cancel, double time_limit_s, double searched_s,
                              const Stopwatch& watch) {
  const double grace = std::min(1.0, 0.1 * time_limit_s);
  const double left = time_limit_s > 0 ? std::max(grace, time_limit_s - searched_s) : 0.0;
  return StopCondition::of(cancel, left, watch);
}

FinishedSearch finish_search(const CostModel& model, const SearchResult& searched, const SearchSettings& settings,
                             const std::atomic<bool>* cancel) {
  const Stopwatch refining;
  const StopCondition stop = refinement_stop(cancel, settings.time_limit_s, searched.stats.wall_s, refining);
  FinishedSearch out;
  out.plans = finish_plans(model, searched, settings, stop);
  out.result = after_refinement(searched, stop);
  return out;
}

SearchResult after_refinement(const SearchResult& result, const StopCondition& stop) {
  SearchResult out = result;
  if ((result.status == PlanStatus::found || result.status == PlanStatus::gap_reached) && stop()) {
    out.status = PlanStatus::stopped_with_plan;
    out.stopped_by = stop.cause();
  }
  return out;
}

std::vector<Plan> finish_plans(const CostModel& model, const SearchResult& result, const SearchSettings& settings,
                               const StopCondition& stop) {
  // As many workers as the search had (-j), not every core: an MPI rank's
  // share of a node is its -j.
  return parallel::with_threads(settings.threads, [&] { return finish_plans_here(model, result, settings, stop); });
}

}  // namespace autohaap
