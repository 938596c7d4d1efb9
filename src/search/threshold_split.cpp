#include "autohaap/search/threshold_split.hpp"

#include <algorithm>
#include <limits>

#include "autohaap/units.hpp"

namespace autohaap {
namespace {

using Choice = StageCostTable::Choice;
double pace_of(const Choice& c) { return c.pace(); }
double compute_of(const Choice& c) { return c.reach_compute_s; }
double sync_of(const Choice& c) { return c.sync(); }

}  // namespace

Reach::Reach(const StageCostTable& table)
    : identical_(table.identical()), layers_(table.layers()), stages_(table.stages()), min_layers_(table.min_layers()) {
  if (identical_)
    count_.assign(stages_, 0);
  else
    end_.assign(stages_, std::vector<int>(layers_ + 1, 0));
  clear();
}

void Reach::clear() {
  if (identical_)
    std::fill(count_.begin(), count_.end(), min_layers_ - 1);
  else
    for (auto& row : end_)
      for (int a = 0; a <= layers_; ++a) row[a] = std::min(layers_, a + min_layers_ - 1);
}

void Reach::set(int i, int a, int b) {
  if (identical_)
    count_[i] = b - a;
  else
    end_[i][a] = b;
}

// ---------------------------------------------------------------------------

ThresholdSplit::ThresholdSplit(StageCostTable& table)
    : table_(table), L_(table.layers()), p_(table.stages()), reach_t_(table) {}

int ThresholdSplit::reach_top(int i, int a, const Reach* cap) const {
  int top = std::min(table_.last_end(i), cap ? cap->get(i, a) : table_.last_end(i));
  if (table_.identical()) top = std::min(top, L_ - p_ + 1);
  // Passing over ranges that do not fit, a reach stops at the longest any
  // range of the stage fits.
  if (passes_unfit(i)) top = std::min(top, a + table_.most_layers(i));
  return top;
}

template <class Value>
int ThresholdSplit::grow_one(Reach& reach, int i, int a, double limit, Value value, const Reach* cap) {
  int b = reach.get(i, a);
  const int top = reach_top(i, a, cap);
  while (b + 1 <= top) {
    const auto& c = table_.at(i, a, b + 1);
    if ((!c.feasible && !passes_unfit(i)) || value(c) > limit) break;
    ++b;
  }
  reach.set(i, a, b);
  return b;
}

template <class Value>
void ThresholdSplit::grow_all(Reach& reach, double limit, Value value, const Reach* cap) {
  for (int i = 0; i < p_; ++i) {
    for (int a = active_lo(i); a <= active_hi(i); ++a) grow_one(reach, i, a, limit, value, cap);
  }
}

template <class Value>
double ThresholdSplit::next_event_of(const Reach& reach, Value value, const Reach* cap) {
  double next = kInf;
  for (int i = 0; i < p_; ++i) {
    for (int a = active_lo(i); a <= active_hi(i); ++a) {
      const int b = reach.get(i, a) + 1;
      if (b > reach_top(i, a, cap)) continue;
      const auto& c = table_.at(i, a, b);
      if (c.feasible || passes_unfit(i)) next = std::min(next, value(c));
    }
  }
  return next;
}

void ThresholdSplit::grow_sync(Reach& reach, double S, const Reach* cap) { grow_all(reach, S, sync_of, cap); }

double ThresholdSplit::next_sync_event(const Reach& reach, const Reach* cap) {
  return next_event_of(reach, sync_of, cap);
}

ThresholdSplit::ReachMeasure ThresholdSplit::reach_measure() const {
  return table_.identical() ? pace_of : compute_of;
}

void ThresholdSplit::set_threshold(double T) {
  T_ = T;
  if (!table_.identical()) narrow(T);
  grow_all(reach_t_, T, reach_measure(), nullptr);
}

double ThresholdSplit::next_bottleneck_event() {
  double next = next_event_of(reach_t_, reach_measure(), nullptr);
  // Generic layers: ranges inside the reach whose pace is still above T
  // (their compute is not) join the split when T reaches their pace.
  if (!table_.identical())
    for_each_range(reach_t_, [&](int, int, const Choice& c) {
      if (c.pace() > T_) next = std::min(next, c.pace());
    });
  return next;
}

ThresholdSplit::Start ThresholdSplit::least_feasible_bottleneck(const std::function<bool()>& stopping) {
  Start start;
  // No bottleneck below the slowest stage's least single-layer measure
  // (reach_measure: for a layer list its compute, since its pace need not
  // grow with the range), counting on a stage where a longer range may fit
  // the single layers that do not.
  const ReachMeasure measure = reach_measure();
  double T = 0;
  for (int i = 0; i < p_; ++i) {
    double least = kInf;
    for (int a = reach_t_.first_start(i); a <= reach_t_.last_start(i); ++a) {
      if (a + table_.min_layers() > table_.last_end(i)) continue;
      const auto& c = table_.at(i, a, a + table_.min_layers());
      if (c.feasible || passes_unfit(i)) least = std::min(least, measure(c));
    }
    if (least == kInf) return start;  // stage i cannot hold any single layer
    T = std::max(T, least);
  }
  set_threshold(T);
  while (!feasible(reach_t_, nullptr)) {
    if (stopping && stopping()) {
      start.status = Start::Status::stopped;
      return start;
    }
    T = next_bottleneck_event();
    if (T == kInf) return start;
    set_threshold(T);
  }
  start.status = Start::Status::found;
  start.T = T;
  return start;
}

// Generic layers: the starts of stage i worth a look under threshold T.
// A split must reach stage i's start from layer 0 (forward) and layer L
// from it (backward); both bounds follow from reach, which never shrinks
// as the start moves later ([a', b) lies inside [a, b) for a <= a'). The
// DP reads starts [lo, hi]; growth and events also watch lo - 1 and the
// forward frontier, where the next change of either bound comes from.
// Under vpp > 1 an empty reach is a + vpp - 1, so both bounds may be loose
// (more starts, never fewer): the DP still takes only ranges of vpp layers
// or more.
void ThresholdSplit::narrow(double T) {
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
    furthest = grow_one(reach_t_, i, frontier[i], T, reach_measure(), nullptr);
  }
  int need = L_, upper = L_ + 1;
  for (int i = p_ - 1; i >= 0; --i) {
    int l = i, h = frontier[i] + 1;  // least start whose reach covers `need`
    while (l < h) {
      const int mid = l + (h - l) / 2;
      if (grow_one(reach_t_, i, mid, T, reach_measure(), nullptr) >= need) {
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

int ThresholdSplit::active_lo(int i) const { return table_.identical() ? 0 : watch_lo_.empty() ? i : watch_lo_[i]; }
int ThresholdSplit::active_hi(int i) const {
  return table_.identical() ? 0 : watch_hi_.empty() ? L_ - (p_ - i) : watch_hi_[i];
}
int ThresholdSplit::dp_lo(int i) const { return table_.identical() || lo_.empty() ? i : std::max(i, lo_[i]); }
int ThresholdSplit::dp_hi(int i) const { return table_.identical() || hi_.empty() ? L_ - (p_ - i) : hi_[i]; }

template <class Cost>
double ThresholdSplit::min_sum_of(const Reach& t_reach, const Reach* s_reach, Cost cost) {
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
      for (int b = a + table_.min_layers(); b <= r; ++b) {
        const double c = cost(table_.at(i, a, b));
        if (c == kInf) continue;
        const double v = base + c;
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

double ThresholdSplit::min_sum(const Reach& t_reach, const Reach* s_reach) {
  // The reach of generic layers holds ranges whose pace is above T, or
  // that do not fit.
  const double T = T_;
  return min_sum_of(t_reach, s_reach,
                    [T](const Choice& c) { return c.feasible && c.pace() <= T ? c.pace() : kInf; });
}

double ThresholdSplit::min_sum_within(const Reach& t_reach, double S) {
  const double T = T_;
  return min_sum_of(t_reach, nullptr, [T, S](const Choice& c) {
    double least = kInf;
    if (!c.feasible) return least;
    for (int k = 0; k < c.options(); ++k) {
      const StageCostTable::Option& o = c.option(k);
      if (o.pace() <= T && o.sync() <= S) least = std::min(least, o.pace());
    }
    return least;
  });
}

template <class Visit>
void ThresholdSplit::for_each_range(const Reach& reach, Visit visit) {
  for (int i = 0; i < p_; ++i) {
    // Identical layers: one start stands for all (a range's cost is its count's).
    const int last = table_.identical() ? 0 : dp_hi(i);
    for (int a = table_.identical() ? 0 : dp_lo(i); a <= last; ++a) {
      const int r = std::min(reach.get(i, a), table_.last_end(i));
      for (int b = a + table_.min_layers(); b <= r; ++b) {
        const Choice& c = table_.at(i, a, b);
        if (c.feasible) visit(i, b - a, c);
      }
    }
  }
}

std::vector<double> ThresholdSplit::tails_within(const Reach& reach) {
  // Per stage, the (tail, layers) of every option a split may use.
  std::vector<std::vector<std::pair<double, int>>>& by_stage = tails_by_stage_;
  by_stage.resize(p_);
  for (auto& v : by_stage) v.clear();
  std::vector<double> tails;
  for_each_range(reach, [&](int i, int n, const Choice& c) {
    for (int k = 0; k < c.options(); ++k)
      if (c.option(k).pace() <= T_) by_stage[i].emplace_back(c.option(k).sync(), n);
  });
  for (auto& v : by_stage) {
    std::sort(v.begin(), v.end());
    for (const auto& [tail, n] : v) tails.push_back(tail);
  }
  std::sort(tails.begin(), tails.end());
  tails.erase(std::unique(tails.begin(), tails.end()), tails.end());
  // No split has a largest tail below the least S under which every stage
  // has a range and, with identical layers, the most layers each may hold
  // add up to the model's.
  std::vector<std::size_t> next(p_, 0);
  std::vector<int> most(p_, 0);
  std::size_t first = 0;
  for (; first < tails.size(); ++first) {
    const double S = tails[first];
    long long total = 0;
    bool every = true;
    for (int i = 0; i < p_; ++i) {
      const auto& v = by_stage[i];
      while (next[i] < v.size() && v[next[i]].first <= S) most[i] = std::max(most[i], v[next[i]++].second);
      every = every && next[i] > 0;
      total += most[i];
    }
    if (every && (!table_.identical() || total >= L_)) break;
  }
  tails.erase(tails.begin(), tails.begin() + static_cast<std::ptrdiff_t>(first));
  return tails;
}

double ThresholdSplit::next_option_pace(const Reach& reach) {
  double next = kInf;
  for_each_range(reach, [&](int, int, const Choice& c) {
    for (int k = 0; k < c.options(); ++k)
      if (c.option(k).pace() > T_) next = std::min(next, c.option(k).pace());
  });
  return next;
}

bool ThresholdSplit::feasible(const Reach& reach, const Reach* cap) {
  if (table_.identical()) {
    long long total = 0;
    for (int i = 0; i < p_; ++i) {
      const int n = cap ? std::min(reach.get(i, 0), cap->get(i, 0)) : reach.get(i, 0);
      if (n < table_.min_layers()) return false;
      total += n;
    }
    return total >= L_;
  }
  return min_sum(reach, cap) < kInf;
}

}  // namespace autohaap
