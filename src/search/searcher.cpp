#include "autohaap/search/searcher.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

#include "autohaap/error.hpp"
#include "autohaap/search/cluster_split.hpp"
#include "autohaap/search/incumbent.hpp"
#include "autohaap/search/load_balancer.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/search/search_driver.hpp"
#include "autohaap/search/split_lower_bound.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/units.hpp"
#include "strategies.hpp"

namespace autohaap {

SearchResult run_search(const Problem& problem, const SearchOptions& options) {
  validate(options);
  if (options.strategy == "autohaap") {
    // The one driver, alone: one chunk, so the whole list is searched best
    // lower bound first in one pass, with progress per skeleton.
    LocalSynchronizer alone;
    DriverOptions driver;
    driver.chunks_per_rank = 1;
    driver.live_progress = true;
    return drive_search(problem, options, driver, alone).result;
  }
  // The references answer over the space the autohaap search takes: with
  // the halves of a small space's groups (cluster_split.hpp).
  const bool reference = options.strategy == "exhaustive" || options.strategy == "reference";
  const ClusterSplit split = reference ? split_groups(problem) : ClusterSplit{problem, {}, {}};
  const CostModel cost(split.problem);
  const Stopwatch clock;
  const StopCondition stop = StopCondition::of(options.cancel, options.time_limit_s, clock);
  strategy::ProgressReporter progress(options, clock);
  SearchResult result;
  const int threads = parallel::usable_threads(options.threads);
  bool stopped = false;
  parallel::with_threads(threads, [&] {
    if (options.strategy == "exhaustive")
      stopped = strategy::run_exhaustive(cost, options, stop, progress, result);
    else if (options.strategy == "reference")
      stopped = strategy::run_reference(cost, options, stop, progress, result);
    else if (options.strategy == "uniform")
      stopped = strategy::run_uniform(cost, options, stop, progress, result);
    else
      stopped = strategy::run_metis(cost, options, stop, progress, result);
  });
  if (split.split())
    for (Plan& plan : result.top) plan = unsplit_plan(plan, split);
  result.status = search_status(!result.top.empty(), stopped);
  if (stopped) result.stopped_by = stop.cause_of_stop();

  result.stats.strategy = options.strategy;
  result.stats.threads = threads;
  result.stats.ranks = 1;
  result.stats.wall_s = clock.seconds();
  // The exhaustive and reference strategies prove their optimum by
  // finishing; the others prove no bound (the SearchStats defaults: 0, gap 1).
  if (reference && !stopped) {
    result.stats.bound_s = result.top.empty() ? 0 : result.top.front().predicted.iteration_time_s;
    result.stats.gap = 0;
  }
  for (Plan& plan : result.top) plan.search = result.stats;
  if (result.top.empty()) {
    result.infeasible_reason = stopped ? "the search stopped (time limit or interrupt) before any plan that "
                                                  "fits memory was found"
                                                : infeasible_reason(CostModel(problem), result.prune);  // as given, not halved
  }
  progress.finish();
  return result;
}

double search_gap(double best_s, double bound_s) {
  if (!(best_s > 0) || !std::isfinite(best_s) || !(bound_s > 0)) return 1.0;
  return std::clamp((best_s - bound_s) / best_s, 0.0, 1.0);
}

std::int64_t exhaustive_candidates(const Problem& problem) {
  // Streamed: the structurally valid skeletons of a large cluster would not
  // fit in memory, and this count is what refuses such a problem.
  const SearchSpace space(problem);
  const int layers = problem.model.layers;
  const long double modes = std::max<std::size_t>(1, problem.training.recompute_modes.size());
  const long double cap = static_cast<long double>(std::numeric_limits<std::int64_t>::max());
  long double total = 0;
  stream_structural_skeletons(
      space,
      [&](Skeleton&& s) {
        // Every split at vpp 1; interleaved, the one of equal layers
        // (interleaving_searched), where p divides L.
        const int p = s.num_stages();
        const int most = max_interleaving(problem.model, problem.training.runtime, p, num_micro_batches(problem, s));
        long double n = static_cast<long double>(count_splits(layers, p));
        if (layers % p == 0) n += std::max(0, most - 1);
        for (int i = 0; i < p && n < cap; ++i) n *= modes;
        total += n;
      },
      [&] { return total >= cap; });
  if (total >= cap) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(total);
}

std::string strategy_size_violation(const Problem& problem, const SearchOptions& options, const std::string& strategy,
                                    std::int64_t* size) {
  if (strategy == "exhaustive") {
    // Counted (streaming) before the list is built: a refused problem must
    // not first materialize its skeletons.
    const std::int64_t candidates = exhaustive_candidates(problem);
    if (size) *size = candidates;
    if (candidates <= options.exhaustive_limit) return "";
    return "a problem of at most " + std::to_string(options.exhaustive_limit) +
           " candidates for the exhaustive reference (a check of small cases); this one has " +
           (candidates == std::numeric_limits<std::int64_t>::max() ? std::string("more than 9.2e18")
                                                                   : std::to_string(candidates)) +
           ": use --strategy autohaap, whose answer is the same optimum with a proof";
  }
  if (strategy == "reference") {
    // Counted (streaming) up to one past the limit.
    std::int64_t count = 0;
    stream_structural_skeletons(SearchSpace(problem), [&](Skeleton&&) { ++count; },
                                [&] { return count > options.reference_limit; });
    if (size) *size = count;
    if (count <= options.reference_limit) return "";
    return "a problem of at most " + std::to_string(options.reference_limit) +
           " structurally valid skeletons for the wide reference (a check of 16-64 GPU cases); this one has more: "
           "use --strategy autohaap, whose answer is the same optimum with a proof";
  }
  return "";
}

namespace {

// Relative slack of every bound comparison, as in search_share: rounding
// must never drop a skeleton that ties the threshold.
constexpr double kBoundSlack = 1e-9;

// Per position of one (group order, B): the structurally valid layouts and,
// when every one has identical layers, each one's layer rate k / tau
// (layers per second the group's k stages could process together, ignoring
// memory and edges).
struct TaskLayouts {
  std::vector<std::vector<int>> ok;
  std::vector<std::vector<double>> tau;   // per position, per ok layout
  std::vector<std::vector<double>> rate;  // k / tau
  bool rated = false;                     // every tau known
};

// One piece of a task of the initialization's walk: its first positions'
// layouts fixed (SkeletonWalk::fixed_layouts; none: the whole task), and
// whether it counts what the structural rules remove from the task.
struct TaskSlice {
  std::vector<int> fixed_layouts;
  bool counts_structure = true;
};

// Per (group, B): each structurally valid layout's layer time tau in the
// fastest mode — infinity where a stage of it cannot hold one layer even
// where memory is least loaded (it only ever appears in skeletons the
// memory rules remove: no latency for it, so an impossible problem is
// still rejected before any is computed), NaN where its layers differ.
// What task_layouts gathers for every group order the group appears in,
// computed once: a cluster of eight groups has 110,000 orders, and asking
// the cache and the memory memo again per order was most of its probe
// pass (47 of 48 s for Llama 3 70B on eight groups of 64 GPUs).
class LayoutTaus {
 public:
  LayoutTaus(const SearchSpace& space, const MemoryPruner& memory, const LoadBalancer& balancer)
      : num_b_(space.micro_batches().size()), of_(space.problem().cluster.groups.size() * num_b_) {
    const Problem& problem = space.problem();
    parallel::for_each(of_.size(), [&](std::size_t k) {
      const int group = static_cast<int>(k / num_b_);
      const int micro_batch = space.micro_batches()[k % num_b_];
      const auto& layouts = space.layouts(group);
      std::vector<double>& tau = of_[k];
      tau.assign(layouts.size(), std::numeric_limits<double>::quiet_NaN());
      if (problem.training.global_batch % micro_batch != 0) return;
      for (std::size_t li = 0; li < layouts.size(); ++li) {
        const GroupLayout& g = layouts[li];
        if (layout_rule(problem, g, micro_batch)) continue;  // never asked: no ordering holds it
        const StageSlot slot{g.group, 0, g.gpus_per_stage, g.tp, g.dp};
        if (memory.max_layers_anywhere_leanest(slot, micro_batch) == 0) {
          tau[li] = std::numeric_limits<double>::infinity();
          continue;
        }
        const auto t = balancer.layer_time(slot, micro_batch);
        if (t && *t > 0) tau[li] = *t;
      }
    });
  }
  double tau(int group, int b, int layout_index) const {
    return of_[static_cast<std::size_t>(group) * num_b_ + static_cast<std::size_t>(b)][layout_index];
  }

 private:
  std::size_t num_b_;
  std::vector<std::vector<double>> of_;
};

// Per stage shape (group, GPUs, tp, dp): the least tail (gradient sync and
// optimizer step, CostModel::stage_tail_floor) a stage of that shape has
// holding one layer as a middle stage, wherever in its group it sits.
// Every stage of a pipeline holds at least one layer; more layers, the
// edges (a first or last stage's embedding and output layer) and a
// backward too short to hide the sync only add to a tail, and the tail
// does not depend on B (it reduces what the stage's replicas hold). So a
// skeleton's iteration time is at least its pipeline bound plus the
// largest floor of its stages (the walk's pipeline bounds leave the tail
// out), or the least floor of its shapes holding ceil(L / p) layers (some
// stage holds that many), and an order's open positions add at least the
// least floor of their groups' layouts. An interleaved plan gives every
// stage its L / p layers (interleaving_searched), so its tail is at least
// the largest floor of its stages holding that many (interleaved): what
// the bounds' interleaved terms pay beyond the plain one's tail
// (split_lower_bound.hpp). Zero for generic layer lists (their layers
// differ: tail_lower_bound leaves them out too).
class StageTailFloors {
 public:
  StageTailFloors(const SearchSpace& space, const CostModel& cost)
      : space_(space), cost_(cost), shapes_(space.problem().cluster.groups.size()), shape_of_(shapes_.size()) {
    const Problem& problem = space.problem();
    transformer_ = problem.model.family != ModelFamily::generic && problem.model.layers >= 1;
    if (!transformer_) return;
    for (std::size_t group = 0; group < shapes_.size(); ++group) {
      for (const GroupLayout& layout : space.layouts(static_cast<int>(group))) {
        if (const Shape* known = shape(layout.group, layout.gpus_per_stage, layout.tp, layout.dp)) {
          shape_of_[group].push_back(static_cast<int>(known - shapes_[group].data()));
          continue;
        }
        Shape shape{layout.gpus_per_stage, layout.tp, layout.dp, 0.0, nullptr};
        shape.floor = least_tail(static_cast<int>(group), shape, 1);
        shape.holding = std::make_unique<std::atomic<double>[]>(static_cast<std::size_t>(problem.model.layers));
        for (int k = 0; k < problem.model.layers; ++k)
          shape.holding[k].store(k == 0 ? shape.floor : kNotYet, std::memory_order_relaxed);
        shape_of_[group].push_back(static_cast<int>(shapes_[group].size()));
        shapes_[group].push_back(std::move(shape));
      }
    }
  }
  // The floor of a stage of layout space.layouts(group)[layout_index]:
  // what the walk's prefix test reads, once per prefix.
  double floor(int group, int layout_index) const {
    return transformer_ ? shapes_[group][shape_of_[group][layout_index]].floor : 0.0;
  }
  // The same holding `layers` layers (1 to the model's; 0 for a generic
  // layer list).
  double floor(int group, int layout_index, int layers) const {
    return transformer_ ? holding(group, shapes_[group][shape_of_[group][layout_index]], layers) : 0.0;
  }
  // The least tail of an interleaved plan of the skeleton: the largest
  // floor of its stages holding L / p layers; 0 where p does not divide
  // the layers (it cannot interleave) or for a generic layer list.
  double interleaved(const Skeleton& skeleton) const {
    const int p = skeleton.num_stages(), L = space_.problem().model.layers;
    if (!transformer_ || p < 1 || L % p != 0) return 0;
    double most = 0;
    for (const StageSlot& slot : skeleton.stages) {
      const Shape* s = shape(slot.group, slot.gpus, slot.tp, slot.dp);
      if (s) most = std::max(most, holding(slot.group, *s, L / p));
    }
    return most;
  }
  // A skeleton's: the largest floor of its stages (0 for a generic layer
  // list), and, since some stage of p holds at least ceil(L / p) layers
  // and a tail grows with the layers, at least the least floor of its
  // stages' shapes holding that many.
  double floor(const Skeleton& skeleton) const {
    if (!transformer_ || skeleton.stages.empty()) return 0;
    const int p = skeleton.num_stages(), L = space_.problem().model.layers;
    const int most = std::min(L, (L + p - 1) / p);
    double one = 0, holding_most = kInf;
    bool known = true;  // every stage of a layout's shape
    for (const StageSlot& slot : skeleton.stages) {
      const Shape* s = shape(slot.group, slot.gpus, slot.tp, slot.dp);
      known = known && s;
      if (!s) continue;
      one = std::max(one, s->floor);
      holding_most = std::min(holding_most, holding(slot.group, *s, most));
    }
    return known ? std::max(one, holding_most) : one;
  }

 private:
  static constexpr double kNotYet = -1;
  struct Shape {
    int gpus, tp, dp;
    double floor;  // holding one layer
    // [k - 1]: holding k layers, kNotYet until asked (threads that race
    // compute the same value).
    std::unique_ptr<std::atomic<double>[]> holding;
  };
  const Shape* shape(int group, int gpus, int tp, int dp) const {
    for (const Shape& s : shapes_[group])
      if (s.gpus == gpus && s.tp == tp && s.dp == dp) return &s;
    return nullptr;
  }
  double holding(int group, const Shape& s, int layers) const {
    std::atomic<double>& entry = s.holding[layers - 1];
    double floor = entry.load(std::memory_order_relaxed);
    if (floor == kNotYet) {
      floor = least_tail(group, s, layers);
      entry.store(floor, std::memory_order_relaxed);
    }
    return floor;
  }
  // The least tail of a middle stage (of three) of this shape holding
  // `layers` layers, at every place a stage of this shape can take in its
  // group (a stage across a node boundary reduces over the NICs); its
  // replicas dp, whatever cp B later asks. Where a place's stage crosses a
  // node depends on its first GPU modulo the node, so the places repeat
  // every lcm(stage, node) GPUs: at most a node's GPUs of them are priced,
  // however large the group.
  double least_tail(int group, const Shape& shape, int layers) const {
    const Problem& problem = space_.problem();
    const NodeGroup& g = problem.cluster.groups[group];
    double least = std::numeric_limits<double>::infinity();
    const long long period = std::lcm<long long>(shape.gpus, g.gpus_per_node);
    const long long places = std::min<long long>(g.gpus(), period);
    for (int first = 0; first + shape.gpus <= places; first += shape.gpus) {
      StagePlan stage;
      stage.group = group;
      stage.device = g.device.name;
      stage.first_gpu = first;
      stage.gpus = shape.gpus;
      stage.tp = shape.tp;
      stage.dp = shape.dp;
      stage.layer_end = layers;
      Plan plan;
      plan.zero = problem.training.zero;
      plan.stages = {stage, stage, stage};
      least = std::min(least, cost_.stage_tail_floor(plan, 1, layers));
    }
    // Rounding must never lift a bound above a plan's time.
    return std::isfinite(least) ? least * (1 - 1e-12) : 0.0;
  }
  const SearchSpace& space_;
  const CostModel& cost_;
  bool transformer_ = false;
  std::vector<std::vector<Shape>> shapes_;        // per group, its layouts' distinct shapes
  std::vector<std::vector<int>> shape_of_;  // per group, each layout's index in shapes_ (transformer families)
};

TaskLayouts task_layouts(const SearchSpace& space, const LayoutRules& rules, const LayoutTaus& taus, int o, int b,
                         PruneReport& report, const std::vector<int>& fixed_layouts = {}) {
  TaskLayouts t;
  t.ok = structural_layouts(space, o, b, report, &rules);
  fix_leading_layouts(t.ok, fixed_layouts);
  const auto& order = space.group_orders()[o];
  t.rated = true;
  t.tau.resize(order.size());
  t.rate.resize(order.size());
  for (std::size_t j = 0; j < order.size() && t.rated; ++j) {
    for (int li : t.ok[j]) {
      const double tau = taus.tau(order[j], b, li);
      if (std::isnan(tau)) {
        t.rated = false;
        break;
      }
      t.tau[j].push_back(tau);
      t.rate[j].push_back(std::isinf(tau) ? 0.0 : space.layouts(order[j])[li].stages / tau);
    }
  }
  return t;
}

// A lower bound on the iteration time of every plan in the space, from
// per-layer rates alone: the subtree test's bound of prepare_search taken at
// the root with every group's fastest layout. A skeleton's layer rate is
// at most the sum over all groups of their fastest layout's rate and its
// least tau at least the least of all. Interleaved over v chunks a plan
// takes (m - 1/v) pace + (sum of stage times)/v + tail (CostModel::
// iteration_time_1f1b) with pace >= L / R and the sum >= L tau_min, least
// at the largest v any plan may use (every stage at least v layers, at
// least two stages: v <= L / 2), so (m - 1/v) L / R + L tau_min / v bounds
// it (LoadBalancer::lower_bound is at least that). Layouts that cannot hold
// one layer anywhere only appear in skeletons memory removes. 0 (nothing
// proven) when a tau is unknown (layers differ) or m = 1. Cost: one cached
// layer estimate per layout and micro-batch size.
double space_rate_bound(const SearchSpace& space, const MemoryPruner& memory, const LoadBalancer& balancer) {
  const Problem& problem = space.problem();
  const int layers = problem.model.layers;
  const double v = problem.model.family == ModelFamily::generic ? 1.0 : std::max(1, layers / 2);
  double bound = std::numeric_limits<double>::infinity();
  for (int micro_batch : space.micro_batches()) {
    const int m = problem.training.global_batch / micro_batch;
    if (m <= 1) return 0;
    double rate = 0, tau_min = std::numeric_limits<double>::infinity();
    for (std::size_t group = 0; group < problem.cluster.groups.size(); ++group) {
      double fastest = 0;
      for (const GroupLayout& g : space.layouts(static_cast<int>(group))) {
        const StageSlot slot{g.group, 0, g.gpus_per_stage, g.tp, g.dp};
        if (memory.max_layers_anywhere_leanest(slot, micro_batch) == 0) continue;
        const auto tau = balancer.layer_time(slot, micro_batch);
        if (!tau || !(*tau > 0)) return 0;
        fastest = std::max(fastest, g.stages / *tau);
        tau_min = std::min(tau_min, *tau);
      }
      rate += fastest;
    }
    if (rate > 0) bound = std::min(bound, (m - 1.0 / v) * layers / rate + layers * tau_min / v);
  }
  // No layout holds a layer: no plan at all, nothing to bound.
  return std::isfinite(bound) ? bound * (1 - kBoundSlack) : 0;
}

double skeleton_work(const Skeleton& s, int layers) {
  // The balancer's DP touches about stages x layers-per-stage cells per
  // threshold; more stages also mean more thresholds.
  return static_cast<double>(layers) + static_cast<double>(s.num_stages()) * s.num_stages();
}

bool by_bound(const Skeleton& a, const Skeleton& b) {
  return a.lower_bound_s != b.lower_bound_s ? a.lower_bound_s < b.lower_bound_s : a.id < b.id;
}

// Keeps the `count` skeletons of least (bound, id) in `list`, which must
// hold more, and returns the least bound of those dropped.
double cut_to_best(std::vector<Skeleton>& list, std::size_t count) {
  std::nth_element(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(count), list.end(), by_bound);
  const double least_dropped = list[count].lower_bound_s;
  list.resize(count);
  return least_dropped;
}

// Keeps the `count` skeletons of least (bound, id) in `list` once it holds
// twice that many: the best `count` of everything ever added stay, in any
// order of adding.
void keep_best(std::vector<Skeleton>& list, std::size_t count) {
  if (list.size() > count && list.size() >= 2 * count) cut_to_best(list, count);
}

// Tasks per block: fixed, not per thread or participant, so what is done
// between blocks happens at the same points whatever the thread and rank
// count (the kept list must not depend on them). The initialization's keep
// pass runs rounds of kTasksPerRound tasks dealt to kBlocksPerRound blocks
// by weight, not by count (prepare_search).
constexpr std::size_t kTasksPerBlock = 64;
constexpr std::size_t kBlocksPerRound = 8;
constexpr std::size_t kTasksPerRound = kTasksPerBlock * kBlocksPerRound;
// Greedy dives from the best probes (dive_from): how many, and the most
// steps of each (a step balances at most the plan's neighbours whose bound
// can beat it). Llama 3 70B on 6 groups of 64 GPUs: one dive stalls 6%
// above the optimum, the best of eight 1%. On 8 groups, whose probes see
// one arrangement of each order's middle, the best of eight stalls 5.4%
// above the best of 32 (15.86 s against 15.05 s), which takes 4 s.
constexpr std::size_t kDives = 32;
constexpr int kDiveSteps = 32;
// The most skeletons the tasks of one round of the initialization may hold
// at their peaks under a skeleton limit (at least; 2 x the limit when that
// is more; about 850 MB): past it the round is walked again in pieces
// (prepare_search, walk_range). A task keeps a quarter of the limit and
// holds at most twice that, so a round of one task never passes it.
constexpr std::size_t kRoundGuard = 500'000;
// A round past the memory guard is walked again in this many pieces: its
// heaviest tasks, walked first, fill the guard before the rest begin, so
// each level of cutting walks them again (Llama 3 70B on 8 groups: about
// 11 s a level); one piece in eight is what two levels of halving reach.
constexpr std::size_t kPiecesOfAnOverflow = 8;
// A task whose weight (prepare_search's weigh_task: its structurally valid
// skeletons, times the arrangements its walk stands for) reaches
// kSliceWeight (PrepareOptions::slice_weight) is walked in slices, at
// least kSlicesOfAHeavyTask (SkeletonWalk::fixed_layouts), each by
// whichever thread is free. Llama 3 70B on eight node groups of 64 GPUs:
// 233 of 438,400 tasks (weights 3e11 to 3e13) hold all but a second of the
// walk's 127 s of work, about one in each round of 512; a round ends with
// its slowest task, so one thread of two had been idle for 55 s of the
// walk's 80 (two threads busy 161% of the search's time; 198% now).
constexpr double kSliceWeight = 1e11;
constexpr std::size_t kSlicesOfAHeavyTask = 16;

// run(task, part) for tasks [0, n) in parallel, a block at a time, each
// task with a Part of its own; after each block, merge(part) in task order.
// Memory is one block's parts, not one per task (many
// node groups make tens of millions of tasks), and `stop` is asked between
// blocks (a block takes well under a second). Returns false when stopped.
template <class Part, class Run, class Merge>
bool for_each_task_in_blocks(std::size_t n, const std::function<bool()>& stop, const Run& run, const Merge& merge) {
  for (std::size_t begin = 0; begin < n; begin += kTasksPerBlock) {
    if (stop()) return false;
    std::vector<Part> parts(std::min(kTasksPerBlock, n - begin));
    parallel::for_each(parts.size(), [&](std::size_t k) { run(begin + k, parts[k]); });
    for (Part& part : parts) merge(part);
  }
  return true;
}

// Per (group, B): each layout's layer finish times
// (LoadBalancer::layer_finish_times), what one of its middle stages holds
// with f micro-batches in flight, and the group's envelope: the least
// pace by which some layout of the group holds v layers over all its
// stages, for v = 1, 2, ... (as far as any holds), over the layouts no
// structural rule removes (LayoutRules: a layout's rules depend on its
// group and B alone, so no skeleton holds the others). What the walk over
// layouts bounds a prefix with: the layouts chosen hold what their finish
// times allow where they sit, each position still open at most its
// group's envelope. Computed once before the walk (the tasks share
// groups); null where a layout's layers are not identical (a per-layer
// profile), and for a layout a rule removes.
class LayoutFinishTimes {
 public:
  LayoutFinishTimes(const SearchSpace& space, const MemoryPruner& memory, const LoadBalancer& balancer,
                    const LayoutRules& rules)
      : space_(space), memory_(memory), most_in_flight_(std::max(1, space.problem().model.layers)),
        num_b_(space.micro_batches().size()),
        of_(space.problem().cluster.groups.size() * num_b_) {
    const int layers = space.problem().model.layers;
    parallel::for_each(of_.size(), [&](std::size_t k) {
      const int group = static_cast<int>(k / num_b_), b = static_cast<int>(k % num_b_);
      const int micro_batch = space.micro_batches()[b];
      Group& g = of_[k];
      g.envelope_known = true;
      const std::size_t entries = space.layouts(group).size() * static_cast<std::size_t>(most_in_flight_);
      g.held_in_flight = std::make_unique<std::atomic<int>[]>(entries);
      for (std::size_t e = 0; e < entries; ++e) g.held_in_flight[e].store(-1, std::memory_order_relaxed);
      std::vector<double> envelope(static_cast<std::size_t>(layers), kInf);
      for (std::size_t li = 0; li < space.layouts(group).size(); ++li) {
        // A layout a structural rule removes is in no skeleton: neither
        // its finish times nor the envelope need it.
        if (rules.rule(group, static_cast<int>(li), b)) {
          g.layout.emplace_back();
          continue;
        }
        const GroupLayout& layout = space.layouts(group)[li];
        const StageSlot slot{layout.group, 0, layout.gpus_per_stage, layout.tp, layout.dp};
        auto finish = balancer.layer_finish_times(slot, micro_batch);
        if (!finish) {
          g.envelope_known = false;
          g.layout.emplace_back();
          continue;
        }
        const int held = static_cast<int>(finish->size());
        for (int v = 1; v <= layers; ++v) {
          const int each = (v + layout.stages - 1) / layout.stages;  // layers per stage for v in all
          if (each > held) break;
          envelope[v - 1] = std::min(envelope[v - 1], (*finish)[each - 1]);
        }
        g.layout.emplace_back(std::move(*finish));
      }
      // Non-decreasing, and only as far as some layout holds.
      for (int v = layers - 1; v-- > 0;) envelope[v] = std::min(envelope[v], envelope[v + 1]);
      while (!envelope.empty() && envelope.back() == kInf) envelope.pop_back();
      g.envelope = std::move(envelope);
    });
  }
  const std::vector<double>* layout(int group, int b, int layout_index) const {
    const auto& f = of_[index(group, b)].layout[layout_index];
    return f ? &*f : nullptr;
  }
  // The most layers a middle stage of the layout holds with `in_flight`
  // micro-batches in flight (>= 1): MemoryPruner::max_layers_in_flight_leanest.
  // Each entry filled on first use: a large group has hundreds of layouts,
  // few of them ever in a prefix the walk bounds, and a capacity not yet
  // memoized costs a search over layer counts. Threads that race on an
  // entry compute and store the same value.
  int held_in_flight(int group, int b, int layout_index, int in_flight) const {
    const Group& g = of_[index(group, b)];
    const std::size_t first = static_cast<std::size_t>(layout_index) * most_in_flight_;
    const std::size_t f = static_cast<std::size_t>(std::clamp(in_flight, 1, most_in_flight_));
    std::atomic<int>& entry = g.held_in_flight[first + f - 1];
    int held = entry.load(std::memory_order_relaxed);
    if (held < 0) {
      const GroupLayout& layout = space_.layouts(group)[layout_index];
      const StageSlot slot{layout.group, 0, layout.gpus_per_stage, layout.tp, layout.dp};
      held = memory_.max_layers_in_flight_leanest(slot, space_.micro_batches()[b], static_cast<int>(f));
      entry.store(held, std::memory_order_relaxed);
    }
    return held;
  }
  const std::vector<double>* envelope(int group, int b) const {
    const Group& g = of_[index(group, b)];
    return g.envelope_known ? &g.envelope : nullptr;
  }

 private:
  struct Group {
    std::vector<std::optional<std::vector<double>>> layout;
    // [layout * most_in_flight_ + f - 1]: held_in_flight, -1 until asked.
    std::unique_ptr<std::atomic<int>[]> held_in_flight;
    std::vector<double> envelope;
    bool envelope_known = false;
  };
  std::size_t index(int group, int b) const { return static_cast<std::size_t>(group) * num_b_ + b; }
  const SearchSpace& space_;
  const MemoryPruner& memory_;
  // In flight: at most the stages, so at most the layers (and the
  // micro-batches: callers pass min(p - q, m)).
  int most_in_flight_;
  std::size_t num_b_;
  std::vector<Group> of_;
};

// Per (group, B, layout): what a stage of the layout sends of one
// micro-batch under plain 1F1B, at least (split_lower_bound.hpp: the
// plain schedule's bound counts them, interleaved ones do not). Across
// the layout's own boundaries the least of them (CostModel::
// boundary_send_s); across the boundary before its first stage and after
// its last, to a group the walk may not have placed yet, each side's
// floor over any neighbour (CostModel::boundary_send_floor_s). A
// transformer family's only (every boundary moves the same bytes); a
// generic layer list's are 0.
class LayoutSends {
 public:
  struct Sends {
    double inside = 0;    // the least boundary between two of its stages
    double into = 0;      // the boundary before its first stage
    double out_of = 0;    // the boundary after its last
    // Stage k of `stages`: its sends, the pipeline's first or last stage
    // with no boundary before or after it.
    double stage(int k, int stages, bool pipeline_first, bool pipeline_last) const {
      const double before = k > 0 ? inside : pipeline_first ? 0.0 : into;
      const double after = k + 1 < stages ? inside : pipeline_last ? 0.0 : out_of;
      return before + after;
    }
    // All of its stages' together.
    double all(int stages, bool pipeline_first, bool pipeline_last) const {
      return (pipeline_first ? 0.0 : into) + (pipeline_last ? 0.0 : out_of) + 2.0 * (stages - 1) * inside;
    }
  };
  // Each entry computed on first use (as LayoutFinishTimes::held_in_flight):
  // a group of half a million nodes has layouts by the thousand, and
  // computing every one's sends up front took the two seconds a time limit
  // gave its search. Threads that race on an entry compute the same values.
  LayoutSends(const SearchSpace& space, const CostModel& cost)
      : space_(space), cost_(cost), num_b_(space.micro_batches().size()),
        of_(space.problem().cluster.groups.size() * num_b_) {
    for (std::size_t k = 0; k < of_.size(); ++k)
      of_[k] = std::make_unique<Entry[]>(space.layouts(static_cast<int>(k / num_b_)).size());
  }
  Sends of(int group, int b, int layout_index) const {
    Entry& e = of_[static_cast<std::size_t>(group) * num_b_ + b][layout_index];
    const double inside = e.inside.load(std::memory_order_acquire);
    if (!std::isnan(inside)) return {inside, e.into.load(std::memory_order_relaxed), e.out_of.load(std::memory_order_relaxed)};
    const Sends sends = compute(space_.layouts(group)[layout_index], space_.micro_batches()[b]);
    e.into.store(sends.into, std::memory_order_relaxed);
    e.out_of.store(sends.out_of, std::memory_order_relaxed);
    e.inside.store(sends.inside, std::memory_order_release);
    return sends;
  }

 private:
  Sends compute(const GroupLayout& layout, int B) const {
    const Problem& problem = space_.problem();
    if (problem.model.family == ModelFamily::generic) return {};
    auto stage = [&](int i) {
      return slot_stage(problem, StageSlot{layout.group, i * layout.gpus_per_stage, layout.gpus_per_stage, layout.tp,
                                           layout.dp},
                        B);
    };
    Sends sends;
    const StagePlan first = stage(0);
    sends.into = cost_.boundary_send_floor_s(first, true, B);
    sends.out_of = cost_.boundary_send_floor_s(first, false, B);  // any stage of it: the same degrees
    double inside = layout.stages > 1 ? kInf : 0.0;
    for (int i = 0; i + 1 < layout.stages; ++i) inside = std::min(inside, cost_.boundary_send_s(stage(i), stage(i + 1), 0, B));
    sends.inside = inside;
    return sends;
  }
  struct Entry {
    std::atomic<double> inside{std::numeric_limits<double>::quiet_NaN()};  // NaN: not computed yet
    std::atomic<double> into{0}, out_of{0};
  };
  const SearchSpace& space_;
  const CostModel& cost_;
  std::size_t num_b_;
  std::vector<std::unique_ptr<Entry[]>> of_;
};

// The largest vpp of a pipeline of p stages (max_interleaving), per B,
// and the largest of any p' >= p: what the walk asks of every skeleton and
// prefix, read from a table (the rule builds strings). And per B and w,
// the fewest layers a stage of any pipeline interleaved over w chunks
// holds: stages of L / p' layers (interleaving_searched), p' at most the
// most stages w allows.
class InterleavingLimits {
 public:
  explicit InterleavingLimits(const SearchSpace& space) {
    const Problem& problem = space.problem();
    const int layers = problem.model.layers;
    for (int micro_batch : space.micro_batches()) {
      const int m = problem.training.global_batch / micro_batch;
      std::vector<int>& at = at_.emplace_back(static_cast<std::size_t>(layers) + 2, 1);
      std::vector<int>& from = from_.emplace_back(static_cast<std::size_t>(layers) + 2, 1);
      for (int p = 1; p <= layers; ++p) at[p] = max_interleaving(problem.model, problem.training.runtime, p, m);
      for (int p = layers; p >= 0; --p) from[p] = std::max(at[p], from[p + 1]);
      std::vector<int>& held = held_.emplace_back(static_cast<std::size_t>(std::max(0, from[0] - 1)), 0);
      for (int p = 1; p <= layers; ++p)
        for (int w = 2; w <= at[p]; ++w) held[w - 2] = layers / p;  // the last p, the most stages, wins
      std::vector<int>& fewest = fewest_.emplace_back(static_cast<std::size_t>(layers) + 2, 0);
      for (int p = layers; p >= 0; --p) fewest[p] = fewest[p + 1] > 0 || at[p] < 2 ? fewest[p + 1] : layers / p;
    }
  }
  int at(int b, int stages) const { return at_[b][clamp(stages)]; }
  int most_from(int b, int stages) const { return from_[b][clamp(stages)]; }
  // [w - 2]: the fewest layers a stage holds interleaved over w chunks.
  std::span<const int> stage_layers(int b) const { return held_[b]; }
  // The fewest layers a stage holds in any interleaved pipeline of at
  // least `stages` stages (L / p' for the largest p' that interleaves); 0
  // where none does.
  int fewest_layers_from(int b, int stages) const { return fewest_[b][clamp(stages)]; }

 private:
  std::size_t clamp(int stages) const {
    return static_cast<std::size_t>(std::clamp(stages, 0, static_cast<int>(at_.front().size()) - 1));
  }
  std::vector<std::vector<int>> at_, from_, held_, fewest_;
};

// Whether the layouts of a group order lie in the space searched: with
// --runnable megatron every group's stages take the first's shape
// (megatron_compatible), as enumerate_skeletons walks them.
bool runnable_shape(const SearchSpace& space, int order_index, const std::vector<int>& layout_index) {
  if (!uniform_stages_required(space.problem().runnable_by)) return true;
  const auto& order = space.group_orders()[order_index];
  const GroupLayout& first = space.layouts(order[0])[layout_index[0]];
  for (std::size_t j = 1; j < order.size(); ++j)
    if (!megatron_compatible(space.problem(), first, space.layouts(order[j])[layout_index[j]])) return false;
  return true;
}

// The probes: per (order, B), the skeletons whose groups all take their
// r-th fastest layout (r = 0, 1, ...), memory-valid, of finite bound; the
// `count` best bounds over all tasks, by (bound, id), and the best bound of
// every set of groups and B not among them. A skeleton's bound can be well below
// its balanced time, so the best bounds of a cluster of many groups may all
// lie on group sets whose plans balance poorly and crowd out the one whose
// plan is fast; every plan on a subset of the groups is a plan of the whole
// space, so one probe per set and B makes the first threshold about as
// tight as the best probe of any part of the cluster. Of an order of four or
// more groups only the arrangement of its middle that the walk walks is
// probed (walks_arrangements): the middle's order changes a bound only by
// where memory sits, and the dives from the probes try the swaps; probing
// all 720 arrangements of each (first, last) pair of eight groups took 47
// of a search's 75 s. Sets `stopped` (and returns what it has) when `stop`
// says so.
std::vector<Skeleton> probe_skeletons(const SearchSpace& space, const MemoryPruner& memory,
                                      const LoadBalancer& balancer, const LayoutRules& rules, const LayoutTaus& taus,
                                      std::size_t count,
                                      const std::function<bool()>& stop, std::atomic<bool>& stopped) {
  const auto& orders = space.group_orders();
  const int num_b = static_cast<int>(space.micro_batches().size());
  const int layers = space.problem().model.layers;
  std::vector<Skeleton> all;
  // By (the set's bitmask of groups, B).
  std::map<std::pair<std::uint64_t, int>, Skeleton> best_of_set;
  auto set_of = [&](const Skeleton& s) {
    std::uint64_t mask = 0;
    for (const StageSlot& slot : s.stages) mask |= std::uint64_t{1} << slot.group;
    return std::make_pair(mask, s.micro_batch);
  };
  auto run = [&](std::size_t task, std::vector<Skeleton>& out) {
    if (stopped.load(std::memory_order_relaxed)) return;
    if (stop()) {
      stopped.store(true);
      return;
    }
    const int o = static_cast<int>(task / num_b), b = static_cast<int>(task % num_b);
    if (walks_arrangements(orders[o]) == false) return;
    PruneReport scratch;
    const TaskLayouts t = task_layouts(space, rules, taus, o, b, scratch);
    std::size_t widest = 0;
    for (const auto& list : t.ok) {
      if (list.empty()) return;
      widest = std::max(widest, list.size());
    }
    const std::size_t n = t.ok.size();
    std::vector<std::vector<int>> ranked(n);  // positions into ok, fastest first
    for (std::size_t j = 0; j < n; ++j) {
      ranked[j].resize(t.ok[j].size());
      for (std::size_t i = 0; i < ranked[j].size(); ++i) ranked[j][i] = static_cast<int>(i);
      if (t.rated) {
        std::stable_sort(ranked[j].begin(), ranked[j].end(),
                         [&](int x, int y) { return t.rate[j][x] > t.rate[j][y]; });
      }
    }
    std::vector<int> layout_index(n), previous;
    for (std::size_t r = 0; r < widest; ++r) {
      int stages = 0;
      for (std::size_t j = 0; j < n; ++j) {
        layout_index[j] = t.ok[j][ranked[j][std::min(r, ranked[j].size() - 1)]];
        stages += space.layouts(space.group_orders()[o][j])[layout_index[j]].stages;
      }
      if (layout_index == previous || stages > layers) continue;
      previous = layout_index;
      // A probe must lie in the space searched.
      if (!runnable_shape(space, o, layout_index)) continue;
      Skeleton s = space.make(o, b, layout_index);
      if (memory.check(s)) continue;
      s.lower_bound_s = balancer.lower_bound(s, 0.0);
      if (s.lower_bound_s < std::numeric_limits<double>::infinity()) out.push_back(std::move(s));
    }
    // Only the best `count` of a task can be among the best overall (its
    // best is first: the best of its group set).
    const std::size_t keep = std::min(count, out.size());
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end(), by_bound);
    out.resize(keep);
  };
  auto merge = [&](std::vector<Skeleton>& out) {
    if (!out.empty()) {
      auto [it, added] = best_of_set.try_emplace(set_of(out.front()), out.front());
      if (!added && by_bound(out.front(), it->second)) it->second = out.front();
    }
    for (auto& s : out) all.push_back(std::move(s));
    keep_best(all, count);
  };
  if (!for_each_task_in_blocks<std::vector<Skeleton>>(orders.size() * static_cast<std::size_t>(num_b), stop, run,
                                                      merge))
    stopped.store(true);
  const std::size_t keep = std::min(count, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(), by_bound);
  all.resize(keep);
  // Each set's best joins unless it is there already (same id).
  for (auto& entry : best_of_set) {
    Skeleton& best = entry.second;
    if (std::none_of(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep),
                     [&](const Skeleton& s) { return s.id == best.id; }))
      all.push_back(std::move(best));
  }
  return all;
}

// The skeleton's best split as an estimated plan, when one is no slower
// than `bound` and the plan fits memory; `stopped` when the balance was.
std::optional<Plan> fitting_plan(const CostModel& cost, const LoadBalancer& balancer, const Skeleton& skeleton,
                                 double bound, const std::function<bool()>& stop, bool& stopped) {
  const BalanceResult r = balancer.balance(skeleton, bound, stop);
  stopped = r.status == BalanceResult::Status::stopped;
  if (r.status != BalanceResult::Status::found) return std::nullopt;
  Plan plan = make_plan(cost.problem(), skeleton, r.split.layer_end, r.split.recompute, r.split.vpp);
  plan.predicted = cost.estimate(plan);
  if (!plan.predicted.fits) return std::nullopt;
  return plan;
}

// Greedy dives from a plan (anytime): the best plan among its skeleton's
// neighbours — one group's layout changed, two neighbouring groups swapped
// along the pipeline, a group added anywhere or removed, another B — that
// fit and beat it, then the same from there, until none does, `most_steps`
// are taken or `stop` says so.
// Each step balances only neighbours whose lower bound can beat the plan.
// Returns the plans each step moved to, better and better. Deterministic:
// neighbours are listed in one order and ties go to the least skeleton id.
std::vector<Plan> dive_from(const Plan& start, const SearchSpace& space, const CostModel& cost,
                            const MemoryPruner& memory, const LoadBalancer& balancer, int most_steps,
                            const std::function<bool()>& stop) {
  const Problem& problem = cost.problem();
  const int layers = problem.model.layers;
  Skeleton here;
  here.micro_batch = start.micro_batch_size;
  for (const StagePlan& st : start.stages)
    here.stages.push_back({st.group, st.first_gpu, st.gpus, st.tp, st.cp * st.dp});
  std::optional<SearchSpace::Coordinates> at = space.locate(here);
  double best = start.predicted.iteration_time_s;
  std::vector<Plan> path;
  for (int step = 0; step < most_steps && at && !stop(); ++step) {
    // The neighbours, as (order, B, layouts).
    std::vector<SearchSpace::Coordinates> next;
    PruneReport scratch;
    const std::vector<std::vector<int>> ok = structural_layouts(space, at->order, at->micro_batch, scratch);
    for (std::size_t j = 0; j < at->layout.size(); ++j) {
      for (int li : ok[j]) {
        if (li == at->layout[j]) continue;
        next.push_back(*at);
        next.back().layout[j] = li;
      }
    }
    const std::vector<int>& order = space.group_orders()[at->order];
    for (std::size_t j = 0; j + 1 < order.size(); ++j) {
      std::vector<int> swapped = order;
      std::swap(swapped[j], swapped[j + 1]);
      // Halves keep their order (search_space.hpp): not every swap is one.
      const std::optional<int> index = space.order_index(swapped);
      if (!index) continue;
      SearchSpace::Coordinates c = *at;
      c.order = *index;
      std::swap(c.layout[j], c.layout[j + 1]);
      next.push_back(std::move(c));
    }
    // A group more, anywhere along the pipeline, in any layout; a group less.
    const int groups = static_cast<int>(problem.cluster.groups.size());
    for (int g = 0; g < groups; ++g) {
      if (std::find(order.begin(), order.end(), g) != order.end()) continue;
      // A half is never alone, nor beside its whole group: no dive adds one.
      const std::optional<int> alone = space.order_index({g});
      if (!alone) continue;
      // Which of g's layouts pass at this B does not depend on where g sits.
      const std::vector<int> ok_g = structural_layouts(space, *alone, at->micro_batch, scratch).front();
      for (std::size_t j = 0; j <= order.size(); ++j) {
        std::vector<int> longer = order;
        longer.insert(longer.begin() + static_cast<std::ptrdiff_t>(j), g);
        const std::optional<int> index = space.order_index(longer);
        if (!index) continue;
        SearchSpace::Coordinates c = *at;
        c.order = *index;
        c.layout.insert(c.layout.begin() + static_cast<std::ptrdiff_t>(j), 0);
        for (int li : ok_g) {
          c.layout[j] = li;
          next.push_back(c);
        }
      }
    }
    for (std::size_t j = 0; order.size() > 1 && j < order.size(); ++j) {
      std::vector<int> shorter = order;
      shorter.erase(shorter.begin() + static_cast<std::ptrdiff_t>(j));
      const std::optional<int> index = space.order_index(shorter);
      if (!index) continue;
      SearchSpace::Coordinates c = *at;
      c.order = *index;
      c.layout.erase(c.layout.begin() + static_cast<std::ptrdiff_t>(j));
      next.push_back(std::move(c));
    }
    for (int b = 0; b < static_cast<int>(space.micro_batches().size()); ++b) {
      if (b == at->micro_batch) continue;
      const std::vector<std::vector<int>> ok_b = structural_layouts(space, at->order, b, scratch);
      bool valid = true;
      for (std::size_t j = 0; j < at->layout.size() && valid; ++j)
        valid = std::binary_search(ok_b[j].begin(), ok_b[j].end(), at->layout[j]);
      if (!valid) continue;
      next.push_back(*at);
      next.back().micro_batch = b;
    }
    std::vector<std::optional<Plan>> found(next.size());
    std::vector<std::uint64_t> id(next.size(), 0);
    parallel::for_each(next.size(), [&](std::size_t k) {
      if (stop()) return;
      if (!runnable_shape(space, next[k].order, next[k].layout)) return;
      Skeleton s = space.make(next[k].order, next[k].micro_batch, next[k].layout);
      id[k] = s.id;
      if (s.num_stages() > layers || memory.check(s)) return;
      if (!(balancer.lower_bound(s, best) < best)) return;
      bool stopped = false;
      std::optional<Plan> plan = fitting_plan(cost, balancer, s, best, stop, stopped);
      if (plan && plan->predicted.iteration_time_s < best * (1 - 1e-12)) found[k] = std::move(plan);
    });
    std::optional<std::size_t> pick;
    for (std::size_t k = 0; k < next.size(); ++k) {
      if (!found[k]) continue;
      const double t = found[k]->predicted.iteration_time_s;
      const double p = pick ? found[*pick]->predicted.iteration_time_s : 0;
      if (!pick || t < p || (t == p && id[k] < id[*pick])) pick = k;
    }
    if (!pick) break;
    best = found[*pick]->predicted.iteration_time_s;
    at = next[*pick];
    path.push_back(std::move(*found[*pick]));
  }
  return path;
}

}  // namespace

PreparedSearch prepare_search(const CostModel& cost, const MemoryPruner& memory, LatencyCache& cache,
                              const PrepareOptions& options) {
  const SearchSpace space(cost.problem());
  const LoadBalancer balancer(cost, memory, &cache);
  const Problem& problem = cost.problem();
  const int layers = problem.model.layers;
  const auto& orders = space.group_orders();
  const int num_b = static_cast<int>(space.micro_batches().size());
  PreparedSearch prepared;

  // The skeleton limit (PrepareOptions::max_skeletons): the list keeps
  // list_cap skeletons of least (bound, id) after each round, a task
  // task_cap of its own once it holds twice that, and the rounds after a
  // cut drop what lies above the list's last bound (limit_cutoff, changed
  // between rounds only); prepared.dropped_bound_s is the least bound ever
  // dropped. `kept` counts what a round's tasks have held at their most
  // (each task's peak, a figure of the task alone, so the count does not
  // depend on which tasks ran first): past the memory guard the round is
  // walked again in pieces (walk_range below).
  const std::size_t list_cap = options.max_skeletons > 0 ? static_cast<std::size_t>(options.max_skeletons) : 0;
  const std::size_t task_cap = list_cap > 0 ? std::max<std::size_t>(1, list_cap / 4) : 0;
  // Never below what one task can hold (2 x task_cap), so a round of one
  // task never passes it and every overflow can be walked again in pieces.
  const auto round_guard = static_cast<std::int64_t>(
      std::max<std::size_t>(2 * task_cap, options.round_guard > 0 ? static_cast<std::size_t>(options.round_guard)
                                                                  : std::max<std::size_t>(2 * list_cap, kRoundGuard)));
  double limit_cutoff = kInf;
  std::atomic<std::int64_t> kept{0};
  std::atomic<bool> overflow{false}, stopped{false};
  // Set (between steps, on the calling thread) once the best plan so far is
  // within options.gap of the rate bound: the gap asked for is proven.
  std::atomic<bool> gap_met{false};
  // Asked in every loop of the initialization (per task, per probe, every
  // few thousand skeletons walked), so a time limit or a signal stops it
  // within about a second, whatever the size of the space.
  const std::function<bool()> must_stop = [&] {
    return overflow.load(std::memory_order_relaxed) || gap_met.load(std::memory_order_relaxed) || options.stop();
  };

  // No plan holds the model's static state even spread over every GPU
  // (static_state_floor): every skeleton breaks the memory rules, which the
  // walk (minutes on many groups) would find out one by one. The same on
  // every participant, so none waits at an exchange.
  if (const StaticStateFloor floor = static_state_floor(cost); floor.need_GiB > floor.largest_GiB) {
    prepared.prune.considered = static_cast<std::int64_t>(
        std::min<std::uint64_t>(space.raw_size(), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    prepared.prune.add(PruneRule::capacity_below_layers, prepared.prune.considered);
    return prepared;
  }
  if (must_stop()) {
    // Alone, nothing more to do; sharing the rounds, the others hear of it
    // at the first exchange, which every participant must reach.
    if (!options.exchange) {
      prepared.stopped = true;
      return prepared;
    }
    stopped.store(true);
  }
  prepared.rate_bound_s = space_rate_bound(space, memory, balancer);
  const LayoutRules rules(space);
  const LayoutFinishTimes finish_times(space, memory, balancer, rules);
  const LayoutSends layout_sends(space, cost);
  const LayoutTaus taus(space, memory, balancer);
  const StageTailFloors tail_floors(space, cost);
  const InterleavingLimits vpp(space);

  // Balances skeletons and keeps the K best plans (with those already
  // held): their K-th time bounds the search's K-th best, since the
  // skeletons stay in the list (a plan is no faster than its bound).
  Incumbent seeds(std::max(1, options.top_k), cost.problem().cluster);
  // Each of `probes` balanced: the plan of its best split that fits, if
  // any (none once stopped).
  auto balanced = [&](const std::vector<Skeleton>& probes) {
    std::vector<std::optional<Plan>> plans(probes.size());
    parallel::for_each(probes.size(), [&](std::size_t i) {
      if (stopped.load(std::memory_order_relaxed)) return;
      if (must_stop()) {
        stopped.store(true);
        return;
      }
      bool was_stopped = false;
      plans[i] = fitting_plan(cost, balancer, probes[i], kInf, must_stop, was_stopped);
      if (was_stopped) stopped.store(true);
    });
    return plans;
  };
  // The plans of `probes` that fit, in their order.
  auto balanced_plans = [&](const std::vector<Skeleton>& probes) {
    std::vector<std::optional<Plan>> plans = balanced(probes);
    std::vector<Plan> fitting;
    for (std::optional<Plan>& plan : plans) {
      if (plan) fitting.push_back(std::move(*plan));
    }
    return fitting;
  };
  auto offer = [&](const std::vector<Plan>& plans) {
    for (const Plan& plan : plans) seeds.offer(plan);
    prepared.probes = seeds.plans();
    if (options.top_k > 0 && static_cast<int>(prepared.probes.size()) == options.top_k) {
      prepared.threshold_s = prepared.probes.back().predicted.iteration_time_s;
    }
    if (options.gap > 0 && !prepared.probes.empty() && prepared.rate_bound_s > 0 &&
        search_gap(prepared.probes.front().predicted.iteration_time_s, prepared.rate_bound_s) <= options.gap)
      gap_met.store(true);
  };

  struct Part {
    std::vector<Skeleton> kept;
    PruneReport report;
    double dropped_bound = std::numeric_limits<double>::infinity();  // least bound the limit dropped
    std::size_t peak = 0;  // the most `kept` has held
  };
  // One pass over the space: each memory-valid skeleton whose bound can
  // beat `threshold` goes to keep(part, skeleton). Subtree test: the
  // bottleneck T holds at most T / tau_i layers per stage, so T >= L / R
  // with R the skeleton's total layer rate, and the fill-and-drain sum is
  // at least L * min tau (LoadBalancer::lower_bound is at least both); a
  // prefix reaches at most its own rate plus each later position's fastest
  // layout. Interleaving (any vpp up to the largest one allowed) only
  // lowers the whole skeleton's term to m B + (S - B) / vpp, never below
  // the prefixes' (m - 1) B. Skipping by it never drops what the per-skeleton test keeps, so
  // the result depends on the threshold alone.
  const double& threshold = prepared.threshold_s;
  // Walks one slice of a task (SkeletonWalk::fixed_layouts; empty: all of it).
  auto walk_task = [&](std::size_t task, const TaskSlice& slice, Part& part) {
    if (stopped.load(std::memory_order_relaxed)) return;
    if (must_stop()) {
      stopped.store(true);
      return;
    }
    // The threshold and the limit's cutoff change between rounds only, never
    // while tasks run; a task's own cut (visit) lowers its keep_below.
    const double above_best = threshold * (1 + kBoundSlack);
    double keep_below = std::min(threshold, limit_cutoff) * (1 + kBoundSlack);
    const int o = static_cast<int>(task / num_b), b = static_cast<int>(task % num_b);
    // An order that only rearranges another's middle groups is walked with
    // it (SkeletonWalk::arrangements): its structural counts alone, what
    // enumerate_skeletons would add, without the layouts' rates and edges.
    if (walks_arrangements(space.group_orders()[o]) == false) {
      if (slice.counts_structure) structural_layouts(space, o, b, part.report, &rules);
      return;
    }
    PruneReport scratch;
    const TaskLayouts t = task_layouts(space, rules, taus, o, b, scratch, slice.fixed_layouts);
    const std::size_t n = t.ok.size();
    const int m = problem.training.global_batch / space.micro_batches()[b];

    SkeletonWalk walk;
    std::vector<double> rest(n + 1, 0.0);  // rest[j]: best rate of positions >= j
    std::vector<double> rate_to(n + 1, 0.0), tau_min(n + 1, kInf);
    std::vector<double> tau_at(n, kInf);  // per position: the chosen layout's tau and stage count
    std::vector<int> stages_at(n, 0);
    // pace_to[j + 1]: the least whole-layer pace of the prefix to position
    // j. Its children's are no less (they hold no more by any pace), so
    // their merges start there.
    std::vector<double> pace_to(n + 1, 0.0);
    // plain_pace_to[j + 1]: the same with each stage's sends in its edge
    // (plain 1F1B), where it was computed; else the parent's, or 0.
    std::vector<double> plain_pace_to(n + 1, 0.0);
    std::vector<int> stages_to(n + 1, 0);     // stages before position j
    std::vector<int> fewest_after(n + 1, 0);  // the fewest stages positions >= j take
    // tail_to[j + 1]: the largest tail floor (StageTailFloors) of the
    // layouts at positions <= j; open_tail[j]: the largest, over positions
    // >= j, of the least floor of any layout there.
    std::vector<double> tail_to(n + 1, 0.0), open_tail(n + 1, 0.0);
    // What a prefix that passes leaves its children (the layouts of the
    // next position) to screen them with before their own tests:
    // screen_pace[j], a pace past which every pipeline from the prefix
    // before position j lies above keep_below (its tests' pace_passing:
    // each pipeline is at least the prefix's bound at its own whole-layer
    // pace), and screen_need[j], the layers position j's layout must
    // finish by it where the prefix's stages and the open positions after
    // j hold all they could (no memory limit, edge or send; each open one
    // its group's envelope). A layout that holds fewer puts the least
    // whole-layer pace of every pipeline from it past screen_pace[j]: it is
    // cut with a search of its finish times, before the merges of its own
    // tests. Llama 3 70B on eight node groups of 64 GPUs: of the 44
    // million layouts tested at the sixth of eight positions, 5% pass, and
    // the screen cuts about half before their own tests. Infinity: no
    // screen.
    std::vector<double> screen_pace(n + 1, kInf);
    std::vector<long long> screen_need(n + 1, 0);
    auto held_by = [](const std::vector<double>& finish, double pace) {
      return static_cast<long long>(std::upper_bound(finish.begin(), finish.end(), pace) - finish.begin());
    };
    for (std::size_t j = n; j-- > 0;) {
      const int group = space.group_orders()[o][j];
      int fewest = std::numeric_limits<int>::max();
      double least_tail = std::numeric_limits<double>::infinity();
      for (int li : t.ok[j]) {
        fewest = std::min(fewest, space.layouts(group)[li].stages);
        least_tail = std::min(least_tail, tail_floors.floor(group, li));
      }
      fewest_after[j] = fewest_after[j + 1] + (t.ok[j].empty() ? 0 : fewest);
      open_tail[j] = std::max(open_tail[j + 1], t.ok[j].empty() ? 0.0 : least_tail);
    }
    std::vector<std::size_t> slot_at(n, 0);  // per position: the chosen layout's index in t.ok
    std::vector<const std::vector<double>*> finish_at(n, nullptr);  // per position: the chosen layout's
    std::vector<FinishClass> classes;
    // Adds stage k of a position's layout (finish times, edge, what it holds
    // where it sits) to `classes`: with the stage before it when that one is
    // of the same layout, holds as much and has the same edge.
    auto add_stage = [&](const std::vector<double>* finish, int k, double edge, int cap) {
      if (k > 0 && classes.back().edge == edge && classes.back().limit == cap)
        ++classes.back().count;
      else
        classes.push_back({finish, edge, 1, true, cap});
    };
    // Stages [from, to) of a position's layout, all with edge `edge`, each
    // holding what it holds wherever it sits: what add_stage makes of them
    // one by one, at once (a layout of 64 one-GPU stages was 64 calls at
    // every prefix the walk tests, a seventh of its time).
    constexpr int kAnywhere = FinishClass{}.limit;
    auto add_stages_anywhere = [&](const std::vector<double>* finish, int from, int to, double edge) {
      if (from >= to) return;
      if (from > 0 && classes.back().edge == edge && classes.back().limit == kAnywhere)
        classes.back().count += to - from;
      else
        classes.push_back({finish, edge, to - from, true, kAnywhere});
    };
    std::vector<double> floors;  // interleaved_pace_floors of a prefix or whole skeleton
    // The tail its interleaved terms pay beyond `tail` (split_lower_bound.hpp:
    // an interleaved stage holds at least L / p' layers, p' the most stages
    // it may reach): what the tests below add to those terms.
    double excess = 0;
    // Per fewest layers k an interleaved stage holds: [j], the largest over
    // positions >= j of the least floor of any layout there holding k
    // (StageTailFloors), computed on the first prefix that asks.
    std::vector<std::pair<int, std::vector<double>>> open_interleaved_tail;
    auto open_holding = [&](int k) -> const std::vector<double>& {
      for (const auto& [held, suffix] : open_interleaved_tail)
        if (held == k) return suffix;
      std::vector<double> suffix(n + 1, 0.0);
      for (std::size_t j = n; j-- > 0;) {
        const int group = space.group_orders()[o][j];
        double least = t.ok[j].empty() ? 0.0 : kInf;
        for (int li : t.ok[j]) least = std::min(least, tail_floors.floor(group, li, k));
        suffix[j] = std::max(suffix[j + 1], least);
      }
      return open_interleaved_tail.emplace_back(k, std::move(suffix)).second;
    };
    // The excess of a prefix to position `depth` (the whole pipeline at
    // the last) whose interleaved stages hold at least k layers each (0:
    // it cannot interleave): the largest floor holding k of its layouts
    // and of each open position's least, less `tail`.
    auto excess_of = [&](int depth, const std::vector<int>& layout_index, int k, double tail) {
      if (k <= 0) return 0.0;
      double most = static_cast<std::size_t>(depth) + 1 < n ? open_holding(k)[depth + 1] : 0.0;
      for (int j = 0; j <= depth; ++j)
        most = std::max(most, tail_floors.floor(space.group_orders()[o][j], layout_index[j], k));
      return std::max(0.0, most - tail);
    };
    std::vector<int> stage_layers_each;  // a whole skeleton's L / p per w
    // The embedding and output-layer time of each layout of the first and
    // last positions (both for a lone stage), in the fastest mode.
    std::vector<double> first_edge, last_edge, both_edges;
    double least_last_edge = 0;
    std::vector<double> open_tau_min(n + 1, kInf);  // the least tau of any layout of positions >= j
    auto edge_of = [&](std::size_t j, std::size_t i, bool first, bool last) {
      const GroupLayout& g = space.layouts(space.group_orders()[o][j])[t.ok[j][i]];
      return balancer.edge_time(StageSlot{g.group, 0, g.gpus_per_stage, g.tp, g.dp}, space.micro_batches()[b], first,
                                last);
    };
    const bool every_position_open = std::none_of(t.ok.begin(), t.ok.end(), [](const auto& l) { return l.empty(); });
    // This walk stands for every arrangement of the order's middle groups
    // (SkeletonWalk::arrangements): the tests where each stage sits (its
    // memory there) differ between them, so they are left to each
    // skeleton's own bound (visit); what is left sees only which group is
    // first and last and the open groups as a set.
    walk.arrangements = true;
    walk.rules = &rules;
    // Whether some arrangement of the skeleton's stages [loose_begin,
    // loose_end) (middle groups not placed yet) can beat keep_below: the
    // walk's bound of them all (the pipeline, the stages' tail floor, the
    // interleaved terms' own) and, `searched`, then the search's
    // (LoadBalancer::searched_arrangement_lower_bound: the pace and the
    // tail together, each vpp's memory; dearer, tens of tail bounds). The
    // whole middle of a leaf is asked both, each placement of its first
    // groups (SkeletonWalk::keep_arrangement) the first: Llama 3 70B on
    // eight node groups of 64 GPUs had visited 110 million arrangements,
    // 1.4% of them kept, and proves its optimum in 87 s rather than 308.
    // The searched bound asked of placements too cut that to 96 s there,
    // but on six groups of 45 GPUs (Llama 3 8B under FSDP), where neither
    // cuts anything, it took the initialization from 24 s to 56.
    const auto keeps_arrangements = [&](const Skeleton& s, int loose_begin, int loose_end, bool searched) {
      const int back = s.num_stages() - loose_end;
      const double tail = tail_floors.floor(s);
      const double interleaved_excess = std::max(0.0, tail_floors.interleaved(s) - tail);
      if (!(tail + balancer.arrangement_lower_bound(s, loose_begin, back, keep_below - tail, interleaved_excess) <=
            keep_below))
        return false;
      return !searched || balancer.searched_arrangement_lower_bound(s, loose_begin, back, keep_below) <= keep_below;
    };
    const bool arranged = walks_arrangements(space.group_orders()[o]).has_value();
    // With one micro-batch (m = 1) too: the bounds' (m - 1) x pace is then
    // 0, and the stage sum alone cuts (six node groups at a global batch
    // of 8 had walked every skeleton of B = 8 unbounded, for minutes).
    if (t.rated && keep_below < kInf && every_position_open) {
      for (std::size_t j = n; j-- > 0;) {
        if (!t.rate[j].empty()) rest[j] = rest[j + 1] + *std::max_element(t.rate[j].begin(), t.rate[j].end());
      }
      for (std::size_t i = 0; i < t.ok[0].size(); ++i) {
        first_edge.push_back(edge_of(0, i, true, false));
        if (n == 1) both_edges.push_back(edge_of(0, i, true, true));
      }
      for (std::size_t i = 0; i < t.ok[n - 1].size(); ++i) last_edge.push_back(edge_of(n - 1, i, false, true));
      least_last_edge = *std::min_element(last_edge.begin(), last_edge.end());
      for (std::size_t j = n; j-- > 0;)
        open_tau_min[j] = std::min(open_tau_min[j + 1], *std::min_element(t.tau[j].begin(), t.tau[j].end()));
      // The pace past which a bound below is surely above keep_below (a
      // margin over the tests' 1e-9, so a merge stopped there cuts what the
      // whole merge would).
      auto enough_pace = [&](double below, double sum, const std::vector<double>& floors) {
        return pace_passing(below * (1 + 1e-6), sum, m, floors, excess);
      };
      // A prefix's or skeleton's bound from its whole-layer pace without
      // the sends and `floors`: the least of the interleaved terms there
      // and the plain term with the stages' sends (at least `sends` in
      // all). The plain term's own pace, each stage's sends in its edge,
      // comes from the classes `sending_classes` builds, merged only where
      // the interleaved terms alone pass `below` and the plain one at the
      // pace known so far does not (plain_pace_to[at] keeps it).
      auto bound_with_sends = [&](double pace, double sum, double sends, double below, std::size_t at,
                                  const auto& sending_classes) {
        const double interleaved = pipeline_time_lower_bound(pace, sum, m, floors, /*plain=*/false, excess);
        plain_pace_to[at] = std::max(plain_pace_to[at], pace);
        double plain = pipeline_time_lower_bound(plain_pace_to[at], sum + sends, m, 1);
        if (sends > 0 && interleaved * (1 - 1e-9) > below && plain * (1 - 1e-9) <= below) {
          sending_classes();
          plain_pace_to[at] = least_whole_layer_pace(classes, layers, plain_pace_to[at],
                                                     pace_passing(below * (1 + 1e-6), sum + sends, m, {}));
          plain = pipeline_time_lower_bound(plain_pace_to[at], sum + sends, m, 1);
        }
        return std::min(interleaved, plain);
      };
      // Whether the sum term at each pace (paced_classes_lower_bound) puts
      // a prefix or skeleton above `below`, the cheaper tests having kept
      // it: paced near its least bottleneck, its stages are near that pace,
      // well above the unpaced sum's every extra layer on the fastest
      // stage. `classes_for(sending)` builds its classes into `classes`
      // (with each stage's sends in its edge, or not); `from` and
      // `plain_from` are the least paces known without and with the sends,
      // `fixed` what the sum holds beyond the classes (an open last
      // position's edge). The interleaved terms first, then the plain one
      // with the sends. Llama 3 70B on eight node groups of 64 GPUs: a
      // third of the prefixes the cheaper tests keep are cut here; with
      // the leaves the search takes 48 s rather than 86, and Llama 3 405B
      // there finishes (228 s; not in 300 s before).
      auto paced_cuts = [&](const auto& classes_for, double from, double plain_from, double fixed, double sum,
                            double sends, double below) {
        const double enough = below * (1 + 1e-6);
        classes_for(false);
        double paced = floors.empty() ? kInf
                                      : paced_classes_lower_bound(classes, layers, m, from, fixed, sum, floors,
                                                                  /*plain=*/false, enough, excess);
        if (paced * (1 - 1e-9) > below) {
          if (sends > 0) classes_for(true);
          paced = std::min(paced, paced_classes_lower_bound(classes, layers, m, plain_from, fixed, sum + sends, {},
                                                            /*plain=*/true, enough));
        }
        return paced * (1 - 1e-9) > below;
      };
      walk.keep_prefix = [&, n, enough_pace, bound_with_sends, paced_cuts](int depth,
                                                                           const std::vector<int>& layout_index) {
        const auto& list = t.ok[depth];  // ascending: find the layout's slot
        const std::size_t i = static_cast<std::size_t>(
            std::lower_bound(list.begin(), list.end(), layout_index[depth]) - list.begin());
        screen_pace[depth + 1] = kInf;  // until this prefix passes
        pace_to[depth + 1] = pace_to[depth];  // until this prefix's own is known
        plain_pace_to[depth + 1] = plain_pace_to[depth];
        rate_to[depth + 1] = rate_to[depth] + t.rate[depth][i];
        tau_min[depth + 1] = std::min(tau_min[depth], t.tau[depth][i]);
        tau_at[depth] = t.tau[depth][i];
        const int group = space.group_orders()[o][depth];
        stages_at[depth] = space.layouts(group)[layout_index[depth]].stages;
        stages_to[depth + 1] = stages_to[depth] + stages_at[depth];
        slot_at[depth] = i;
        finish_at[depth] = finish_times.layout(group, b, layout_index[depth]);
        if (screen_pace[depth] < kInf && finish_at[depth] &&
            stages_at[depth] * held_by(*finish_at[depth], screen_pace[depth]) < std::max(1LL, screen_need[depth]))
          return false;
        // Under plain 1F1B a stage's pipeline sends join its edge
        // (split_lower_bound.hpp); `sending` says whether they count. Stage
        // k of position j's layout, the pipeline `whole` or a prefix (then
        // the prefix's last stage still sends to a later position).
        auto sends_of = [&](std::size_t j, int k, bool whole, bool sending) {
          if (!sending) return 0.0;
          return layout_sends.of(space.group_orders()[o][j], b, layout_index[j])
              .stage(k, stages_at[j], j == 0, whole && j + 1 == n);
        };
        // Every stage's sends to position `last` (the whole pipeline's if it
        // is the last position).
        auto sends_to = [&](std::size_t last) {
          double total = 0;
          for (std::size_t j = 0; j <= last; ++j)
            total += layout_sends.of(space.group_orders()[o][j], b, layout_index[j]).all(stages_at[j], j == 0, j + 1 == n);
          return total;
        };
        // The tail this prefix's layouts and the open positions add at
        // least (StageTailFloors): the pipeline's own bound must stay
        // under keep_below less that.
        tail_to[depth + 1] = std::max(tail_to[depth], tail_floors.floor(group, layout_index[depth]));
        const double tail = std::max(tail_to[depth + 1], open_tail[depth + 1]);
        const double pipe_below = keep_below - tail;
        double bottleneck = layers / (rate_to[depth + 1] + rest[depth + 1]);
        double lower = static_cast<double>(m - 1) * bottleneck;
        if (depth + 1 < static_cast<int>(n)) {
          // The rates' pace first (cheap); then whole layers within what
          // memory lets each stage hold, the positions still open at the
          // most any layout of their group holds by each pace.
          if (lower * (1 - 1e-9) > pipe_below) return false;
          // Stage q of the prefix keeps at least min(p - q, m) micro-batches
          // in flight, p at least the prefix's stages and the fewest the
          // open positions take (they come after it).
          const int least_p = stages_to[depth + 1] + fewest_after[depth + 1];
          // Interleaved, each stage holds at least the fewest layers of any
          // pipeline from here that interleaves.
          excess = excess_of(depth, layout_index, vpp.fewest_layers_from(b, least_p), tail);
          auto prefix_classes = [&](bool where_it_sits, bool sending) {
            classes.clear();
            for (int j = 0; j <= depth; ++j) {
              const int group = space.group_orders()[o][j];
              const int count = stages_at[j];
              if (!where_it_sits) {
                // Only the pipeline's first stage runs an edge here; with
                // the sends, a layout's first and last stage send across
                // other boundaries than its middle ones.
                const bool first = stages_to[j] == 0;
                int from = 0, to = count;
                if (first || sending) {
                  add_stage(finish_at[j], 0, (first ? first_edge[slot_at[0]] : 0.0) + sends_of(j, 0, false, sending),
                            kAnywhere);
                  from = 1;
                }
                if (sending && count > 1) to = count - 1;
                add_stages_anywhere(finish_at[j], from, to, sends_of(j, from, false, sending));
                if (to < count) add_stage(finish_at[j], count - 1, sends_of(j, count - 1, false, true), kAnywhere);
                continue;
              }
              for (int k = 0, q = stages_to[j]; k < count; ++k, ++q) {
                const int cap = finish_times.held_in_flight(group, b, layout_index[j], std::min(least_p - q, m));
                add_stage(finish_at[j], k, (q == 0 ? first_edge[slot_at[0]] : 0.0) + sends_of(j, k, false, sending),
                          cap);
              }
            }
            // Each open position's group takes at least one stage, and each
            // stage at least one layer: its envelope holds one, at least
            // its group's least one-layer time (the pace cannot be under
            // it, nor the sum term), whichever layout it takes.
            for (std::size_t j = depth + 1; j < n; ++j)
              classes.push_back({finish_times.envelope(space.group_orders()[o][j], b), 0.0, 1, true});
          };
          for (int j = 0; j <= depth; ++j)
            if (!finish_at[j]) return true;
          for (std::size_t j = depth + 1; j < n; ++j)
            if (!finish_times.envelope(space.group_orders()[o][j], b)) return true;  // unknown capacity: rates decide
          // The sum term as at the leaf, with what is known: every layer at
          // least the least tau of any layout still possible, each stage of
          // the prefix its own tau's excess over that, the first stage's
          // edges and the least the last position's layouts add.
          const double least_tau = std::min(tau_min[depth + 1], open_tau_min[depth + 1]);
          double sum = layers * least_tau + first_edge[slot_at[0]] + least_last_edge;
          for (int j = 0; j <= depth; ++j) sum += stages_at[j] * (tau_at[j] - least_tau);
          // Whole layers, and the interleaved floors of the prefix's stages
          // (the open ones would only raise them) up to the largest vpp any
          // stage count from here allows: first with what each layout holds
          // wherever it sits (nothing to compute), then, if that keeps the
          // prefix and the walk is of this order alone, where its stages do
          // sit.
          // Plain 1F1B pays the prefix's sends (at least), each
          // interleaved schedule may hide them: the plain term with them,
          // its pace from classes whose edges hold them only where the
          // interleaved terms alone would cut the prefix.
          const double sends = sends_to(static_cast<std::size_t>(depth));
          for (const bool where_it_sits : {false, true}) {
            if (where_it_sits && arranged) break;
            prefix_classes(where_it_sits, false);
            interleaved_pace_floors(classes, vpp.most_from(b, least_p), floors, vpp.stage_layers(b));
            pace_to[depth + 1] = least_whole_layer_pace(classes, layers, std::max(bottleneck, pace_to[depth]),
                                                        enough_pace(pipe_below, sum, floors));
            lower = bound_with_sends(pace_to[depth + 1], sum, sends, pipe_below, depth + 1,
                                     [&] { prefix_classes(where_it_sits, true); });
            if (lower * (1 - 1e-9) > pipe_below) return false;
          }
          if (paced_cuts([&](bool sending) { prefix_classes(!arranged, sending); }, pace_to[depth + 1],
                         std::max(pace_to[depth + 1], plain_pace_to[depth + 1]), least_last_edge, sum, sends,
                         pipe_below))
            return false;
          // Kept: what screens the next position's layouts.
          const double pace = enough_pace(pipe_below, sum, floors);
          if (pace < kInf) {
            long long held = 0;
            for (int j = 0; j <= depth; ++j) held += stages_at[j] * held_by(*finish_at[j], pace);
            for (std::size_t j = depth + 2; j < n; ++j)
              held += held_by(*finish_times.envelope(space.group_orders()[o][j], b), pace);
            screen_pace[depth + 1] = pace;
            screen_need[depth + 1] = layers - held;
          }
        } else {
          // The skeleton is whole: its stage count, so each stage's place
          // and what memory lets it hold there (MemoryPruner::capacities,
          // what its own bound uses), and the largest vpp. Whole layers
          // with the edges, the interleaved pace floors, and the sum term
          // as sum_term_lower_bound has it: every stage one layer at its
          // own tau, the rest at the least, plus the edges.
          int p = 0;
          for (std::size_t j = 0; j < n; ++j) p += stages_at[j];
          if (p > layers) return true;  // a rule of its own (more_stages_than_layers)
          const bool lone = p == 1;
          const double e_first = lone ? both_edges[slot_at[0]] : first_edge[slot_at[0]];
          const double e_last = lone ? 0.0 : last_edge[slot_at[n - 1]];
          double sum = e_first + e_last;
          for (std::size_t j = 0; j < n; ++j) sum += stages_at[j] * tau_at[j];
          sum += std::max(0, layers - p) * tau_min[n];
          const int max_vpp = vpp.at(b, p);
          // Interleaved, every stage holds L / p layers.
          excess = excess_of(depth, layout_index, max_vpp > 1 ? layers / p : 0, tail);
          // The rates' pace first (cheap): the merges cost more.
          if (pipeline_time_lower_bound(bottleneck, sum, m, max_vpp, true, excess) * (1 - 1e-9) > pipe_below)
            return false;
          for (std::size_t j = 0; j < n; ++j)
            if (!finish_at[j]) return lower * (1 - 1e-9) <= pipe_below;
          // As at a prefix: first with what each layout holds wherever it
          // sits, then where each stage does (MemoryPruner::capacities) or,
          // for every arrangement, the balancer's bound of them all.
          auto leaf_classes = [&](bool where_it_sits, bool sending) {
            classes.clear();
            if (!where_it_sits) {
              // Every stage holds up to the model's layers (p of them, so
              // together all of them); only the first and last run edges,
              // and with the sends a layout's first and last stage send
              // across other boundaries than its middle ones.
              for (std::size_t j = 0, q = 0; j < n; q += static_cast<std::size_t>(stages_at[j]), ++j) {
                const int count = stages_at[j];
                int from = 0, to = count;
                if (q == 0 || sending) {
                  add_stage(finish_at[j], 0, (q == 0 ? e_first : 0.0) + sends_of(j, 0, true, sending), kAnywhere);
                  from = 1;
                }
                const bool holds_last = j + 1 == n && p > 1;
                if (holds_last || sending) to = std::max(from, to - 1);
                add_stages_anywhere(finish_at[j], from, to, sends_of(j, from, true, sending));
                if (to < count)
                  add_stage(finish_at[j], count - 1, (holds_last ? e_last : 0.0) + sends_of(j, count - 1, true, sending),
                            kAnywhere);
              }
              return true;
            }
            long long held = 0;
            for (std::size_t j = 0, q = 0; j < n; ++j) {
              const GroupLayout& g = space.layouts(space.group_orders()[o][j])[layout_index[j]];
              const StageSlot slot{g.group, 0, g.gpus_per_stage, g.tp, g.dp};
              for (int k = 0; k < stages_at[j]; ++k, ++q) {
                const int cap = where_it_sits ? memory.max_layers_leanest(slot, space.micro_batches()[b],
                                                                          static_cast<int>(q), p, m)
                                              : FinishClass{}.limit;
                // What memory removes is counted under its own rule.
                if (cap == 0) return false;
                held += std::min<long long>(cap, layers);
                add_stage(finish_at[j], k,
                          (q == 0 ? e_first : q + 1 == static_cast<std::size_t>(p) ? e_last : 0.0) +
                              sends_of(j, k, true, sending),
                          cap);
              }
            }
            return held >= layers;
          };
          // As at a prefix, the plain term with every stage's sends.
          const double sends = sends_to(n - 1);
          double leaf_pace = 0;
          for (const bool where_it_sits : {false, true}) {
            if (where_it_sits && arranged) break;
            if (!leaf_classes(where_it_sits, false)) return true;
            stage_layers_each.assign(static_cast<std::size_t>(std::max(0, max_vpp - 1)), layers / p);
            interleaved_pace_floors(classes, max_vpp, floors, stage_layers_each);
            const double pace = std::max(bottleneck, least_whole_layer_pace(classes, layers,
                                                                            std::max(bottleneck, pace_to[depth]),
                                                                            enough_pace(pipe_below, sum, floors)));
            leaf_pace = std::max(leaf_pace, pace);
            lower = bound_with_sends(pace, sum, sends, pipe_below, n, [&] { leaf_classes(where_it_sits, true); });
            if (lower * (1 - 1e-9) > pipe_below) return false;
          }
          // The sum term at each pace, as for a prefix (the loop above has
          // built these classes once already, so they hold the layers).
          if (paced_cuts([&](bool sending) { leaf_classes(!arranged, sending); }, leaf_pace,
                         std::max(leaf_pace, plain_pace_to[n]), 0.0, sum, sends, pipe_below))
            return false;
          // Every arrangement of the middle at once, before each is
          // visited: each middle stage where it holds the most.
          if (arranged) {
            const Skeleton whole = space.make(o, b, layout_index);
            return keeps_arrangements(whole, stages_at[0], whole.num_stages() - stages_at[n - 1], true);
          }
          return true;
        }
        return lower * (1 - 1e-9) <= pipe_below;
      };
    }
    walk.keep_arrangement = [&](const Skeleton& s, int loose_begin, int loose_end) {
      return keeps_arrangements(s, loose_begin, loose_end, false);
    };
    walk.visit = [&](Skeleton&& s) {
      // Its pipeline bound and its stages' least tail (StageTailFloors): a
      // function of the skeleton alone, whatever the walk's state.
      const double tail = tail_floors.floor(s);
      const double interleaved_excess = std::max(0.0, tail_floors.interleaved(s) - tail);
      s.lower_bound_s = tail + balancer.lower_bound(s, keep_below - tail, interleaved_excess);
      if (!(s.lower_bound_s <= keep_below)) {
        if (s.lower_bound_s <= above_best) {
          part.report.add(PruneRule::beyond_skeleton_limit, 1);
          part.dropped_bound = std::min(part.dropped_bound, s.lower_bound_s);
        } else {
          part.report.add(PruneRule::lower_bound_above_best, 1);
        }
        return;
      }
      s.work = skeleton_work(s, layers);
      part.kept.push_back(std::move(s));
      if (list_cap == 0) return;
      if (part.kept.size() > part.peak) {
        part.peak = part.kept.size();
        if (kept.fetch_add(1, std::memory_order_relaxed) + 1 > round_guard) overflow.store(true);
      }
      if (part.kept.size() >= 2 * task_cap) {
        // Keep this task's task_cap best; from here on it skips what could
        // only be dropped again.
        const auto dropped = static_cast<std::int64_t>(part.kept.size() - task_cap);
        const double cut = cut_to_best(part.kept, task_cap);
        part.report.add(PruneRule::beyond_skeleton_limit, dropped);
        part.dropped_bound = std::min(part.dropped_bound, cut);
        keep_below = std::min(keep_below, cut * (1 + kBoundSlack));
      }
    };
    walk.stop = must_stop;
    walk.fixed_layouts = slice.fixed_layouts;
    walk.counts_structure = slice.counts_structure;
    if (!enumerate_skeletons(space, &memory, o, b, part.report, walk)) stopped.store(true);
  };

  // Probes, deterministic, so every rank of a distributed search keeps the
  // same list: first each (order, B)'s skeletons of uniformly fast layouts
  // and each group set's best (probe_skeletons). Then one pass keeps every
  // skeleton whose bound can beat the threshold, in rounds of
  // kBlocksPerRound blocks of tasks: every block of a round is walked with
  // the threshold the round starts with, each block's best bounds are
  // balanced — what the search would balance first anyway — and the blocks
  // are merged in block order, so the threshold tightens while the pass
  // runs: later rounds skip more, the list is cut to the new threshold as
  // it grows, and a search stopped during initialization answers with the
  // best plan balanced so far rather than the first probes'. A round is a
  // fixed number of tasks, dealt to its blocks by the round alone
  // (walk_round), and the blocks' skeletons are chosen by (bound, id), so
  // the thresholds, and with them the list, depend neither on the thread
  // count nor on how many participants share the rounds: participant i of
  // n walks the blocks b of each round with b % n == i, and exchange()
  // brings it the others' (every participant then merges all alike).
  const std::size_t probe_count = 16 * static_cast<std::size_t>(std::max(1, options.top_k)) + 48;
  const std::size_t per_block =
      (static_cast<std::size_t>(std::max(1, options.top_k)) + 7 + kBlocksPerRound - 1) / kBlocksPerRound;
  const std::size_t tasks = orders.size() * static_cast<std::size_t>(num_b);
  std::vector<Skeleton>& list = prepared.skeletons;
  std::size_t cut_at = 0;  // list size that triggers the next cut to the threshold
  std::size_t first_task = 0;
  // Runs `step`; an error goes into `round`, for the next exchange to
  // report on every participant (none may wait there alone).
  auto catch_into = [](InitRound& round, const auto& step) {
    try {
      step();
    } catch (const InputError& e) {
      round.failure_code = kExitInvalidInput;
      round.file = e.file(), round.key = e.key(), round.value = e.value(), round.allowed = e.allowed();
    } catch (const std::exception& e) {
      round.failure_code = kExitFailure;
      round.value = e.what();
    }
  };
  auto rethrow = [](const InitRound& r) {
    if (r.failure_code == kExitInvalidInput) throw InputError(r.file, r.key, r.value, r.allowed);
    if (r.failure_code != 0) throw std::runtime_error(r.value);
  };
  // With an exchange the participants share the probes, the dives and the
  // bounds: this one takes every `share_step`-th from `share_first`.
  const bool shared = static_cast<bool>(options.exchange);
  const std::size_t share_step = shared ? static_cast<std::size_t>(std::max(1, options.participants)) : 1;
  const std::size_t share_first = shared ? static_cast<std::size_t>(options.participant) : 0;
  InitRound pending;  // an error before the rounds, or in a save: told at the next exchange
  // The dives from the best probes, each dive's plans in a block of its
  // index: a participant dives from every participants-th of them and one
  // exchange brings the others', so each dive runs once in the job.
  InitRound dives;
  bool diving = false;
  // The probes' plans, in probe order. With an exchange each participant
  // balances every share_step-th probe, each probe's plan (if it fits) in
  // a block of its index, and one exchange brings the others'.
  std::vector<Plan> probe_plans;
  InitRound probe_blocks;
  const bool probing = !options.resume && options.top_k > 0;
  catch_into(pending, [&] {
    if (options.resume) {
      // Where a saved initialization stopped: its probes and list, then the
      // rounds after it (InitProgress).
      const InitProgress& r = *options.resume;
      if (r.tasks != tasks || r.next_task > tasks || (r.next_task < tasks && r.next_task % kTasksPerRound != 0))
        throw InputError("", "checkpoint",
                         "an initialization of " + std::to_string(r.tasks) + " tasks stopped at task " +
                             std::to_string(r.next_task) + " (this search has " + std::to_string(tasks) + ")",
                         "a checkpoint written by this version for this search; remove the file");
      offer(r.probes);
      prepared.threshold_s = r.threshold_s;
      prepared.prune = r.prune;
      list = r.kept;
      cut_at = static_cast<std::size_t>(r.cut_at);
      first_task = static_cast<std::size_t>(r.next_task);
      prepared.dropped_bound_s = r.dropped_bound_s;
      limit_cutoff = r.limit_cutoff_s;
    } else if (probing) {
      const std::vector<Skeleton> probes =
          probe_skeletons(space, memory, balancer, rules, taus, probe_count, must_stop, stopped);
      if (!shared) {
        probe_plans = balanced_plans(probes);
        return;
      }
      std::vector<Skeleton> share;
      for (std::size_t i = share_first; i < probes.size(); i += share_step) share.push_back(probes[i]);
      const std::vector<std::optional<Plan>> plans = balanced(share);
      for (std::size_t k = 0; k < plans.size(); ++k) {
        InitBlock probe;
        probe.index = static_cast<std::uint32_t>(share_first + k * share_step);
        if (plans[k]) probe.plans.push_back(*plans[k]);
        probe_blocks.blocks.push_back(std::move(probe));
      }
    }
  });
  // One exchange of blocks that every participant reaches (none resumes,
  // each asks for the same top K), with its own blocks or the error that
  // stopped it before: every participant's blocks come back in index
  // order, and a stop anywhere stops all.
  auto share_blocks = [&](InitRound&& own) {
    InitRound mine = pending.failure_code != 0 ? std::move(pending) : std::move(own);
    pending = InitRound{};
    mine.stopped = stopped.load() || options.stop();
    std::vector<InitRound> all = options.exchange(mine);
    for (const InitRound& r : all) rethrow(r);
    InitRound merged;
    for (InitRound& r : all) {
      if (r.stopped) stopped.store(true);
      for (InitBlock& block : r.blocks) merged.blocks.push_back(std::move(block));
    }
    std::sort(merged.blocks.begin(), merged.blocks.end(),
              [](const InitBlock& a, const InitBlock& b) { return a.index < b.index; });
    return merged;
  };
  if (shared && probing)
    for (InitBlock& probe : share_blocks(std::move(probe_blocks)).blocks)
      for (Plan& plan : probe.plans) probe_plans.push_back(std::move(plan));
  catch_into(pending, [&] {
    if (probing) {
      offer(probe_plans);
      // Then greedy dives from the best few (one dive stalls where no single
      // move helps; they start apart), so a good plan is known long before
      // the walk reaches its skeleton: what a time limit returns, and a
      // tighter threshold for the walk.
      std::stable_sort(probe_plans.begin(), probe_plans.end(), [](const Plan& x, const Plan& y) {
        return x.predicted.iteration_time_s < y.predicted.iteration_time_s;
      });
      // A dive stops for the caller's stop alone, not once a plan meets
      // --gap: its plans are offered after every dive, in dive order, so
      // the plans kept do not depend on who dove which.
      diving = !gap_met.load();  // the probes may meet the gap already
      for (std::size_t i = share_first; diving && i < std::min(kDives, probe_plans.size()); i += share_step) {
        InitBlock dive;
        dive.index = static_cast<std::uint32_t>(i);
        dive.plans = dive_from(probe_plans[i], space, cost, memory, balancer, kDiveSteps, options.stop);
        dives.blocks.push_back(std::move(dive));
      }
    }
  });
  if (shared && probing) dives = share_blocks(std::move(dives));
  if (diving && pending.failure_code == 0)
    for (const InitBlock& dive : dives.blocks) offer(dive.plans);

  prepared.prune.considered = static_cast<std::int64_t>(
      std::min<std::uint64_t>(space.raw_size(), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
  // Drops the skeletons whose bound cannot beat the threshold (counted as
  // the skeletons the walk itself skips).
  auto cut_to_threshold = [&] {
    const double keep_below = prepared.threshold_s * (1 + kBoundSlack);
    const auto end = std::remove_if(list.begin(), list.end(),
                                    [&](const Skeleton& s) { return !(s.lower_bound_s <= keep_below); });
    prepared.prune.add(PruneRule::lower_bound_above_best, static_cast<std::int64_t>(list.end() - end));
    list.erase(end, list.end());
    cut_at = 2 * std::max<std::size_t>(list.size(), probe_count);
  };
  // What walking a task costs, relative to the others: the skeletons its
  // layouts that pass the structural rules make (their product over the
  // order's groups; what B allows changes it by orders of magnitude) times
  // the orders its walk stands for, (n - 2)! when it walks every
  // arrangement of its middle (SkeletonWalk::arrangements). An order
  // another one walks costs its structural counts only: 1, as a task with
  // nothing to walk.
  //
  // A task of weight kSliceWeight or more is walked in slices: one per
  // choice of the layouts of its first d positions, d the fewest whose
  // choices number kSlicesOfAHeavyTask (all but the last position at
  // most), in the walk's own (mixed-radix) order. Which tasks are sliced,
  // and how, depends on the task alone.
  struct WeighedTask {
    double weight = 1;
    std::vector<TaskSlice> slices{TaskSlice{}};
  };
  auto weigh_task = [&](std::size_t task) {
    WeighedTask weighed;
    const int o = static_cast<int>(task / static_cast<std::size_t>(num_b));
    const int b = static_cast<int>(task % static_cast<std::size_t>(num_b));
    const std::vector<int>& order = orders[o];
    const std::optional<bool> walks = walks_arrangements(order);
    if (walks == false) return weighed;
    PruneReport scratch;
    const std::vector<std::vector<int>> ok = structural_layouts(space, o, b, scratch, &rules);
    double weight = 1;
    for (const std::vector<int>& layouts : ok) weight *= static_cast<double>(layouts.size());
    if (walks == true)
      for (std::size_t k = 2; k + 2 <= order.size(); ++k) weight *= static_cast<double>(k);
    weighed.weight = std::max(1.0, weight);
    if (weight < (options.slice_weight > 0 ? options.slice_weight : kSliceWeight)) return weighed;
    std::size_t depth = 0, choices = 1;
    while (choices < kSlicesOfAHeavyTask && depth + 1 < ok.size()) choices *= ok[depth++].size();
    if (choices < 2) return weighed;
    weighed.slices.assign(choices, TaskSlice{});
    for (std::size_t c = 0; c < choices; ++c) {
      TaskSlice& slice = weighed.slices[c];
      slice.fixed_layouts.resize(depth);
      slice.counts_structure = c == 0;
      for (std::size_t j = depth, rest = c; j-- > 0; rest /= ok[j].size())
        slice.fixed_layouts[j] = ok[j][rest % ok[j].size()];
    }
    return weighed;
  };
  // How long each block of the last round took to walk (the sum of its
  // tasks' times), every participant's, as the exchange brought them: the
  // next round's blocks are dealt among the participants by these. A
  // block's tasks are fixed by its round, and the blocks merge in block
  // order, so which participant walks one changes when the round ends,
  // never what it keeps. The task weights deal tasks to blocks but predict
  // their times poorly (Llama 3 70B on six groups: two of eight blocks of
  // equal weight take under 1% of a round), while block k's share changes
  // little from one round to the next.
  std::array<double, kBlocksPerRound> last_block_s{};
  // Which participant walks each block: the longest first (by the last
  // round's times; ties, and a first round, by index), each to the
  // participant with the least so far (ties: the lower).
  auto deal_blocks = [&] {
    std::array<std::uint32_t, kBlocksPerRound> walker{};
    const int n = std::max(1, options.participants);
    std::array<std::uint32_t, kBlocksPerRound> by_time{};
    for (std::uint32_t b = 0; b < kBlocksPerRound; ++b) by_time[b] = b;
    std::stable_sort(by_time.begin(), by_time.end(),
                     [&](std::uint32_t x, std::uint32_t y) { return last_block_s[x] > last_block_s[y]; });
    std::vector<double> load(static_cast<std::size_t>(n), 0.0);
    std::vector<int> count(static_cast<std::size_t>(n), 0);
    for (std::uint32_t b : by_time) {
      std::size_t least = 0;
      for (std::size_t q = 1; q < load.size(); ++q)
        if (load[q] < load[least] || (load[q] == load[least] && count[q] < count[least])) least = q;
      walker[b] = static_cast<std::uint32_t>(least);
      load[least] += last_block_s[b];
      ++count[least];
    }
    return walker;
  };
  // This participant's blocks of the round of tasks [round, end).
  auto walk_round = [&](std::size_t round, std::size_t end) {
    InitRound mine;
    catch_into(mine, [&] {
      // The round's tasks dealt to its kBlocksPerRound blocks by weight,
      // heaviest first, each to the block with the least weight so far
      // (ties: the lower block), so the blocks cost about the same though a
      // few tasks walk for many orders and most for none; each block keeps
      // its tasks in task order. The deal depends on the round alone, not on
      // the thread or participant count. This participant's blocks are
      // walked in one parallel loop, then balanced each.
      std::vector<WeighedTask> weighed(end - round);
      std::vector<std::pair<double, std::size_t>> by_weight;  // (weight, task)
      for (std::size_t task = round; task < end; ++task) {
        weighed[task - round] = weigh_task(task);
        by_weight.emplace_back(weighed[task - round].weight, task);
      }
      std::stable_sort(by_weight.begin(), by_weight.end(),
                       [](const auto& x, const auto& y) { return x.first > y.first; });
      std::array<double, kBlocksPerRound> load{};
      std::vector<std::pair<std::uint32_t, std::size_t>> dealt;  // (block, task)
      for (const auto& [weight, task] : by_weight) {
        const auto lightest = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        load[lightest] += weight;
        dealt.emplace_back(static_cast<std::uint32_t>(lightest), task);
      }
      std::sort(dealt.begin(), dealt.end());
      const std::array<std::uint32_t, kBlocksPerRound> walker = deal_blocks();
      std::vector<std::pair<std::uint32_t, std::size_t>> work;  // (block, task): this participant's
      for (const auto& [block, task] : dealt)
        if (walker[block] == static_cast<std::uint32_t>(options.participant)) work.emplace_back(block, task);
      // Each task's slices, in task and slice order: (work item, slice).
      std::vector<std::pair<std::size_t, const TaskSlice*>> pieces;
      for (std::size_t k = 0; k < work.size(); ++k)
        for (const TaskSlice& slice : weighed[work[k].second - round].slices) pieces.emplace_back(k, &slice);
      std::vector<Part> parts(pieces.size());
      std::vector<double> piece_s(pieces.size());
      // Walked heaviest first, each to the next free thread (longest
      // processing time first): a round ends with its slowest piece, and a
      // task walking every arrangement of six middle groups can take
      // seconds where most take microseconds; started last, it left the
      // other thread idle (Llama 3 405B on eight node groups, two threads).
      // A slice weighs its task's weight over its slices. Each piece writes
      // its own part, merged below in block, task and slice order, so the
      // order they are walked in changes nothing kept.
      std::vector<double> piece_weight(pieces.size());
      for (std::size_t p = 0; p < pieces.size(); ++p) {
        const WeighedTask& task = weighed[work[pieces[p].first].second - round];
        piece_weight[p] = task.weight / static_cast<double>(task.slices.size());
      }
      std::vector<std::size_t> heaviest_first(pieces.size());
      for (std::size_t p = 0; p < heaviest_first.size(); ++p) heaviest_first[p] = p;
      std::stable_sort(heaviest_first.begin(), heaviest_first.end(),
                       [&](std::size_t x, std::size_t y) { return piece_weight[x] > piece_weight[y]; });
      parallel::for_each_in_order(heaviest_first.size(), [&](std::size_t i) {
        const std::size_t p = heaviest_first[i];
        const Stopwatch watch;
        walk_task(work[pieces[p].first].second, *pieces[p].second, parts[p]);
        piece_s[p] = watch.seconds();
        return true;
      });
      for (std::size_t p = 0; p < pieces.size(); ++p) {
        const std::uint32_t index = work[pieces[p].first].first;
        if (mine.blocks.empty() || mine.blocks.back().index != index) {
          mine.blocks.emplace_back();
          mine.blocks.back().index = index;
        }
        InitBlock& block = mine.blocks.back();
        block.walk_s += piece_s[p];
        block.prune.merge(parts[p].report);
        block.dropped_bound_s = std::min(block.dropped_bound_s, parts[p].dropped_bound);
        for (auto& s : parts[p].kept) block.kept.push_back(std::move(s));
      }
      // Every block's best bounds, balanced in one parallel loop: a block
      // holds one or two, and balancing them block by block left a thread
      // of two idle (Llama 3 405B on eight node groups: 228 s on two
      // threads, 211 s now; 278 s on one). Each block's plans in the order
      // of its bounds, as before.
      std::vector<Skeleton> best;
      std::vector<std::size_t> owner;  // per entry of `best`: its block in mine.blocks
      for (std::size_t b = 0; b < mine.blocks.size() && options.top_k > 0 && !stopped.load(); ++b) {
        const std::vector<Skeleton>& kept = mine.blocks[b].kept;
        std::vector<std::size_t> order(kept.size());
        for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
        const std::size_t keep = std::min(per_block, order.size());
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                          [&](std::size_t x, std::size_t y) { return by_bound(kept[x], kept[y]); });
        for (std::size_t k = 0; k < keep; ++k) {
          best.push_back(kept[order[k]]);
          owner.push_back(b);
        }
      }
      std::vector<std::optional<Plan>> plans = balanced(best);
      for (std::size_t k = 0; k < plans.size(); ++k)
        if (plans[k]) mine.blocks[owner[k]].plans.push_back(std::move(*plans[k]));
    });
    // A walk the memory guard cut short has stopped too (must_stop): the
    // round says which, so every participant walks it again alike.
    mine.overflow = overflow.load();
    mine.peak_kept = kept.load();
    mine.stopped = stopped.load() && !mine.overflow;
    return mine;
  };
  // No round to report it at: this participant alone fails, before any
  // exchange, as every one would.
  if (first_task >= tasks) rethrow(pending);
  // The progress of every round before `next_task` (a multiple of
  // kTasksPerRound), for a resumed initialization to go on from.
  auto progress_at = [&](std::size_t next_task) {
    InitProgress progress;
    progress.next_task = next_task;
    progress.tasks = tasks;
    progress.kept = list;
    progress.probes = seeds.plans();
    progress.threshold_s = prepared.threshold_s;
    progress.prune = prepared.prune;
    progress.cut_at = cut_at;
    progress.dropped_bound_s = prepared.dropped_bound_s;
    progress.limit_cutoff_s = limit_cutoff;
    return progress;
  };
  auto save_progress = [&](std::size_t next_task) {
    catch_into(pending, [&] { options.save(progress_at(next_task)); });
  };
  // The probes and dives ran to their end (or were restored): a resumed
  // initialization does not run them again, so only then is progress saved.
  // A dive stopped midway says so only by the stop, which stays.
  const bool probes_complete = !stopped.load() && !must_stop();
  // Walks tasks [begin, end) as a round of their own and merges it; false
  // when the initialization ends there (a stop). A round whose tasks held
  // more than the memory guard at their peaks is thrown away and walked
  // again in kPiecesOfAnOverflow pieces, each merged and cut to the limit
  // before the next, so later ones walk with the earlier ones' cutoff; the
  // guard counts each task's own peak, so whether a round passes it, and
  // with it the list, depends neither on the thread count nor on the
  // participants. Llama 3 70B on 8 groups of 64 GPUs: one round of the
  // 438,400 held over a million skeletons and stopped the initialization
  // with a 21% gap.
  const std::function<bool(std::size_t, std::size_t)> walk_range = [&](std::size_t begin, std::size_t end) {
    kept.store(0);
    InitRound mine = pending.failure_code != 0 ? std::move(pending) : walk_round(begin, end);
    std::vector<InitRound> all;
    if (options.exchange)
      all = options.exchange(mine);
    else
      all.push_back(std::move(mine));
    // Every participant leaves together: on an error (the lowest
    // participant's, alike everywhere), a stop, or too many skeletons.
    for (const InitRound& r : all) rethrow(r);
    const bool any_stop = std::any_of(all.begin(), all.end(), [](const InitRound& r) { return r.stopped; });
    // Past the guard together, though each alone may not be: what one
    // process walking every block would have seen.
    std::int64_t peak_kept = 0;
    for (const InitRound& r : all) peak_kept += r.peak_kept;
    const bool any_overflow = peak_kept > round_guard ||
                              std::any_of(all.begin(), all.end(), [](const InitRound& r) { return r.overflow; });
    if (any_overflow && !any_stop) {
      // A task holds at most 2 x task_cap <= round_guard: only a round of
      // several tasks passes the guard.
      if (end - begin < 2) throw std::logic_error("prepare_search: one task passed the memory guard");
      ++prepared.rounds_split;
      overflow.store(false);
      stopped.store(false);
      const std::size_t pieces = std::min<std::size_t>(kPiecesOfAnOverflow, end - begin);
      for (std::size_t k = 0; k < pieces; ++k)
        if (!walk_range(begin + (end - begin) * k / pieces, begin + (end - begin) * (k + 1) / pieces)) return false;
      return true;
    }
    // A stop inside a round that began with the list as the rounds before
    // it left it: that progress is saved (a search stopped mid-round, by a
    // signal or its time limit, resumes from there; the round itself is
    // walked again).
    if (any_stop && options.save && probes_complete && begin % kTasksPerRound == 0) save_progress(begin);
    if (any_stop) stopped.store(true);
    std::vector<InitBlock*> blocks;
    for (InitRound& r : all)
      for (InitBlock& block : r.blocks) blocks.push_back(&block);
    last_block_s.fill(0.0);
    for (const InitBlock* block : blocks)
      if (block->index < kBlocksPerRound) last_block_s[block->index] = block->walk_s;
    std::sort(blocks.begin(), blocks.end(), [](const InitBlock* x, const InitBlock* y) { return x->index < y->index; });
    const double before = prepared.threshold_s;
    for (InitBlock* block : blocks) {
      prepared.prune.merge(block->prune);
      prepared.dropped_bound_s = std::min(prepared.dropped_bound_s, block->dropped_bound_s);
      for (Skeleton& s : block->kept) list.push_back(std::move(s));
      offer(block->plans);
    }
    if (stopped.load()) return false;
    if (list_cap > 0 && list.size() > list_cap) {
      // The list's list_cap best stay; the rounds after skip what lies
      // above the last of them.
      prepared.prune.add(PruneRule::beyond_skeleton_limit, static_cast<std::int64_t>(list.size() - list_cap));
      const double cut = cut_to_best(list, list_cap);
      prepared.dropped_bound_s = std::min(prepared.dropped_bound_s, cut);
      limit_cutoff = std::min(limit_cutoff, cut);
    }
    if (prepared.threshold_s < before && list.size() >= cut_at) cut_to_threshold();
    return true;
  };
  for (std::size_t round = first_task; round < tasks; round += kTasksPerRound) {
    if (!walk_range(round, std::min(tasks, round + kTasksPerRound))) break;
    // A whole round done, not the last: the progress a resumed
    // initialization goes on from, when it is time to save it or a stop was
    // just seen. After the last, the caller saves what comes next.
    const std::size_t next_task = round + kTasksPerRound;
    if (options.save && next_task < tasks && (options.save_due() || options.stop())) save_progress(next_task);
    if (options.round_done)
      options.round_done(std::min(next_task, tasks), tasks,
                         prepared.probes.empty() ? kInf : prepared.probes.front().predicted.iteration_time_s);
  }
  if (options.walked && probes_complete && !stopped.load() && !must_stop()) {
    options.walked(progress_at(tasks));
  }
  // The kept skeletons' bounds with each vpp's own memory and the tail
  // bounded with the pace (LoadBalancer::searched_lower_bound): where a
  // skeleton cannot interleave, its bound is the plain schedule's, so the
  // search stops sooner and the threshold cuts more (Llama 3 70B on six
  // groups: 70,416 kept skeletons became 52,704, 22 s became 18). Asked of
  // skeletons without interleaving too: their walk bound has only the
  // stages' one-layer tail floors (StageTailFloors). A pure function of each
  // skeleton, so the list stays alike on every thread count; participants
  // share the work (every participants-th skeleton from their own index)
  // and exchange the bounds once, always, so each calls the exchange as
  // often as the others. A stop asked meanwhile (looked for every 1,024
  // skeletons: about 30 ms) stops the initialization there; the bounds not
  // tightened by then stay the walk's, valid as they are.
  {
    const std::size_t step = share_step, first = share_first;
    InitRound mine;
    mine.stopped = stopped.load();
    if (!mine.stopped && first < list.size()) {
      const double cut = options.top_k > 0 ? prepared.threshold_s * (1 + kBoundSlack) : kInf;
      mine.bounds.resize((list.size() - first + step - 1) / step);
      std::atomic<bool> interrupted{false};
      parallel::for_each(mine.bounds.size(), [&](std::size_t j) {
        const Skeleton& s = list[first + j * step];
        mine.bounds[j] = s.lower_bound_s;
        if (interrupted.load(std::memory_order_relaxed) || (j % 1024 == 0 && options.stop())) {
          interrupted.store(true);
          return;
        }
        mine.bounds[j] = std::max(s.lower_bound_s, balancer.searched_lower_bound(s, cut));
      });
      mine.stopped = interrupted.load();
    }
    std::vector<InitRound> all;
    if (shared)
      all = options.exchange(mine);
    else
      all.push_back(std::move(mine));
    for (std::size_t q = 0; q < all.size(); ++q) {
      if (all[q].stopped) stopped.store(true);
      for (std::size_t j = 0; j < all[q].bounds.size(); ++j) list[q + j * step].lower_bound_s = all[q].bounds[j];
    }
  }
  if (options.top_k > 0) cut_to_threshold();

  prepared.stopped = stopped.load();
  prepared.gap_reached = gap_met.load() && prepared.stopped;
  std::sort(prepared.skeletons.begin(), prepared.skeletons.end(), by_bound);
  prepared.prune.kept = static_cast<std::int64_t>(prepared.skeletons.size());
  return prepared;
}

ShareOutcome search_share(const CostModel& cost, const MemoryPruner& memory, LatencyCache& cache,
                          const std::vector<Skeleton>& skeletons, std::span<const std::size_t> positions,
                          Incumbent& incumbent, const ShareControl& control) {
  const LoadBalancer balancer(cost, memory, &cache);
  std::atomic<std::int64_t> balanced{0}, evaluated{0}, above{0}, no_split{0};
  std::atomic<bool> stopped{false};
  const std::function<bool()> must_stop = control.stop;
  // The frontier: the first position not balanced yet. Positions are in
  // ascending lower-bound order, so its bound is the least of every open
  // skeleton's; workers finish out of order.
  parallel::InOrderFrontier frontier(control.open_bound ? positions.size() : 0);
  auto open_bound_from = [&](std::size_t j) {
    return j < positions.size() ? std::min(skeletons[positions[j]].lower_bound_s, control.rest_bound)
                                : control.rest_bound;
  };
  if (control.open_bound) control.open_bound->store(open_bound_from(0));
  auto mark_finished = [&](std::size_t j) {
    if (control.open_bound) control.open_bound->store(open_bound_from(frontier.finish(j)));
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
    const BalanceResult r = balancer.balance(s, bound, must_stop);
    if (r.status == BalanceResult::Status::stopped) {
      // Stopped inside the balance: this skeleton is not done (a resumed
      // search balances it again).
      stopped.store(true);
      return false;
    }
    const bool estimated = r.status == BalanceResult::Status::found;
    switch (r.status) {
      case BalanceResult::Status::found: {
        Plan plan = make_plan(cost.problem(), s, r.split.layer_end, r.split.recompute, r.split.vpp);
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
      case BalanceResult::Status::stopped:
        break;  // returned above
    }
    balanced.fetch_add(1, std::memory_order_relaxed);
    mark_finished(j);
    if (control.on_skeleton) control.on_skeleton(estimated);
    return true;
  });
  // Searched to the end: what was not balanced was skipped by the bound.
  if (control.open_bound && !stopped.load()) control.open_bound->store(control.rest_bound);
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

namespace {
// A skeleton's share of a chunk's work: never zero, so every chunk weighs.
double chunk_weight(const Skeleton& s) { return std::max(s.work, 1e-9); }
}  // namespace

std::vector<SkeletonChunk> cut_into_chunks(const std::vector<Skeleton>& skeletons, std::size_t count) {
  const std::size_t n = skeletons.size();
  count = std::min(count, n);
  std::vector<std::uint64_t> ends;
  if (count == 0) return {};
  double total = 0;
  for (const Skeleton& s : skeletons) total += chunk_weight(s);
  double acc = 0;
  for (std::size_t j = 0; j < n; ++j) {
    acc += chunk_weight(skeletons[j]);
    const std::size_t made = ends.size();
    const std::size_t left_after = n - (j + 1);        // skeletons still to place
    const std::size_t chunks_after = count - made - 1;  // chunks still to fill after this one
    const bool reached = acc >= total * static_cast<double>(made + 1) / static_cast<double>(count);
    if ((reached && left_after >= chunks_after) || left_after == chunks_after) ends.push_back(j + 1);
    if (ends.size() == count) break;
  }
  ends.back() = n;
  return chunks_ending_at(skeletons, ends);
}

std::vector<SkeletonChunk> chunks_ending_at(const std::vector<Skeleton>& skeletons,
                                            const std::vector<std::uint64_t>& ends) {
  std::vector<SkeletonChunk> chunks;
  chunks.reserve(ends.size());
  std::size_t begin = 0;
  for (std::uint64_t end : ends) {
    SkeletonChunk c{begin, static_cast<std::size_t>(end), 0};
    for (std::size_t j = c.begin; j < c.end && j < skeletons.size(); ++j) c.work += chunk_weight(skeletons[j]);
    chunks.push_back(c);
    begin = c.end;
  }
  return chunks;
}

}  // namespace autohaap
