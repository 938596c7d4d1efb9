#include "autohaap/search/load_balancer.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

namespace autohaap {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Relative slack when comparing values computed along different paths
// (a bound, a decomposed sum, the cost model's own sum): rounding must never
// make the search skip a plan that ties the incumbent.
constexpr double kSlack = 1e-9;

// Shapes (device, tp, sequences per replica) for which a profile measured
// individual layers: on such a stage the model's layers differ.
std::set<std::tuple<std::string, int, int>> layer_specific_profiles(const Problem& problem) {
  std::set<std::tuple<std::string, int, int>> shapes;
  for (const auto& [key, latency] : problem.profiles.entries()) {
    // The cost model looks profiles up at the problem's sequence length.
    if (key.layer >= 0 && key.seq_len == problem.seq_len()) shapes.emplace(key.device, key.tp, key.micro_batch);
  }
  return shapes;
}

}  // namespace

// ---------------------------------------------------------------------------
// Costs of every stage of one skeleton for any layer range, computed on
// first use (through the shared cache when there is one) and kept for the
// life of one balancing call. Not thread-safe: one per call.
class BalancerStageTable {
 public:
  struct Choice {
    bool computed = false;
    bool feasible = false;
    Recompute recompute = Recompute::none;
    StageEntry entry;
    // What paces the 1F1B steady state: compute plus the stage's own sends
    // (CostModel::iteration_time_1f1b); it is also the stage's share of the
    // fill-and-drain sum.
    double pace() const { return entry.time_s() + entry.p2p_s; }
    double add() const { return entry.time_s() + entry.p2p_s; }
    double sync() const { return entry.dp_sync_s + entry.optimizer_s; }
  };

  // fixed == nullptr: per range, the fastest recompute mode that fits.
  // Otherwise stage i always uses (*fixed)[i] and memory is ignored.
  BalancerStageTable(const LoadBalancer& balancer, const Skeleton& skeleton, const std::vector<Recompute>* fixed)
      : balancer_(balancer),
        skeleton_(skeleton),
        fixed_(fixed),
        identical_(balancer.identical_layers(skeleton)),
        layers_(balancer.cost_.problem().model.layers),
        stages_(skeleton.num_stages()),
        micro_batches_(num_micro_batches(balancer.cost_.problem(), skeleton)) {
    const std::vector<Recompute> none(stages_, Recompute::none);
    scratch_ = make_plan(balancer.cost_.problem(), skeleton, even_split(layers_, stages_), fixed ? *fixed : none);
    if (identical_) {
      by_count_.assign(stages_, std::vector<Choice>(layers_ - stages_ + 2));
      if (!fixed_) {
        capacity_.assign(stages_, std::vector<int>(balancer.modes_.size()));
        for (int i = 0; i < stages_; ++i) {
          for (std::size_t r = 0; r < balancer.modes_.size(); ++r) {
            capacity_[i][r] = balancer.memory_.max_layers(skeleton.stages[i], balancer.modes_[r], skeleton.micro_batch,
                                                          i, stages_, micro_batches_);
          }
        }
      }
    }
  }

  int layers() const { return layers_; }
  int stages() const { return stages_; }
  int micro_batches() const { return micro_batches_; }
  bool identical() const { return identical_; }
  // Stage i starts at >= i and ends at <= last_end(i): every stage keeps a layer.
  int last_end(int i) const { return layers_ - (stages_ - 1 - i); }

  const Choice& at(int i, int begin, int end) {
    if (identical_) {
      Choice& c = by_count_[i][end - begin];
      if (!c.computed) c = compute(i, end - begin, begin, end);
      return c;
    }
    const std::uint64_t key =
        (static_cast<std::uint64_t>(i) * (layers_ + 1) + static_cast<std::uint64_t>(begin)) * (layers_ + 1) + end;
    auto [it, inserted] = by_range_.try_emplace(key);
    if (inserted) it->second = compute(i, end - begin, begin, end);
    return it->second;
  }

 private:
  Choice compute(int i, int n, int begin, int end) {
    // Identical layers: the cost depends on the count and the edges only, so
    // the range is normalized (and the cache shared by every position).
    if (identical_) {
      const bool first = i == 0, last = i == stages_ - 1;
      begin = first ? 0 : last ? layers_ - n : 1;
      end = begin + n;
    }
    Choice c;
    c.computed = true;
    if (fixed_) {
      c.recompute = (*fixed_)[i];
      c.entry = estimate(i, begin, end, c.recompute);
      c.feasible = true;
      return c;
    }
    const auto& modes = balancer_.modes_;
    for (std::size_t r = 0; r < modes.size(); ++r) {
      if (identical_ && n > capacity_[i][r]) continue;
      const StageEntry e = estimate(i, begin, end, modes[r]);
      if (e.fits()) {
        c.feasible = true;
        c.recompute = modes[r];
        c.entry = e;
        return c;
      }
    }
    return c;
  }

  StageEntry estimate(int i, int begin, int end, Recompute recompute) {
    auto compute = [&] {
      StagePlan& s = scratch_.stages[i];
      s.layer_begin = begin;
      s.layer_end = end;
      s.recompute = recompute;
      const StageEstimate e = balancer_.cost_.stage(scratch_, i);
      balancer_.stage_estimates_.fetch_add(1, std::memory_order_relaxed);
      return StageEntry{e.forward_s,   e.backward_s,     e.p2p_s,         e.dp_sync_s,
                        e.optimizer_s, e.memory.total(), e.capacity_bytes};
    };
    if (!balancer_.cache_) return compute();
    return balancer_.cache_->stage(key(i, begin, end, recompute), compute);
  }

  StageKey key(int i, int begin, int end, Recompute recompute) const {
    const StageSlot& s = skeleton_.stages[i];
    StageKey k;
    k.group = s.group;
    k.first_gpu = s.first_gpu;
    k.gpus = s.gpus;
    k.tp = s.tp;
    k.dp = s.dp;
    k.micro_batch = skeleton_.micro_batch;
    k.recompute = static_cast<int>(recompute);
    k.layer_begin = begin;
    k.layer_end = end;
    k.stage_index = i;
    k.num_stages = stages_;
    k.num_micro_batches = micro_batches_;
    if (i > 0) {
      const StageSlot& p = skeleton_.stages[i - 1];
      k.prev_group = p.group;
      k.prev_first_gpu = p.first_gpu;
      k.prev_gpus = p.gpus;
      k.prev_tp = p.tp;
      k.prev_dp = p.dp;
    }
    if (i + 1 < stages_) {
      const StageSlot& q = skeleton_.stages[i + 1];
      k.next_group = q.group;
      k.next_first_gpu = q.first_gpu;
      k.next_gpus = q.gpus;
      k.next_tp = q.tp;
      k.next_dp = q.dp;
    }
    return k;
  }

  const LoadBalancer& balancer_;
  const Skeleton& skeleton_;
  const std::vector<Recompute>* fixed_;
  bool identical_;
  int layers_, stages_, micro_batches_;
  Plan scratch_;
  std::vector<std::vector<Choice>> by_count_;           // identical: [stage][layers]
  std::vector<std::vector<int>> capacity_;              // identical: [stage][mode]
  std::unordered_map<std::uint64_t, Choice> by_range_;  // generic: (stage, begin, end)
};

namespace {

// How far each stage may reach from each start under a threshold: the ranges
// [a, b) with a < b <= reach(i, a) are allowed. For identical layers one
// count per stage stands for every start.
class Reach {
 public:
  Reach(const BalancerStageTable& table)
      : identical_(table.identical()), layers_(table.layers()), stages_(table.stages()) {
    if (identical_)
      count_.assign(stages_, 0);
    else
      end_.assign(stages_, std::vector<int>(layers_ + 1, 0));
    clear();
  }
  void clear() {
    if (identical_)
      std::fill(count_.begin(), count_.end(), 0);
    else
      for (auto& row : end_)
        for (int a = 0; a <= layers_; ++a) row[a] = a;
  }
  int get(int i, int a) const { return identical_ ? a + count_[i] : end_[i][a]; }
  void set(int i, int a, int b) {
    if (identical_)
      count_[i] = b - a;
    else
      end_[i][a] = b;
  }
  // Starts to consider for stage i: one for identical layers (the count does
  // not depend on it), every admissible one otherwise.
  int first_start(int i) const { return identical_ ? 0 : i; }
  int last_start(int i) const { return identical_ ? 0 : layers_ - (stages_ - i); }

 private:
  bool identical_;
  int layers_, stages_;
  std::vector<int> count_;
  std::vector<std::vector<int>> end_;
};

// The split search of one skeleton (see the header for the method).
class SplitSearch {
 public:
  SplitSearch(BalancerStageTable& table, double bound, const std::function<bool()>& stop = {})
      : table_(table),
        L_(table.layers()),
        p_(table.stages()),
        m_(table.micro_batches()),
        bound_(bound),
        stop_(stop),
        reach_t_(table),
        reach_s_(table) {}

  // Grows reach(i, a) while the next range is feasible and its `value` is
  // at most `limit`, capped by `cap` (another reach) when given.
  template <class Value>
  int grow_one(Reach& reach, int i, int a, double limit, Value value, const Reach* cap) {
    int b = reach.get(i, a);
    int top = std::min(table_.last_end(i), cap ? cap->get(i, a) : table_.last_end(i));
    if (table_.identical()) top = std::min(top, L_ - p_ + 1);
    while (b + 1 <= top) {
      const auto& c = table_.at(i, a, b + 1);
      if (!c.feasible || value(c) > limit) break;
      ++b;
    }
    reach.set(i, a, b);
    return b;
  }
  template <class Value>
  void grow(Reach& reach, double limit, Value value, const Reach* cap) {
    for (int i = 0; i < p_; ++i) {
      for (int a = active_lo(i); a <= active_hi(i); ++a) grow_one(reach, i, a, limit, value, cap);
    }
  }
  // The smallest value of the next range beyond the current reach.
  template <class Value>
  double next_event(const Reach& reach, Value value, const Reach* cap) {
    double next = kInf;
    for (int i = 0; i < p_; ++i) {
      for (int a = active_lo(i); a <= active_hi(i); ++a) {
        const int b = reach.get(i, a) + 1;
        int top = std::min(table_.last_end(i), cap ? cap->get(i, a) : table_.last_end(i));
        if (table_.identical()) top = std::min(top, L_ - p_ + 1);
        if (b > top) continue;
        const auto& c = table_.at(i, a, b);
        if (c.feasible) next = std::min(next, value(c));
      }
    }
    return next;
  }

  // Sets the bottleneck threshold: every reach the search reads is grown to T.
  void set_threshold(double T) {
    auto pace = [](const BalancerStageTable::Choice& c) { return c.pace(); };
    if (!table_.identical()) narrow(T, pace);
    grow(reach_t_, T, pace, nullptr);
  }

  // Generic layers: the starts of stage i worth a look under threshold T.
  // A split must reach stage i's start from layer 0 (forward) and layer L
  // from it (backward); both bounds follow from reach, which never shrinks
  // as the start moves later ([a', b) lies inside [a, b) for a <= a'). The
  // DP reads starts [lo, hi]; growth and events also watch lo - 1 and the
  // forward frontier, where the next change of either bound comes from.
  template <class Value>
  void narrow(double T, Value pace) {
    lo_.assign(p_, 1);
    hi_.assign(p_, 0);
    watch_lo_.assign(p_, 1);
    watch_hi_.assign(p_, 0);
    std::vector<int> frontier(p_);
    int furthest = 0;
    for (int i = 0; i < p_; ++i) {
      frontier[i] = std::min(furthest, L_ - (p_ - i));
      if (frontier[i] < i) {
        // Stage i - 1 cannot take a layer yet: no split under T; only the
        // forward frontier can change that.
        for (int j = 0; j < i; ++j) watch_lo_[j] = watch_hi_[j] = frontier[j];
        return;
      }
      furthest = grow_one(reach_t_, i, frontier[i], T, pace, nullptr);
    }
    int need = L_, upper = L_ + 1;
    for (int i = p_ - 1; i >= 0; --i) {
      int l = i, h = frontier[i] + 1;  // least start whose reach covers `need`
      while (l < h) {
        const int mid = l + (h - l) / 2;
        if (grow_one(reach_t_, i, mid, T, pace, nullptr) >= need) {
          h = mid;
        } else {
          l = mid + 1;
        }
      }
      lo_[i] = l;
      hi_[i] = std::min(frontier[i], upper - 1);
      watch_lo_[i] = std::max(i, std::min(l, frontier[i] + 1) - 1);
      watch_hi_[i] = frontier[i];
      need = l;
      upper = hi_[i];
    }
  }
  // Starts whose reach is kept current (grown, watched for events).
  int active_lo(int i) const { return table_.identical() ? 0 : watch_lo_.empty() ? i : watch_lo_[i]; }
  int active_hi(int i) const { return table_.identical() ? 0 : watch_hi_.empty() ? L_ - (p_ - i) : watch_hi_[i]; }
  // Starts the DP considers.
  int dp_lo(int i) const { return table_.identical() || lo_.empty() ? i : std::max(i, lo_[i]); }
  int dp_hi(int i) const { return table_.identical() || hi_.empty() ? L_ - (p_ - i) : hi_[i]; }

  // min sum of (t + p2p) over splits inside both reaches; fills split_.
  double dp(const Reach& t_reach, const Reach* s_reach) {
    f_.assign(static_cast<std::size_t>(p_ + 1) * (L_ + 1), kInf);
    parent_.assign(f_.size(), -1);
    auto at = [&](int i, int b) -> double& { return f_[static_cast<std::size_t>(i) * (L_ + 1) + b]; };
    at(0, 0) = 0;
    for (int i = 0; i < p_; ++i) {
      const int a_end = dp_hi(i);
      for (int a = dp_lo(i); a <= a_end; ++a) {
        const double base = at(i, a);
        if (base == kInf) continue;
        const int ra = table_.identical() ? 0 : a;
        int r = t_reach.get(i, ra) + (a - ra);
        if (s_reach) r = std::min(r, s_reach->get(i, ra) + (a - ra));
        r = std::min(r, table_.last_end(i));
        for (int b = a + 1; b <= r; ++b) {
          const double v = base + table_.at(i, a, b).add();
          double& slot = at(i + 1, b);
          if (v < slot) {
            slot = v;
            parent_[static_cast<std::size_t>(i + 1) * (L_ + 1) + b] = a;
          }
        }
      }
    }
    const double total = at(p_, L_);
    if (total == kInf) return kInf;
    split_.assign(p_, 0);
    int b = L_;
    for (int i = p_; i >= 1; --i) {
      split_[i - 1] = b;
      b = parent_[static_cast<std::size_t>(i) * (L_ + 1) + b];
    }
    return total;
  }

  bool feasible(const Reach& reach, const Reach* cap) {
    if (table_.identical()) {
      long long total = 0;
      for (int i = 0; i < p_; ++i) {
        const int n = cap ? std::min(reach.get(i, 0), cap->get(i, 0)) : reach.get(i, 0);
        if (n < 1) return false;
        total += n;
      }
      return total >= L_;
    }
    return dp(reach, cap) < kInf;
  }

  // The cost model's iteration time of a split (ends per stage).
  double objective(const std::vector<int>& ends) {
    estimates_.resize(p_);
    int begin = 0;
    for (int i = 0; i < p_; ++i) {
      const auto& c = table_.at(i, begin, ends[i]);
      if (!c.feasible) return kInf;
      StageEstimate& e = estimates_[i];
      e.forward_s = c.entry.forward_s;
      e.backward_s = c.entry.backward_s;
      e.p2p_s = c.entry.p2p_s;
      e.dp_sync_s = c.entry.dp_sync_s;
      e.optimizer_s = c.entry.optimizer_s;
      begin = ends[i];
    }
    return CostModel::iteration_time_1f1b(estimates_, m_);
  }

  // Keeps the first split of least iteration time (exact comparison: the
  // visiting order is fixed, so the choice among ties is too).
  void consider(const std::vector<int>& ends) {
    const double value = objective(ends);
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

  // Lower bounds of the sum term and of the sync term over all splits.
  void set_bounds(double sum_lower, double sync_lower) {
    sum_lower_ = sum_lower;
    sync_lower_ = sync_lower;
  }

  enum class Outcome { found, above_bound, infeasible, stopped };

  // The caller's stop, asked between thresholds; once true, every loop ends.
  bool stopping() {
    if (!stopped_ && stop_ && stop_()) stopped_ = true;
    return stopped_;
  }

  // The steady-state term (m - 1) * T; with one micro-batch there is none.
  double steady(double T) const { return m_ > 1 ? (m_ - 1) * T : 0.0; }

  Outcome run() {
    auto time = [](const BalancerStageTable::Choice& c) { return c.pace(); };

    // The least feasible bottleneck: walk the events of stage times upward.
    double T = 0;
    for (int i = 0; i < p_; ++i) {
      double least = kInf;
      for (int a = reach_t_.first_start(i); a <= reach_t_.last_start(i); ++a) {
        const auto& c = table_.at(i, a, a + 1);
        if (c.feasible) least = std::min(least, c.pace());
      }
      if (least == kInf) return Outcome::infeasible;  // stage i cannot hold any single layer
      T = std::max(T, least);
    }
    set_threshold(T);
    while (!feasible(reach_t_, nullptr)) {
      if (stopping()) return Outcome::stopped;
      T = next_event(reach_t_, time, nullptr);
      if (T == kInf) return Outcome::infeasible;
      set_threshold(T);
    }

    if (m_ == 1) {
      // No steady state: the bottleneck does not matter, only the sums.
      T = kInf;
      set_threshold(T);
      if (hopeless(sum_lower_ + sync_lower_)) return Outcome::above_bound;
      try_bottleneck(T);
    }
    // Bottlenecks ascending; every later one has a larger lower bound, so the
    // loop ends once that bound exceeds the best split found, or aborts once
    // it exceeds the caller's bound and nothing found beats that either.
    while (T < kInf) {
      if (stopping()) return Outcome::stopped;
      const double lower = steady(T) + sum_lower_ + sync_lower_;
      if (lower > limit()) break;
      if (hopeless(lower)) return Outcome::above_bound;
      try_bottleneck(T);
      T = next_event(reach_t_, time, nullptr);
      if (T == kInf) break;
      set_threshold(T);
    }
    if (stopping()) return Outcome::stopped;
    if (best_split_.empty()) return Outcome::infeasible;
    polish();
    if (stopping()) return Outcome::stopped;
    return best_ <= bound_ * (1 + kSlack) ? Outcome::found : Outcome::above_bound;
  }

  // Every split whose slowest stage takes at most T: the least sum alone,
  // then with the sync term capped at each threshold S in turn.
  void try_bottleneck(double T) {
    auto sync = [](const BalancerStageTable::Choice& c) { return c.sync(); };
    const double sum_t = dp(reach_t_, nullptr);
    consider(split_);
    if (steady(T) + sum_t + sync_lower_ > limit()) return;
    reach_s_.clear();
    double S = sync_lower_;
    grow(reach_s_, S, sync, &reach_t_);
    while (steady(T) + S + sum_t <= limit() && !stopping()) {
      // For identical layers a cheap count test skips hopeless thresholds.
      const bool possible = !table_.identical() || feasible(reach_s_, &reach_t_);
      if (possible && dp(reach_t_, &reach_s_) < kInf) consider(split_);
      S = next_event(reach_s_, sync, &reach_t_);
      if (S == kInf) break;
      grow(reach_s_, S, sync, &reach_t_);
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
          const double v = objective(trial);
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

  const std::vector<int>& best_split() const { return best_split_; }
  double best() const { return best_; }

  // Metis: least feasible bottleneck, then the least sum under it.
  bool run_bottleneck() {
    auto time = [](const BalancerStageTable::Choice& c) { return c.pace(); };
    double T = 0;
    for (int i = 0; i < p_; ++i) {
      double least = kInf;
      for (int a = reach_t_.first_start(i); a <= reach_t_.last_start(i); ++a)
        least = std::min(least, table_.at(i, a, a + 1).pace());
      T = std::max(T, least);
    }
    set_threshold(T);
    while (!feasible(reach_t_, nullptr)) {
      T = next_event(reach_t_, time, nullptr);
      if (T == kInf) return false;
      set_threshold(T);
    }
    if (dp(reach_t_, nullptr) == kInf) return false;
    best_split_ = split_;
    best_ = objective(split_);
    return true;
  }

 private:
  BalancerStageTable& table_;
  int L_, p_, m_;
  double bound_;
  std::function<bool()> stop_;
  bool stopped_ = false;
  Reach reach_t_, reach_s_;
  double sum_lower_ = 0, sync_lower_ = 0;
  double best_ = kInf;
  std::vector<int> best_split_;
  std::vector<int> split_;
  std::vector<double> f_;
  std::vector<int> parent_;
  std::vector<StageEstimate> estimates_;
  std::vector<int> lo_, hi_, watch_lo_, watch_hi_;  // generic layers: see narrow()
};

// Per stage of a skeleton: edge time and per-layer time in the fastest
// allowed recompute mode, from per-layer estimates.
struct Speeds {
  std::vector<double> edge;                 // E_i
  std::vector<double> layer;                // identical: tau_i
  std::vector<std::vector<double>> layers;  // generic: tau_il
};

}  // namespace

// ---------------------------------------------------------------------------

LoadBalancer::LoadBalancer(const CostModel& cost, const MemoryPruner& memory, LatencyCache* cache)
    : cost_(cost), memory_(memory), cache_(cache), layer_profiles_(layer_specific_profiles(cost.problem())) {
  const auto& training = cost.problem().training;
  modes_ = training.recompute_modes.empty() ? std::vector<Recompute>{Recompute::none} : training.recompute_modes;
  // Fastest first: none keeps every activation, selective recomputes the
  // attention core, full the whole layer.
  std::sort(modes_.begin(), modes_.end());
  modes_.erase(std::unique(modes_.begin(), modes_.end()), modes_.end());
}

namespace {

// fwd + bwd time of one micro-batch through one layer (layer < 0: any
// layer of a model of identical layers) or through the edge work (first /
// last), in mode `mode`, through the cache when there is one.
double layer_seconds(const CostModel& cost, LatencyCache* cache, Recompute mode, const StageSlot& s, int micro_batch,
                     int layer, bool first, bool last) {
  const StageShape shape{s.group, s.tp, s.dp, mode};
  const LayerKey key{s.group, s.tp, s.dp, micro_batch, static_cast<int>(mode), layer, first, last};
  auto compute = [&] {
    LayerEntry e;
    Timing t;
    LayerMemory m;
    if (first || last) {
      t = cost.edge_timing(shape, micro_batch, first, last);
      m = cost.edge_memory(shape, micro_batch, first, last);
    } else {
      t = cost.layer_timing(shape, micro_batch, std::max(layer, 0));
      m = cost.layer_memory(shape, micro_batch, std::max(layer, 0));
    }
    e.forward_s = t.forward_s;
    e.backward_s = t.backward_s;
    e.static_bytes = m.static_bytes;
    e.activation_bytes = m.activation_bytes;
    e.working_bytes = m.working_bytes;
    return e;
  };
  const LayerEntry e = cache ? cache->layer(key, compute) : compute();
  return e.forward_s + e.backward_s;
}

Speeds stage_speeds(const CostModel& cost, LatencyCache* cache, Recompute fastest, const Skeleton& skeleton,
                    bool identical) {
  const Problem& problem = cost.problem();
  const int p = skeleton.num_stages();
  const int L = problem.model.layers;
  Speeds speeds;
  speeds.edge.resize(p);
  auto lookup = [&](const StageSlot& s, int layer, bool first, bool last) {
    return layer_seconds(cost, cache, fastest, s, skeleton.micro_batch, layer, first, last);
  };
  if (identical)
    speeds.layer.resize(p);
  else
    speeds.layers.resize(p);
  for (int i = 0; i < p; ++i) {
    const StageSlot& s = skeleton.stages[i];
    const bool first = i == 0, last = i == p - 1;
    speeds.edge[i] = (first || last) ? lookup(s, -1, first, last) : 0.0;
    // Stages of one group share their layer speeds.
    const bool same_as_prev = i > 0 && skeleton.stages[i - 1].group == s.group && skeleton.stages[i - 1].tp == s.tp &&
                              skeleton.stages[i - 1].dp == s.dp;
    if (identical) {
      speeds.layer[i] = same_as_prev ? speeds.layer[i - 1] : lookup(s, -1, false, false);
    } else if (same_as_prev) {
      speeds.layers[i] = speeds.layers[i - 1];
    } else {
      speeds.layers[i].resize(L);
      for (int l = 0; l < L; ++l) speeds.layers[i][l] = lookup(s, l, false, false);
    }
  }
  return speeds;
}

// Least T with sum_i min(cap_i, max(0, T - edge_i) / rate_i) >= need, by
// bisection; returns the low end, so the result never exceeds the true T.
double fractional_bottleneck(const std::vector<double>& edge, const std::vector<double>& rate,
                             const std::vector<double>& cap, double need, double low) {
  // A hair of slack on `need`: (E + c r - E) / r may round below c.
  need *= 1 - 1e-12;
  auto held = [&](double T) {
    double total = 0;
    for (std::size_t i = 0; i < edge.size(); ++i) {
      if (rate[i] <= 0) return kInf;
      total += std::min(cap[i], std::max(0.0, T - edge[i]) / rate[i]);
    }
    return total;
  };
  double high = low;
  for (std::size_t i = 0; i < edge.size(); ++i) high = std::max(high, edge[i] + cap[i] * rate[i]);
  if (held(low) >= need) return low;
  if (held(high) < need) return kInf;
  for (int iter = 0; iter < 200 && high - low > 1e-15 * high; ++iter) {
    const double mid = 0.5 * (low + high);
    if (held(mid) >= need)
      high = mid;
    else
      low = mid;
  }
  return low;
}

}  // namespace

double LoadBalancer::lower_bound(const Skeleton& skeleton) const {
  const Problem& problem = cost_.problem();
  const int p = skeleton.num_stages();
  const int L = problem.model.layers;
  const int m = num_micro_batches(problem, skeleton);
  if (p < 1 || p > L || m < 1) return kInf;
  const bool identical = identical_layers(skeleton);
  const Speeds speeds = stage_speeds(cost_, cache_, modes_.front(), skeleton, identical);
  const std::vector<int> caps = memory_.capacities(skeleton);

  std::vector<double> rate(p), cap(p);
  double least_stage = 0;  // every stage holds at least one layer
  double sum = 0;
  double need = 0;
  if (identical) {
    double fastest = kInf;
    for (int i = 0; i < p; ++i) {
      rate[i] = speeds.layer[i];
      cap[i] = caps[i];
      least_stage = std::max(least_stage, speeds.edge[i] + rate[i]);
      sum += speeds.edge[i] + rate[i];
      fastest = std::min(fastest, rate[i]);
    }
    sum += (L - p) * fastest;
    need = L;
  } else {
    // Work in units of stage 0's layer times: stage i runs layer l at least
    // kappa_i times its work w_l, so it holds at most (T - E_i) / kappa_i.
    std::vector<double> work(L);
    double largest = 0;
    for (int l = 0; l < L; ++l) {
      work[l] = speeds.layers[0][l];
      need += work[l];
      largest = std::max(largest, work[l]);
    }
    for (int l = 0; l < L; ++l) {
      double cheapest = kInf;
      for (int i = 0; i < p; ++i) cheapest = std::min(cheapest, speeds.layers[i][l]);
      sum += cheapest;
    }
    for (int i = 0; i < p; ++i) {
      double kappa = kInf, smallest = kInf;
      for (int l = 0; l < L; ++l) {
        smallest = std::min(smallest, speeds.layers[i][l]);
        if (work[l] > 0) kappa = std::min(kappa, speeds.layers[i][l] / work[l]);
      }
      rate[i] = kappa == kInf ? 0 : kappa;
      cap[i] = caps[i] * largest;
      least_stage = std::max(least_stage, speeds.edge[i] + smallest);
      sum += speeds.edge[i];
    }
    if (need <= 0) return (sum + (m - 1) * least_stage) * (1 - 1e-12);
    for (int i = 0; i < p; ++i) {
      if (rate[i] <= 0) return (sum + (m - 1) * least_stage) * (1 - 1e-12);
    }
  }
  const double bottleneck = fractional_bottleneck(speeds.edge, rate, cap, need, least_stage);
  if (bottleneck == kInf) return kInf;
  return (sum + (m - 1) * bottleneck) * (1 - 1e-12);
}

BalanceResult LoadBalancer::balance(const Skeleton& skeleton, double bound, const std::function<bool()>& stop) const {
  const Problem& problem = cost_.problem();
  const int p = skeleton.num_stages();
  const int L = problem.model.layers;
  BalanceResult infeasible;
  infeasible.status = BalanceResult::Status::no_feasible_split;
  if (p < 1 || p > L || num_micro_batches(problem, skeleton) < 1) return infeasible;

  BalancerStageTable table(*this, skeleton, nullptr);
  SplitSearch search(table, bound, stop);

  // Lower bounds of the sum term (from per-layer speeds, as in lower_bound)
  // and of the sync term (every stage holds at least one layer).
  const bool identical = table.identical();
  const Speeds speeds = stage_speeds(cost_, cache_, modes_.front(), skeleton, identical);
  double sum_lower = 0, sync_lower = 0;
  if (identical) {
    double fastest = kInf;
    for (int i = 0; i < p; ++i) {
      sum_lower += speeds.edge[i] + speeds.layer[i];
      fastest = std::min(fastest, speeds.layer[i]);
      const auto& one = table.at(i, 0, 1);
      if (!one.feasible) return infeasible;
      sync_lower = std::max(sync_lower, one.sync());
    }
    sum_lower += (L - p) * fastest;
  } else {
    for (int i = 0; i < p; ++i) sum_lower += speeds.edge[i];
    for (int l = 0; l < L; ++l) {
      double cheapest = kInf;
      for (int i = 0; i < p; ++i) cheapest = std::min(cheapest, speeds.layers[i][l]);
      sum_lower += cheapest;
    }
  }
  search.set_bounds(sum_lower * (1 - 1e-12), sync_lower * (1 - 1e-12));
  BalanceResult result;
  switch (search.run()) {
    case SplitSearch::Outcome::infeasible:
      result.status = BalanceResult::Status::no_feasible_split;
      return result;
    case SplitSearch::Outcome::above_bound:
      result.status = BalanceResult::Status::above_bound;
      return result;
    case SplitSearch::Outcome::stopped:
      result.status = BalanceResult::Status::stopped;
      return result;
    case SplitSearch::Outcome::found:
      break;
  }
  result.status = BalanceResult::Status::found;
  BalancedSplit& out = result.split;
  out.layer_end = search.best_split();
  out.iteration_time_s = search.best();
  int begin = 0;
  for (int i = 0; i < p; ++i) {
    out.recompute.push_back(table.at(i, begin, out.layer_end[i]).recompute);
    begin = out.layer_end[i];
  }
  return result;
}

std::optional<double> LoadBalancer::layer_time(const StageSlot& slot, int micro_batch) const {
  if (cost_.problem().model.family == ModelFamily::generic) return std::nullopt;
  const std::string& device = cost_.problem().cluster.groups[slot.group].device.name;
  if (layer_profiles_.count({device, slot.tp, micro_batch / slot.dp})) return std::nullopt;
  return layer_seconds(cost_, cache_, modes_.front(), slot, micro_batch, -1, false, false);
}

bool LoadBalancer::identical_layers(const Skeleton& skeleton) const {
  if (cost_.problem().model.family == ModelFamily::generic) return false;
  for (const StageSlot& s : skeleton.stages) {
    const std::string& device = cost_.problem().cluster.groups[s.group].device.name;
    if (layer_profiles_.count({device, s.tp, skeleton.micro_batch / s.dp})) return false;
  }
  return true;
}

BalanceResult LoadBalancer::evaluate(const Skeleton& skeleton, const std::vector<int>& layer_end) const {
  const int p = skeleton.num_stages();
  bool valid = static_cast<int>(layer_end.size()) == p && p >= 1 && layer_end.back() == cost_.problem().model.layers;
  for (int i = 0; valid && i < p; ++i) valid = layer_end[i] > (i == 0 ? 0 : layer_end[i - 1]);
  if (!valid) throw std::invalid_argument("LoadBalancer::evaluate: layer_end must rise strictly to the layer count");
  BalancerStageTable table(*this, skeleton, nullptr);
  BalanceResult result;
  std::vector<StageEstimate> stages(skeleton.num_stages());
  int begin = 0;
  for (int i = 0; i < skeleton.num_stages(); ++i) {
    const auto& c = table.at(i, begin, layer_end[i]);
    if (!c.feasible) return result;
    stages[i].forward_s = c.entry.forward_s;
    stages[i].backward_s = c.entry.backward_s;
    stages[i].p2p_s = c.entry.p2p_s;
    stages[i].dp_sync_s = c.entry.dp_sync_s;
    stages[i].optimizer_s = c.entry.optimizer_s;
    result.split.recompute.push_back(c.recompute);
    begin = layer_end[i];
  }
  result.status = BalanceResult::Status::found;
  result.split.layer_end = layer_end;
  result.split.iteration_time_s = CostModel::iteration_time_1f1b(stages, table.micro_batches());
  return result;
}

BalancedSplit LoadBalancer::balance_bottleneck(const Skeleton& skeleton,
                                               const std::vector<Recompute>& recompute) const {
  BalancerStageTable table(*this, skeleton, &recompute);
  SplitSearch search(table, kInf);
  BalancedSplit out;
  out.recompute = recompute;
  if (search.run_bottleneck()) {
    out.layer_end = search.best_split();
    out.iteration_time_s = search.best();
  } else {
    out.layer_end = even_split(cost_.problem().model.layers, skeleton.num_stages());
    out.iteration_time_s = kInf;
  }
  return out;
}

}  // namespace autohaap
