// Searcher: the search's one entry point, run_search(problem, options), and
// the pieces the search driver (search_driver.hpp: the autohaap strategy,
// in one process and on every MPI rank) composes the search from.
//
// Strategies, all scored by the same CostModel::estimate of the final plan:
//   autohaap    memory-aware initialization, lower bounds, load balancer and
//               latency cache; skeletons best lower bound first, each skipped
//               once its bound cannot beat the K-th best plan so far. Anytime:
//               it proves a lower bound on the optimum as it goes
//               (SearchStats::bound_s, gap; options.gap stops once close
//               enough).
//   exhaustive  every valid skeleton x every contiguous split x every
//               per-stage recompute mode, each fully estimated; no pruning,
//               no cache. Refused (InputError) when the candidate count
//               exceeds options.exhaustive_limit.
//   reference   every valid skeleton, each given its exact best plan by the
//               load balancer (vpp, split, recompute; checked against brute
//               force); no memory-aware initialization, no bounds between
//               skeletons, no cache: checks the autohaap strategy's pruning
//               on 16-64 GPU cases. Refused (InputError) above
//               options.reference_limit skeletons.
//   uniform     Megatron-style: one (stage size, tp, dp, B, recompute) for
//               every stage, groups in cluster order, layers split evenly.
//   metis       Metis-style: every group order, stage count per group and B;
//               data parallelism first (each group starts at its largest dp
//               without recompute; only groups whose stages overflow memory
//               step to their next option: leaner recompute, then smaller
//               dp), layers balanced on the slowest stage alone; no
//               memory-aware initialization, no cache.
// The result does not depend on the thread count: ties are broken by the
// canonical order of plans (incumbent.hpp).
//
// Thread safety: run_search may be called from any thread; it uses up to
// options.threads workers. Cost: autohaap is dominated by initialization
// (a probe pass, then a keep pass streamed in rounds over the skeletons
// that pass the structural rules, whole subtrees skipped by a bound from
// per-layer rates and capacities, shared by the participants of a
// distributed search; memory O(skeletons kept), capped
// by max_skeletons: past it the best bounds are kept and the rest bound
// the gap) and the skeletons whose lower bound beats the incumbent; exhaustive by its
// candidate count; metis by one balanced plan per (order, counts, B) and
// overflow step. The progress callback is called from one worker
// at a time (never concurrently), at most every progress_interval_s, and
// once at the end from the calling thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/plan_status.hpp"
#include "autohaap/search/cluster_merge.hpp"
#include "autohaap/search/incumbent.hpp"
#include "autohaap/search/init_progress.hpp"
#include "autohaap/search/init_round.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_options.hpp"
#include "autohaap/search/search_space.hpp"
#include "autohaap/search/stop_condition.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

struct SearchProgress {
  std::int64_t done = 0;  // skeletons (exhaustive: candidates) finished or skipped
  std::int64_t total = 0;
  std::int64_t evaluated = 0;  // full plan estimates so far
  std::int64_t pruned = 0;
  double best_iteration_s = std::numeric_limits<double>::infinity();
  // autohaap: a proven lower bound on the iteration time of any plan of the
  // space searched (0: none proven yet, e.g. during initialization); the
  // gap is (best - bound) / best (search_gap).
  double bound_s = 0;
  double elapsed_s = 0;
  // During initialization done/total count its tasks (a group order and a
  // micro-batch size each), not skeletons, and best is the probes' best.
  bool initializing = false;
};

// The relative gap between the best iteration time found and a proven lower
// bound on the optimum: (best - bound) / best, clamped to [0, 1]; 1 while
// there is no plan (best infinite) or no bound (0).
double search_gap(double best_s, double bound_s);

// The settings and what the caller hands the search at run time.
struct SearchOptions : SearchSettings {
  std::function<void(const SearchProgress&)> progress;
  // autohaap: after each round of the initialization (rank 0 only), with
  // `initializing` set; apart from `progress`, whose reports are the
  // search's skeletons.
  std::function<void(const SearchProgress&)> initialization_progress;
  const std::atomic<bool>* cancel = nullptr;  // set by e.g. a signal handler: stop, keep the best so far
  LatencyCache* cache = nullptr;              // autohaap: reuse this cache (e.g. loaded from disk)
  // autohaap with a checkpoint: called once on rank 0 with the best plan
  // when the search ends (finished or stopped), before the final checkpoint
  // is written — that can take seconds, and a launcher that passes on a
  // stop kills the ranks a second later — so the caller can save it first.
  std::function<void(const Plan&)> ended;
  // autohaap: clusters of at most this many node groups are searched with
  // every group apart, identical ones unmerged (cluster_merge.hpp,
  // merge_for_search); 0 merges always (the merged space alone, as tests
  // of it want).
  int groups_searched_apart = kGroupsSearchedApart;
};

struct SearchResult {
  std::vector<Plan> top;  // best first; predicted and search filled
  PruneReport prune;
  SearchStats stats;
  // found / infeasible / stopped (time limit or cancel: `top` is the best
  // so far) with or without a plan; the exit code and summary label follow
  // from it (plan_status.hpp).
  PlanStatus status = PlanStatus::infeasible;
  std::string infeasible_reason;  // set when `top` is empty
  // Why a stopped search stopped, when not a time limit or an interrupt
  // (empty otherwise): the skeleton limit.
  std::string stop_reason;
  // What ended a search short of its end, for the summary's `stopped_by`
  // line: "time-limit", "signal" (the cancel flag: SIGINT, SIGTERM),
  // or "max-skeletons" (stop_reason above); empty when the
  // search ran to its end or reached the requested gap.
  std::string stopped_by;
  std::int64_t candidates = 0;    // size of the strategy's candidate space (saturating)
  // Cost-model calls below a full plan estimate: stage and layer estimates
  // computed (autohaap: latency-cache misses; metis: its balancer's).
  std::int64_t stage_estimates = 0;
  // autohaap: the best kAnswerUniformPlans uniform plans with their own cp
  // and vpp (uniform_plans), which finish_plans adds to `top`, found by
  // the driver after its rounds, the participants sharing the group sets.
  // uniform_searched false where it was not (another strategy, or a stop
  // first): finish_plans then looks for it itself.
  std::vector<Plan> uniform;
  bool uniform_searched = false;
};

// A search's plans once refined, and how it ended then (finish_search,
// search/refinement.hpp).
struct FinishedSearch {
  std::vector<Plan> plans;
  SearchResult result;
};

// SearchSettings, its validate() and search_strategies() are in
// search_options.hpp, with the option table they follow.
SearchResult run_search(const Problem& problem, const SearchOptions& options);

// Candidates the exhaustive strategy would estimate (saturating at
// INT64_MAX): sum over valid skeletons of C(L-1, p-1) * modes^p.
std::int64_t exhaustive_candidates(const Problem& problem);

// Why `strategy` refuses `problem` for its size (the exhaustive and
// reference strategies, checks of small cases: options.exhaustive_limit
// candidates, options.reference_limit skeletons), else "". The strategies
// throw it; a --runnable search asks it of the unrestricted problem its
// comparison searches too, before any plan is written. `size`, when given,
// receives what was counted (candidates, or skeletons up to one past the
// limit).
std::string strategy_size_violation(const Problem& problem, const SearchOptions& options, const std::string& strategy,
                                    std::int64_t* size = nullptr);

// --- pieces of the search driver ---------------------------------------------
// Every participant prepares the skeleton list (it is deterministic); it is
// cut into chunks (cut_into_chunks), searched with a shared Incumbent and a
// LatencyCache, and the plans are merged with merge_top_k (incumbent.hpp).
// A share is searched chunk by chunk so bounds and cache deltas can be
// exchanged in between.

struct PrepareOptions {
  // > 0: first balance a few probe skeletons (the best lower bounds among
  // each (group order, B)'s fastest layouts), then keep only skeletons whose
  // lower bound can beat the K-th best probe plan; the others are counted
  // under lower_bound_above_best and never stored. Valid for a search for
  // at most top_k plans: the probes stay in the list, so that search finds
  // K plans at least as good. 0: keep every skeleton that fits memory.
  int top_k = 0;
  // The most skeletons the list keeps; 0: no limit. Past it, the list
  // keeps the max_skeletons of least (bound, id) and drops the rest, whose
  // least bound (PreparedSearch::dropped_bound_s) then proves how far the
  // search's answer can be from the optimum. A task (one group order and B)
  // keeps at most max_skeletons / 2 itself, cutting to a quarter when it
  // reaches that. A round whose tasks together held more than round_guard
  // at their peaks (the memory guard) is walked again in pieces, each
  // merged and cut before the next.
  std::int64_t max_skeletons = 0;
  // The memory guard, in skeletons; 0: 2 x max_skeletons, at least 500,000.
  // Never below what one task holds at its peak (max_skeletons / 2), so a
  // single task never passes it.
  std::int64_t round_guard = 0;
  // Tasks of at least this weight (their structurally valid skeletons
  // times the arrangements their walk stands for) are walked in slices,
  // each by whichever thread is free (SkeletonWalk::fixed_layouts); 0: the
  // search's own (kSliceWeight, searcher.cpp). What is kept depends on
  // neither.
  double slice_weight = 0;
  // Stop early (PreparedSearch::stopped) when it says so.
  StopCondition stop;
  // > 0: stop early too once the best plan so far is proven within this
  // fraction of the optimum by the rate bound (PreparedSearch::gap_reached);
  // checked whenever plans are offered (probes, dives, each round's).
  double gap = 0;
  // Go on from a saved initialization (a checkpoint's) instead of from the
  // start: the probes are not balanced again, the tasks before its
  // next_task not walked again, and the result is what an initialization
  // never stopped returns. InputError if it was saved for another space.
  const InitProgress* resume = nullptr;
  // With `save`: after each whole round of tasks but the last, when
  // save_due() says so or `stop` does, save(progress) (on the calling
  // thread; it may throw, which ends the initialization).
  std::function<bool()> save_due = [] { return false; };
  std::function<void(const InitProgress&)> save;
  // Once the last round is walked (the probes and dives complete, no stop),
  // walked(progress) with next_task = tasks: resumed from, it skips every
  // round, so a checkpoint of the search that follows keeps it and a
  // killed search does not walk the initialization again.
  std::function<void(const InitProgress&)> walked;
  // After each whole round of tasks (on the calling thread): how many of
  // the tasks are done and the best probe or dive plan so far (infinity:
  // none), for a progress line. Must not throw.
  std::function<void(std::size_t tasks_done, std::size_t tasks, double best_s)> round_done;
  // Shared by `participants` (e.g. the ranks of an MPI job): this one, the
  // `participant`-th, dives from every participants-th probe and walks its
  // blocks of each round, and exchange(its dives or round) returns every
  // participant's, indexed by participant (collective: each calls it once
  // for the dives, once a round and once for the bounds, the same number
  // of times). Every
  // participant returns the same list, the one a participant alone returns.
  int participant = 0;
  int participants = 1;
  std::function<std::vector<InitRound>(const InitRound&)> exchange;
};

struct PreparedSearch {
  // Skeletons left after initialization, lower_bound_s and work filled,
  // ordered by lower bound, then id: the order to search them in.
  std::vector<Skeleton> skeletons;
  PruneReport prune;
  // The probes' plans that fit, best first (a best-so-far answer when
  // stopped), and the bound they set (infinity: none).
  std::vector<Plan> probes;
  double threshold_s = std::numeric_limits<double>::infinity();
  // A lower bound on the iteration time of every plan in the space from
  // per-layer rates alone (no memory, no communication; 0: none): what a
  // search stopped during initialization can still prove.
  double rate_bound_s = 0;
  bool stopped = false;  // cancel, deadline or --gap met: `skeletons` is incomplete
  // Stopped because the best plan so far was within PrepareOptions::gap of
  // the rate bound: the answer asked for, not a cut-short search.
  bool gap_reached = false;
  // Rounds (or pieces of one) walked again in pieces because their tasks
  // passed the memory guard.
  int rounds_split = 0;
  // The least lower bound of any skeleton dropped to keep the list within
  // max_skeletons (infinity: none dropped). Every plan outside the list is
  // at least this slow, so the optimum is at least min(the best plan of the
  // list, dropped_bound_s): the proof a limited search reports.
  double dropped_bound_s = std::numeric_limits<double>::infinity();
};

// Streams the space (enumerate_skeletons): memory is O(kept skeletons), and
// with top_k > 0 whole subtrees of layouts are skipped when even the fastest
// remaining layouts (per-layer rates alone, no memory, no edges) cannot
// beat the probes. Deterministic: the same list for any thread count.
// Cost: one lower bound per skeleton that survives the subtree test and
// fits memory, plus a few dozen probe balances.
PreparedSearch prepare_search(const CostModel& cost, const MemoryPruner& memory, LatencyCache& cache,
                              const PrepareOptions& options = {});

// The best uniform plans (the `uniform` strategy), e.g. to seed an
// Incumbent or to compare with. Adds the plans estimated to `evaluated`.
// With `context_and_interleaving`, each uniform plan also takes its best
// cp and vpp (refine_uniform_plan), and B need only divide over the
// replicas cp leaves; without, the space the exact search covers. The
// groups a plan uses are any subset of the cluster's up to
// kUniformSubsetGroups groups, identical groups (cluster_merge.hpp) told
// apart only by how many are used (the first k of a kind: any k make the
// same plans); beyond, any subset of its kinds of group (a uniform plan
// uses every group of a kind or none), and beyond that many kinds, the
// whole cluster or one kind; and each group's first 1, 2, 4, ... nodes
// alone (fewer than it has), the rest idle.
// `stop` ends the enumeration between subsets with the best so far (and
// sets `*stopped`, where given). With context_and_interleaving, a subset
// whose GPUs cannot run an iteration's FLOPs at their peaks faster than
// the K-th best plan found is skipped, its candidates not counted.
// Shared by `shares` participants, this one (`share`) takes every
// shares-th group set, most GPUs first; merged (merge_top_k), their plans
// are those of one participant alone.
inline constexpr int kUniformSubsetGroups = 12;
// The uniform plans the autohaap answer adds to the search's before the
// refinement (finish_plans: idle GPUs as replica sets, cp, vpp). More than
// the best one: the best after refinement need not come from the best
// before (A10 + V100, GPT-3 125M, ZeRO-3: the best uniform plan, on 4 of 6
// V100s with cp, stayed at 0.22 s; the second, on 4 V100s without, took
// the A10s as replicas to 0.19 s, and which came first had depended on
// the order the cluster file listed its groups).
inline constexpr int kAnswerUniformPlans = 4;
std::vector<Plan> uniform_plans(const CostModel& cost, int top_k, std::int64_t& evaluated,
                                bool context_and_interleaving = false, const StopCondition& stop = {},
                                bool* stopped = nullptr, int share = 0, int shares = 1);

struct ShareControl {
  StopCondition stop;  // asked before and inside every skeleton
  // After each skeleton balanced (any worker, possibly concurrently):
  // whether it produced a fully estimated plan. `open_bound` is updated
  // before it is called.
  std::function<void(bool estimated)> on_skeleton;
  // When set, kept equal to the least lower bound over the share's
  // skeletons not balanced yet and `rest_bound` (the least lower bound of
  // what the caller still holds after this share): with the incumbent's
  // best, a proven lower bound on the optimum (the search's gap). A
  // skeleton skipped by the bound stays counted: its lower bound is already
  // above the incumbent's best, so it never lowers that minimum.
  std::atomic<double>* open_bound = nullptr;
  double rest_bound = std::numeric_limits<double>::infinity();
};

struct ShareOutcome {
  std::int64_t done = 0;       // skeletons balanced or skipped
  std::int64_t evaluated = 0;  // plans fully estimated
  PruneReport pruned;          // lower_bound_above_best, no_feasible_split
  bool stopped = false;        // deadline or cancel hit before the share was finished
};

// Searches skeletons[positions[j]] in the given order (ascending positions
// keep best-first order), offering each skeleton's best plan to `incumbent`
// (the balancer is exact: that plan is the skeleton's optimum).
// Once a skeleton's lower bound exceeds incumbent.bound(), it and every later
// one are skipped, so positions must be in ascending lower-bound order.
ShareOutcome search_share(const CostModel& cost, const MemoryPruner& memory, LatencyCache& cache,
                          const std::vector<Skeleton>& skeletons, std::span<const std::size_t> positions,
                          Incumbent& incumbent, const ShareControl& control);

// A contiguous run [begin, end) of the best-first skeleton list and its
// estimated work (sum of Skeleton::work): the unit a driver deals out,
// searches whole and records as done.
struct SkeletonChunk {
  std::size_t begin = 0, end = 0;
  double work = 0;
};

// Cuts positions 0..n-1 of `skeletons` into min(count, n) contiguous
// chunks of about equal estimated work, none empty; deterministic.
// Contiguous, so each chunk is itself in lower-bound order (what
// search_share needs) and the first chunks hold the most promising
// skeletons: dealt round-robin, every share starts near the front.
std::vector<SkeletonChunk> cut_into_chunks(const std::vector<Skeleton>& skeletons, std::size_t count);
// The chunks ending at `ends` (ascending, the last == skeletons.size(), as
// a checkpoint records them), with their work.
std::vector<SkeletonChunk> chunks_ending_at(const std::vector<Skeleton>& skeletons,
                                            const std::vector<std::uint64_t>& ends);

}  // namespace autohaap
