#include "autohaap/search/load_balancer.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "autohaap/search/split_lower_bound.hpp"
#include "autohaap/search/threshold_split.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/units.hpp"

namespace autohaap {
namespace {

// Relative slack when comparing values computed along different paths
// (a bound, a decomposed sum, the cost model's own sum): rounding must never
// make the search skip a plan that ties the incumbent.
constexpr double kSlack = 1e-9;

// The exact split search of one skeleton (see the header for the method):
// bottlenecks T ascending from the least feasible one and, for each, sync
// thresholds S ascending, then a polish of the best split.
class ExactSplitSearch {
 public:
  enum class Outcome { found, above_bound, infeasible, stopped };

  ExactSplitSearch(StageCostTable& table, double bound, const std::function<bool()>& stop, double sum_lower,
                   double sync_lower)
      : table_(table),
        split_(table),
        p_(table.stages()),
        m_(table.micro_batches()),
        w_(1.0 / table.vpp()),
        bound_(bound),
        stop_(stop),
        sum_lower_(sum_lower),
        sync_lower_(sync_lower),
        reach_s_(table) {}

  const std::vector<int>& best_split() const { return best_split_; }
  double best() const { return best_; }

  Outcome run() {
    const ThresholdSplit::Start start = split_.least_feasible_bottleneck([this] { return stopping(); });
    if (start.status == ThresholdSplit::Start::Status::stopped) return Outcome::stopped;
    if (start.status == ThresholdSplit::Start::Status::infeasible) return Outcome::infeasible;
    double T = start.T;

    if (m_ == 1) {
      // No steady state: the bottleneck does not matter, only the sums.
      T = kInf;
      split_.set_threshold(T);
      if (hopeless(w_ * sum_lower_ + sync_lower_)) return Outcome::above_bound;
      try_bottleneck(T);
    }
    // Bottlenecks ascending; every later one has a larger lower bound, so the
    // loop ends once that bound exceeds the best split found, or aborts once
    // it exceeds the caller's bound and nothing found beats that either.
    while (T < kInf) {
      if (stopping()) return Outcome::stopped;
      const double lower = steady(T) + w_ * sum_lower_ + sync_lower_;
      if (lower > limit()) break;
      if (hopeless(lower)) return Outcome::above_bound;
      try_bottleneck(T);
      T = split_.next_bottleneck_event();
      // Where tails vary, a leaner mode's pace is a bottleneck too.
      if (table_.tails_vary()) T = std::min(T, split_.next_option_pace(split_.bottleneck_reach()));
      if (T == kInf) break;
      split_.set_threshold(T);
    }
    if (stopping()) return Outcome::stopped;
    if (best_split_.empty()) return Outcome::infeasible;
    polish();
    if (stopping()) return Outcome::stopped;
    return best_ <= bound_ * (1 + kSlack) ? Outcome::found : Outcome::above_bound;
  }

 private:
  // Keeps the first split of least iteration time (exact comparison: the
  // visiting order is fixed, so the choice among ties is too).
  void consider(const std::vector<int>& ends) {
    const double value = table_.iteration_time(ends);
    if (value < best_) {
      best_ = value;
      best_split_ = ends;
    }
  }
  // Pruning inside one skeleton uses only its own best: the caller's bound
  // may differ between runs (threads, ranks), so it only ever aborts the
  // whole search (see run), never changes which split is found.
  double limit() const { return best_ * (1 + kSlack); }
  bool hopeless(double lower) const {
    const double cap = bound_ * (1 + kSlack);
    return lower > cap && best_ > cap;
  }
  // The caller's stop, asked between thresholds; once true, every loop ends.
  bool stopping() {
    if (!stopped_ && stop_ && stop_()) stopped_ = true;
    return stopped_;
  }
  // The steady-state term (m - 1/v) * T (the sum term weighs w = 1/v):
  // CostModel::iteration_time_1f1b's m * pace + (sum - pace) / v. With one
  // micro-batch there is none (and no interleaving: it needs m >= p >= 2).
  double steady(double T) const { return m_ > 1 ? (m_ - w_) * T : 0.0; }

  // Every split whose slowest stage takes at most T: the least sum alone,
  // then with the sync term capped at each threshold S in turn.
  void try_bottleneck(double T) {
    const Reach& reach_t = split_.bottleneck_reach();
    const double sum_t = split_.min_sum(reach_t, nullptr);
    consider(split_.split());
    if (steady(T) + w_ * sum_t + sync_lower_ > limit()) return;
    if (table_.tails_vary()) {
      // Tails neither grow with the layers nor are least in the fastest
      // mode: each tail an option may have is a threshold, and ranges are
      // filtered by it (ThresholdSplit::min_sum_within).
      for (const double S : split_.tails_within(reach_t)) {
        if (S < sync_lower_) continue;
        if (steady(T) + S + w_ * sum_t > limit() || stopping()) break;
        if (split_.min_sum_within(reach_t, S) < kInf) consider(split_.split());
      }
      return;
    }
    reach_s_.clear();
    double S = sync_lower_;
    split_.grow_sync(reach_s_, S, &reach_t);
    while (steady(T) + S + w_ * sum_t <= limit() && !stopping()) {
      // For identical layers a cheap count test skips hopeless thresholds.
      const bool possible = !table_.identical() || split_.feasible(reach_s_, &reach_t);
      if (possible && split_.min_sum(reach_t, &reach_s_) < kInf) consider(split_.split());
      S = split_.next_sync_event(reach_s_, &reach_t);
      if (S == kInf) break;
      split_.grow_sync(reach_s_, S, &reach_t);
    }
  }

  // Moves single layers across stage boundaries while the true iteration
  // time improves.
  void polish() {
    std::vector<int> ends = best_split_;
    double value = best_;
    for (int round = 0; round < 4 * p_ && !stopping(); ++round) {
      bool improved = false;
      for (int k = 0; k + 1 < p_; ++k) {
        for (int delta : {-1, +1}) {
          const int begin = k == 0 ? 0 : ends[k - 1];
          const int moved = ends[k] + delta;
          if (moved <= begin || moved >= ends[k + 1]) continue;
          std::vector<int> trial = ends;
          trial[k] = moved;
          const double v = table_.iteration_time(trial);
          if (v < value * (1 - 1e-12)) {
            ends = std::move(trial);
            value = v;
            improved = true;
          }
        }
      }
      if (!improved) break;
    }
    best_split_ = ends;
    best_ = value;
  }

  StageCostTable& table_;
  ThresholdSplit split_;
  int p_, m_;
  double w_;  // weight of the sum term: 1 / vpp
  double bound_;
  std::function<bool()> stop_;
  bool stopped_ = false;
  double sum_lower_, sync_lower_;
  Reach reach_s_;
  double best_ = kInf;
  std::vector<int> best_split_;
};

}  // namespace

// ---------------------------------------------------------------------------

// The floor's pace is found as least_feasible_bottleneck finds a table's
// (threshold_split.hpp), on the compute times: thresholds rise through the
// next count's time of some stage until the counts held hold every layer.
InterleavedFloor interleaved_floor(StageCostTable& plain, int most_vpp, double sum_lower) {
  const int p = plain.stages(), L = plain.layers();
  const int top = L - p + 1;  // the most layers a stage holds (every other holds one)
  InterleavedFloor f;
  f.sum = sum_lower;
  f.v_layers.assign(static_cast<std::size_t>(most_vpp), kInf);
  // A count that does not fit rules out every larger one (memory grows
  // with the layers), and the time of a count that fits only grows with it.
  auto time = [&](int i, int n) {
    const StageCostTable::Choice& c = plain.at(i, 0, n);
    return c.feasible ? c.entry.time_s() : kInf;
  };
  for (int v = 1; v <= most_vpp && v <= top; ++v) {
    double slowest = 0;
    for (int i = 0; i < p; ++i) slowest = std::max(slowest, time(i, v));
    f.v_layers[v - 1] = slowest;
  }
  double T = f.v_layers[0];
  if (T == kInf) return f;
  std::vector<int> held(p, 0);
  for (;;) {
    long long total = 0;
    double next = kInf;
    for (int i = 0; i < p; ++i) {
      while (held[i] < top && time(i, held[i] + 1) <= T) ++held[i];
      total += held[i];
      if (held[i] < top) next = std::min(next, time(i, held[i] + 1));
    }
    if (total >= L) break;
    if (next == kInf) return f;  // the layers do not fit at any pace
    T = next;
  }
  f.pace = T;
  return f;
}

double InterleavedFloor::iteration_time_s(int m, int v) const {
  const double P = std::max(pace, v_layers[v - 1]);
  if (P == kInf) return kInf;
  return m * P + (sum - P) / v;
}

LoadBalancer::LoadBalancer(const CostModel& cost, const MemoryPruner& memory, LatencyCache* cache)
    : cost_(cost), memory_(memory), cache_(cache), identical_(cost.problem()) {
  const auto& training = cost.problem().training;
  modes_ = training.recompute_modes.empty() ? std::vector<Recompute>{Recompute::none} : training.recompute_modes;
  // Fastest first: none keeps every activation, selective recomputes the
  // attention core, full the whole layer.
  std::sort(modes_.begin(), modes_.end());
  modes_.erase(std::unique(modes_.begin(), modes_.end()), modes_.end());
}

StageCostTable LoadBalancer::table(const Skeleton& skeleton, const std::vector<Recompute>& modes, int vpp) const {
  RecomputeChoice choice;
  choice.modes.assign(skeleton.num_stages(), modes);
  return StageCostTable(cost_, &memory_, cache_, stage_estimates_, skeleton, identical_layers(skeleton),
                        std::move(choice), vpp);
}

int LoadBalancer::max_vpp(const Skeleton& skeleton) const {
  const Problem& problem = cost_.problem();
  return max_interleaving(problem.model, problem.training.runtime, skeleton.num_stages(),
                          num_micro_batches(problem, skeleton));
}

std::vector<std::vector<Recompute>> LoadBalancer::mode_sets() const {
  // Per stage its fastest mode that fits, or (a Megatron-runnable search,
  // specs/runnable_by.hpp) one mode for every stage, each tried in turn.
  if (!uniform_stages_required(cost_.problem().runnable_by)) return {modes_};
  std::vector<std::vector<Recompute>> sets;
  for (Recompute r : modes_) sets.push_back({r});
  return sets;
}

double LoadBalancer::lower_bound(const Skeleton& skeleton, double refine_below, double interleaved_excess) const {
  return lower_bound_placed(skeleton, refine_below, 0, 0, /*per_vpp_memory=*/false, interleaved_excess);
}

double LoadBalancer::searched_lower_bound(const Skeleton& skeleton, double refine_below) const {
  // Without interleaving (max_vpp 1) this is lower_bound itself.
  return lower_bound_placed(skeleton, refine_below, 0, 0, /*per_vpp_memory=*/true, 0);
}

double LoadBalancer::arrangement_lower_bound(const Skeleton& skeleton, int front, int back, double refine_below,
                                             double interleaved_excess) const {
  return lower_bound_placed(skeleton, refine_below, front, skeleton.num_stages() - back, /*per_vpp_memory=*/false,
                            interleaved_excess);
}

double LoadBalancer::searched_arrangement_lower_bound(const Skeleton& skeleton, int front, int back,
                                                      double refine_below) const {
  return lower_bound_placed(skeleton, refine_below, front, skeleton.num_stages() - back, /*per_vpp_memory=*/true, 0);
}

double LoadBalancer::interleaved_tail_floor(const Skeleton& skeleton) const {
  const Problem& problem = cost_.problem();
  const int p = skeleton.num_stages();
  const int L = problem.model.layers;
  if (problem.model.family == ModelFamily::generic || p < 1 || L % p != 0) return 0;
  const Plan plan = make_plan(problem, skeleton, even_split(L, p), std::vector<Recompute>(p, modes_.front()), 1);
  double floor = 0;
  for (int i = 0; i < p; ++i) floor = std::max(floor, cost_.stage_tail_floor(plan, i, L / p));
  // Rounding must never lift the bound above the optimum's tail.
  return floor * (1 - 1e-12);
}

double LoadBalancer::lower_bound_placed(const Skeleton& skeleton, double refine_below, int loose_begin, int loose_end,
                                        bool per_vpp_memory, double interleaved_excess) const {
  const Problem& problem = cost_.problem();
  const int p = skeleton.num_stages();
  const int L = problem.model.layers;
  const int m = num_micro_batches(problem, skeleton);
  if (p < 1 || p > max_pipeline_stages(problem) || m < 1) return kInf;
  auto place = [&](int i) { return i >= loose_begin && i < loose_end ? loose_end - 1 : i; };
  const bool identical = identical_layers(skeleton);
  // Per thread, reused: the walk asks this of every skeleton it builds
  // (millions), where allocating these was a tenth of its time.
  thread_local StageSpeeds speeds;
  thread_local std::vector<int> capacities;
  thread_local StageTiers tiers;
  thread_local std::vector<double> layer_s;  // [mode * p + stage]
  thread_local std::vector<StageTiers> chunked;
  thread_local std::vector<char> chunked_filled;
  stage_speeds(cost_, cache_, modes_.front(), skeleton, identical, speeds, loose_begin, loose_end);
  capacities.resize(p);
  for (int i = 0; i < p; ++i)
    capacities[i] = memory_.max_layers_leanest(skeleton.stages[i], skeleton.micro_batch, place(i), p, m);
  // The searched bound adds the tail's own (tail_lower_bound), and the
  // interleaved schedules' (interleaved_tail_floor) where they pay more;
  // the walk leaves both to its caller (its bound is asked of millions of
  // skeletons).
  const int most_vpp = max_vpp(skeleton);
  const double tail = per_vpp_memory ? tail_lower_bound(skeleton, &capacities) : 0;
  const double interleaved_tail = per_vpp_memory && most_vpp > 1 ? interleaved_tail_floor(skeleton) : 0;
  if (per_vpp_memory) interleaved_excess = std::max(0.0, interleaved_tail - tail);
  const double fastest = iteration_lower_bound(speeds, capacities, L, m, most_vpp, interleaved_excess) + tail;
  if (!identical || (modes_.size() == 1 && !(per_vpp_memory && most_vpp > 1)) || !(fastest <= refine_below))
    return fastest;
  // Each stage's modes, fastest first: what k layers cost where memory
  // forces a leaner mode on them (and, under interleaving, where its
  // micro-batches in flight do).
  tiers.resize(p);
  for (auto& t : tiers) t.clear();
  layer_s.assign(modes_.size() * p, 0.0);
  // Only the per-layer times differ between modes: the edges and sends
  // are read from `speeds`.
  for (std::size_t k = 0; k < modes_.size(); ++k) {
    for (int i = 0; i < p; ++i) {
      const StageSlot& slot = skeleton.stages[i];
      const double layer =
          k == 0 ? speeds.layer[i] : layer_seconds(cost_, cache_, modes_[k], slot, skeleton.micro_batch, -1, false, false);
      tiers[i].push_back({memory_.max_layers(slot, modes_[k], skeleton.micro_batch, place(i), p, m), layer});
      layer_s[k * p + i] = layer;
    }
  }
  // The same modes under w chunks: more micro-batches in flight
  // (CostModel::in_flight, rounded down), so each holds at most as many.
  const std::size_t ws = static_cast<std::size_t>(std::max(0, most_vpp - 1));
  if (chunked.size() < ws) chunked.resize(ws);
  chunked_filled.assign(ws, 0);
  const InterleavedTiers interleaved = [&](int w) -> const StageTiers& {
    StageTiers& t = chunked[w - 2];
    if (chunked_filled[w - 2]) return t;
    chunked_filled[w - 2] = 1;
    t.resize(p);
    for (int i = 0; i < p; ++i) {
      t[i].clear();
      const int in_flight = static_cast<int>(CostModel::in_flight(place(i), p, m, w));
      for (std::size_t k = 0; k < modes_.size(); ++k)
        t[i].push_back({memory_.max_layers_in_flight(skeleton.stages[i], modes_[k], skeleton.micro_batch, in_flight),
                        layer_s[k * p + i]});
    }
    return t;
  };
  const double bound =
      std::max(fastest, tail + iteration_lower_bound(speeds, tiers, L, m, most_vpp, refine_below - tail,
                                                     per_vpp_memory ? interleaved : InterleavedTiers{},
                                                     interleaved_excess));
  if (!per_vpp_memory || !(bound <= refine_below)) return bound;
  // The searched bound: the pace and the tail together.
  const CappedTail capped = [&](const std::vector<int>& caps) { return tail_lower_bound(skeleton, &caps); };
  return std::max(bound,
                  paced_tail_lower_bound(speeds, tiers, L, m, most_vpp, tail, capped, refine_below, interleaved_tail));
}

double LoadBalancer::tail_lower_bound(const Skeleton& skeleton, const std::vector<int>* capacities) const {
  const Problem& problem = cost_.problem();
  const int p = skeleton.num_stages();
  const int L = problem.model.layers;
  if (problem.model.family == ModelFamily::generic || p < 1 || p > L) return 0;
  const Plan plan = make_plan(problem, skeleton, even_split(L, p), std::vector<Recompute>(p, modes_.front()), 1);
  std::vector<int> cap(p), held(p, 1);
  std::vector<double> next(p);  // each stage's tail with one layer more
  double bound = 0;
  for (int i = 0; i < p; ++i) {
    cap[i] = capacities ? std::min((*capacities)[i], L - p + 1) : L - p + 1;
    if (cap[i] < 1) return kInf;
    bound = std::max(bound, cost_.stage_tail_floor(plan, i, 1));
    next[i] = cap[i] > 1 ? cost_.stage_tail_floor(plan, i, 2) : kInf;
  }
  for (int left = L - p; left > 0; --left) {
    const int i = static_cast<int>(std::min_element(next.begin(), next.end()) - next.begin());
    if (next[i] == kInf) return kInf;
    bound = std::max(bound, next[i]);
    ++held[i];
    next[i] = held[i] < cap[i] ? cost_.stage_tail_floor(plan, i, held[i] + 1) : kInf;
  }
  // Rounding must never lift the bound above the optimum's tail.
  return bound * (1 - 1e-12);
}

BalanceResult LoadBalancer::balance(const Skeleton& skeleton, double bound, const std::function<bool()>& stop) const {
  // The best over the mode sets and the vpps (ascending, so ties keep the
  // plainer schedule): a run beats the bound only with a better split, so
  // the bound tightens to each one found (ties found).
  BalanceResult best;
  best.status = BalanceResult::Status::no_feasible_split;
  const int most = max_vpp(skeleton);
  // An interleaved run whose own bound (split_lower_bound.hpp, at that vpp:
  // valid for every plan of it), or the floor the plain run's table sets
  // it (InterleavedFloor), cannot beat what is known is skipped before its
  // stage table is built; a tie is never skipped.
  // The per-layer speeds in the fastest mode serve every run's bounds.
  const StageSpeeds speeds = stage_speeds(cost_, cache_, modes_.front(), skeleton, identical_layers(skeleton));
  std::optional<std::vector<int>> capacities;
  const int L = cost_.problem().model.layers, m = num_micro_batches(cost_.problem(), skeleton);
  // The least tail any split can have, computed once when a floor asks.
  std::optional<double> tail_floor;
  auto tail = [&] {
    if (!tail_floor) tail_floor = tail_lower_bound(skeleton, &*capacities);
    return *tail_floor;
  };
  // And the least an interleaved run's can have (its split is the equal one).
  std::optional<double> interleaved_floor_s;
  auto interleaved_tail = [&] {
    if (!interleaved_floor_s) interleaved_floor_s = interleaved_tail_floor(skeleton);
    return *interleaved_floor_s;
  };
  for (const std::vector<Recompute>& modes : mode_sets()) {
    // What the plain run's stage table proves of every interleaved run of
    // the same modes (interleaved_floor): set after that run.
    std::optional<InterleavedFloor> plain;
    for (int vpp = 1; vpp <= most; ++vpp) {
      const double limit = best.status == BalanceResult::Status::found ? best.split.iteration_time_s : bound;
      if (vpp > 1 && std::isfinite(limit)) {
        if (!capacities) capacities = memory_.capacities(skeleton);
        if (iteration_lower_bound(speeds, *capacities, L, m, vpp) > limit * (1 + 1e-9) ||
            (plain && plain->iteration_time_s(m, vpp) + std::max(tail(), interleaved_tail()) > limit * (1 + 1e-9))) {
          if (best.status == BalanceResult::Status::no_feasible_split) best.status = BalanceResult::Status::above_bound;
          continue;
        }
      }
      StageCostTable table = this->table(skeleton, modes, vpp);
      // Interleaved, the one split of equal layers (interleaving_searched).
      BalanceResult r = vpp == 1 ? balance_in(table, speeds, limit, stop) : equal_split_in(table, limit);
      if (r.status == BalanceResult::Status::stopped) return r;
      if (r.status == BalanceResult::Status::found) {
        if (best.status != BalanceResult::Status::found || r.split.iteration_time_s < best.split.iteration_time_s)
          best = std::move(r);
      } else if (r.status == BalanceResult::Status::above_bound &&
                 best.status == BalanceResult::Status::no_feasible_split) {
        best.status = BalanceResult::Status::above_bound;
      }
      if (vpp == 1 && most > 1 && table.identical())
        plain = interleaved_floor(table, most, sum_term_lower_bound(speeds, L));
    }
  }
  return best;
}

BalanceResult LoadBalancer::equal_split_in(StageCostTable& table, double bound) const {
  const Problem& problem = cost_.problem();
  const int p = table.stages(), L = problem.model.layers;
  BalanceResult result;
  result.status = BalanceResult::Status::no_feasible_split;
  if (p < 1 || L % p != 0) return result;
  const std::vector<int> layer_end = even_split(L, p);
  std::vector<int> stage_layers(static_cast<std::size_t>(p), L / p);
  if (!interleaving_searched(problem, table.vpp(), stage_layers, table.micro_batches())) return result;
  // Infinite where a range does not fit; not a number where a stage's
  // sends have no link (an infinite pace less itself).
  const double time = table.iteration_time(layer_end);
  if (!std::isfinite(time)) return result;
  if (time > bound) {
    result.status = BalanceResult::Status::above_bound;
    return result;
  }
  result.status = BalanceResult::Status::found;
  result.split.layer_end = layer_end;
  result.split.iteration_time_s = time;
  result.split.recompute = table.recompute_of(layer_end);
  result.split.vpp = table.vpp();
  return result;
}

BalanceResult LoadBalancer::balance_in(StageCostTable& table, const StageSpeeds& speeds, double bound,
                                       const std::function<bool()>& stop) const {
  const Problem& problem = cost_.problem();
  const int p = table.stages();
  const int L = problem.model.layers;
  BalanceResult infeasible;
  infeasible.status = BalanceResult::Status::no_feasible_split;
  if (p < 1 || p > max_pipeline_stages(problem) || table.micro_batches() < 1) return infeasible;
  // Lower bounds of the sum term (split_lower_bound.hpp; plain 1F1B, so
  // with the sends) and of the sync term (every stage holds at least one
  // layer per chunk; identical layers only).
  const double sum_lower = plain_sum_term_lower_bound(speeds, L);
  double sync_lower = 0;
  if (table.tails_vary()) {
    // A one-layer stage's tail bounds nothing here; the tail's own floor
    // (every split's, whatever its modes) does.
    sync_lower = tail_lower_bound(table.skeleton(), nullptr);
    if (sync_lower == kInf) return infeasible;
  } else if (table.identical()) {
    for (int i = 0; i < p; ++i) {
      const auto& one = table.at(i, 0, table.min_layers());
      if (!one.feasible) return infeasible;
      sync_lower = std::max(sync_lower, one.sync());
    }
  }
  ExactSplitSearch search(table, bound, stop, sum_lower * (1 - 1e-12), sync_lower * (1 - 1e-12));
  BalanceResult result;
  switch (search.run()) {
    case ExactSplitSearch::Outcome::infeasible:
      result.status = BalanceResult::Status::no_feasible_split;
      return result;
    case ExactSplitSearch::Outcome::above_bound:
      result.status = BalanceResult::Status::above_bound;
      return result;
    case ExactSplitSearch::Outcome::stopped:
      result.status = BalanceResult::Status::stopped;
      return result;
    case ExactSplitSearch::Outcome::found:
      break;
  }
  result.status = BalanceResult::Status::found;
  result.split.layer_end = search.best_split();
  result.split.iteration_time_s = search.best();
  result.split.recompute = table.recompute_of(result.split.layer_end);
  result.split.vpp = table.vpp();
  return result;
}

std::optional<double> LoadBalancer::layer_time(const StageSlot& slot, int micro_batch) const {
  if (!identical_.on(slot, micro_batch)) return std::nullopt;
  return layer_seconds(cost_, cache_, modes_.front(), slot, micro_batch, -1, false, false);
}

std::optional<std::vector<double>> LoadBalancer::layer_finish_times(const StageSlot& slot, int micro_batch) const {
  if (!identical_.on(slot, micro_batch)) return std::nullopt;
  const int L = cost_.problem().model.layers;
  std::vector<ModeTier> tiers;
  int most = 0;
  for (const Recompute mode : modes_) {
    const int capacity = std::min(L, memory_.max_layers_anywhere(slot, mode, micro_batch));
    if (capacity < 1) continue;
    tiers.push_back({capacity, layer_seconds(cost_, cache_, mode, slot, micro_batch, -1, false, false)});
    most = std::max(most, capacity);
  }
  std::vector<double> finish(static_cast<std::size_t>(most));
  for (int k = 1; k <= most; ++k) {
    double layer = kInf;
    for (const ModeTier& t : tiers)
      if (t.capacity >= k) layer = std::min(layer, t.layer_s);
    finish[k - 1] = k * layer;
  }
  return finish;
}

double LoadBalancer::edge_time(const StageSlot& slot, int micro_batch, bool first, bool last) const {
  return layer_seconds(cost_, cache_, modes_.front(), slot, micro_batch, -1, first, last);
}

bool LoadBalancer::identical_layers(const Skeleton& skeleton) const { return identical_.on(skeleton); }

BalanceResult LoadBalancer::evaluate(const Skeleton& skeleton, const std::vector<int>& layer_end, int vpp) const {
  const int p = skeleton.num_stages();
  bool valid = static_cast<int>(layer_end.size()) == p && p >= 1 && layer_end.back() == cost_.problem().model.layers;
  for (int i = 0; valid && i < p; ++i) valid = layer_end[i] > (i == 0 ? 0 : layer_end[i - 1]);
  if (!valid) throw std::invalid_argument("LoadBalancer::evaluate: layer_end must rise strictly to the layer count");
  BalanceResult result;
  for (const std::vector<Recompute>& modes : mode_sets()) {
    StageCostTable table = this->table(skeleton, modes, vpp);
    const double time = table.iteration_time(layer_end);
    if (!std::isfinite(time)) continue;  // a range that does not fit, or sends without a link
    if (result.status == BalanceResult::Status::found && time >= result.split.iteration_time_s) continue;
    result.status = BalanceResult::Status::found;
    result.split.layer_end = layer_end;
    result.split.recompute = table.recompute_of(layer_end);
    result.split.iteration_time_s = time;
    result.split.vpp = table.vpp();
  }
  return result;
}

}  // namespace autohaap
