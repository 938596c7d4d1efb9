// Refinement: context parallelism (cp) and interleaving (vpp) for plans the
// search found. The exact search (searcher.hpp) chooses stages, devices,
// tp, dp, vpp, layer split, recompute and B (load_balancer.hpp), and gives
// each stage the least cp that lets its replicas divide B
// (search_space.hpp stage_degrees), the fastest under the model. cp moves
// no GPU or layer between stages: a cp of c turns c of a stage's dp
// replicas into one replica whose sequences are split over those c GPUs
// (Megatron's rank order tp, cp, dp keeps every tensor-parallel group where
// it was). So the other cps are tried on each found plan (and on plans the
// search did not make: uniform plans, replica sets), per stage by coordinate
// descent (each stage in turn takes the cp that makes the plan fastest,
// until no stage changes). A cp changes a stage's sends and activations, so
// each round then tries every vpp again: on a plan with cp 1 everywhere
// that confirms the search's own vpp, after a cp change it can move it. A
// change is kept only when it is strictly faster and every stage still
// fits. The result is exact for vpp and a local optimum for the per-stage
// cp. With measured profiles, a change is also kept only when the plan's
// times rest on no less measurement than before (TimeSource: a measured or
// corrected plan is never traded for a faster analytic one), and finished
// plans rank measured and corrected ones first.
//
// Pure and deterministic: the same plan gives the same refinement whatever
// the thread or rank count. Cost: O(rounds · stages · divisors(dp) +
// layers) plan estimates of O(stages) each.
#pragma once

#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/search/stop_condition.hpp"

namespace autohaap {

// A refinement candidate's iteration time, `plan.predicted` filled in by
// `model`: +infinity when a stage does not fit, a one-device stage's
// replicas do not share the micro-batch evenly, or its times rest on less
// measurement than `least` (TimeSource). The one rule every refinement
// (cp, vpp, uniform plans, mixed stages) compares candidates by.
double candidate_time(const CostModel& model, Plan& plan, TimeSource least = TimeSource::analytic);

// `plan` (predicted filled in by `model`) with the fastest vpp and per-stage
// cp found; `plan` itself when nothing is faster. Once `stop` says so, the
// best found so far.
Plan refine_plan(const CostModel& model, const Plan& plan, const StopCondition& stop = {});

// A plan whose stages share one tp, dp and recompute mode (a uniform plan,
// or a Megatron-runnable one with any layer counts) with the fastest cp and
// vpp that are the same on every stage, as Megatron-LM's --context-parallel-size and
// --virtual-pipeline-model-parallel-size set them: every cp (a divisor of
// the stages' dp) and every vpp the rules allow, estimated; the plan
// unchanged when none is faster. A plan that does not fit without cp (its
// activations halve with cp 2) can fit with it.
Plan refine_uniform_plan(const CostModel& model, const Plan& plan, const StopCondition& stop = {});

struct SearchResult;
struct SearchSettings;

// When the refinement after a search stops: on `cancel` (a signal), and
// once what `time_limit_s` left after the search's `searched_s` is spent on
// `watch`, or a grace of a tenth of the limit (at most a second) when the
// search used it all: the search itself explores cp and vpp, so a plan
// stopped at the limit is whole, and `--time-limit 3` ends near 3 s; no
// deadline without a time limit.
StopCondition refinement_stop(const std::atomic<bool>* cancel, double time_limit_s, double searched_s,
                              const Stopwatch& watch);

// The plans a search answers with: its top plans, plus (autohaap strategy)
// the best uniform plans with their own cp and vpp — cp can make fit what
// the search pruned for memory —, each refined (refine_plans), duplicates
// dropped, at most `settings.top_k`, fastest first. Empty when the search
// found none. One place for one process, MPI ranks, batch entries and the
// runtime comparison, so each answers the same plans. `stop` ends the
// refinement early (refine_plans). Each plan's search.wall_s counts the
// search and this refinement. Runs on settings.threads workers, as the
// search did (an MPI rank's -j is its share of the node).
std::vector<Plan> finish_plans(const CostModel& model, const SearchResult& result, const SearchSettings& settings,
                               const StopCondition& stop = {});

// `result` as it ends once finish_plans ran under `stop`: a search that
// reached its end (found, or gap-reached) whose refinement `stop` then cut
// short (a time limit or a signal) did not end, since the refinement's
// plans lie outside the space its bound covers: it is stopped_with_plan,
// stopped_by that cause. Any other result is returned as it is.
SearchResult after_refinement(const SearchResult& result, const StopCondition& stop);

// What `search` and every `batch` entry answer once the search ended
// (FinishedSearch, searcher.hpp): finish_plans under refinement_stop (the
// time limit `settings` gave the search, less what it used, and `cancel`),
// and the result as after_refinement says it ended.
struct FinishedSearch;
FinishedSearch finish_search(const CostModel& model, const SearchResult& searched, const SearchSettings& settings,
                             const std::atomic<bool>* cancel);

// Refines each plan (refine_plan; refine_uniform_plan when the problem asks
// for Megatron-runnable plans, specs/runnable_by.hpp), then, with
// `mixed_stages` and plans that may mix device types, puts idle GPUs to
// work as replica sets (search/mixed_stages.hpp), and orders them fastest
// first again (stable, so ties keep the search's order). Once `stop` says
// so, the plans not yet refined stay as they are and the mixed stages'
// greedy rounds end with what they made.
void refine_plans(const CostModel& model, std::vector<Plan>& plans, bool mixed_stages, const StopCondition& stop = {});

}  // namespace autohaap
