// Threshold split: the machinery both layer balancers share. Under a
// threshold T on each stage's pace (compute plus its sends) a stage may take
// any range whose pace is <= T and that is feasible in its table; `Reach`
// records how far each stage may reach from each start, and a DP over
// contiguous splits inside the reaches minimizes the sum of the stages'
// paces. Thresholds run through the "events" at which some stage's reach
// grows or a range in it comes under T, so the least feasible bottleneck is
// found by walking them upward from the largest of the stages' least
// single-layer measures (the pace, or for layer lists the compute: below).
//
// A reach must grow with the range's end. With identical layers the pace
// does (every boundary sends the same bytes) and so does the memory; with
// generic layer lists neither need: a range's sends are its first layer's
// input and its last layer's output, so [a, b + 1) can be faster than
// [a, b) when layer b - 1's output is wide and layer b's narrow, and under
// DeepSpeed a stage that sends holds its last layer's output per
// micro-batch in flight, so [a, b + 1) can fit where [a, b) does not
// (CostModel::memory_grows_with_range). There the reach grows on the
// compute time alone, which does grow (StageCostTable::Choice::
// reach_compute_s), on such a stage over ranges that do not fit, up to the
// longest that can (StageCostTable::most_layers); the DP takes only the
// ranges in it that fit with a pace <= T, and the paces above T are events.
//
// The exact split (load_balancer.hpp) adds a second threshold on the sync
// term (a reach where tails grow with the layers, a filter over each
// range's options where they need not: StageCostTable::tails_vary); the
// Metis-style balancer (metis_balancer.hpp) stops at the least feasible
// bottleneck.
//
// Identical layers work on layer counts (one reach per stage), generic
// layer lists on ranges (a reach per start, and only the starts a split
// under T can use are kept current, see narrow()).
//
// Thread safety: none (one per balancing call, like its table). Cost per
// threshold: O(stages * starts) reach updates plus the stage estimates they
// touch; a DP O(stages * starts * layers per stage).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "autohaap/search/stage_cost_table.hpp"

namespace autohaap {

// How far each stage may reach from each start under a threshold: the ranges
// [a, b) with a + k <= b <= get(i, a) are allowed, k the table's fewest
// layers per stage (its vpp; 1 without interleaving, the only case generic
// layers meet). For identical layers one count per stage stands for every
// start; it starts at k - 1 (nothing allowed yet).
class Reach {
 public:
  explicit Reach(const StageCostTable& table);
  void clear();
  int get(int i, int a) const { return identical_ ? a + count_[i] : end_[i][a]; }
  void set(int i, int a, int b);
  // Starts to consider for stage i: one for identical layers (the count does
  // not depend on it), every admissible one otherwise.
  int first_start(int i) const { return identical_ ? 0 : i; }
  int last_start(int i) const { return identical_ ? 0 : layers_ - (stages_ - i); }

 private:
  bool identical_;
  int layers_, stages_, min_layers_;
  std::vector<int> count_;
  std::vector<std::vector<int>> end_;
};

class ThresholdSplit {
 public:
  explicit ThresholdSplit(StageCostTable& table);

  StageCostTable& table() { return table_; }
  // The reach under the bottleneck threshold (set_threshold).
  const Reach& bottleneck_reach() const { return reach_t_; }

  // Sets the bottleneck threshold: every reach the search reads is grown to T.
  void set_threshold(double T);

  struct Start {
    enum class Status { found, infeasible, stopped } status = Status::infeasible;
    double T = 0;  // the least feasible bottleneck, set as the threshold (found)
  };
  // Walks the pace events upward to the least T under which a split exists
  // and leaves it set. `stopping` (may be empty) is asked between events.
  Start least_feasible_bottleneck(const std::function<bool()>& stopping);
  // The next bottleneck threshold above T at which the ranges a split may
  // take can change (infinity: none).
  double next_bottleneck_event();

  // Grows reach(i, a) of every kept-current start while the next range is
  // feasible and its sync is at most S, capped by `cap` when given.
  void grow_sync(Reach& reach, double S, const Reach* cap);
  // The smallest sync of a next range beyond the current reach (infinity: none).
  double next_sync_event(const Reach& reach, const Reach* cap);
  // Whether a split inside both reaches exists.
  bool feasible(const Reach& reach, const Reach* cap);
  // The least sum of paces over splits inside both reaches of ranges whose
  // pace is <= T (infinity: none); the split is left in split().
  double min_sum(const Reach& t_reach, const Reach* s_reach);

  // Where the table's tails vary (StageCostTable::tails_vary), ranges and
  // their options are filtered, not reached: under the bottleneck threshold
  // T (set_threshold) and a sync threshold S a range may take any of its
  // options (its Choice or a leaner mode) whose pace is <= T and tail <= S.
  // The least sum of paces over splits inside `t_reach` of such options; the
  // split is left in split().
  double min_sum_within(const Reach& t_reach, double S);
  // The tails of the options of pace <= T of the ranges inside `reach` a
  // split may use, ascending and distinct, from the least under which every
  // stage has a range: the sync thresholds worth trying.
  std::vector<double> tails_within(const Reach& reach);
  // The least pace above T of a leaner option of a range inside `reach`
  // (infinity: none): a bottleneck event the reach's own growth misses.
  double next_option_pace(const Reach& reach);
  const std::vector<int>& split() const { return split_; }

 private:
  template <class Cost>
  double min_sum_of(const Reach& t_reach, const Reach* s_reach, Cost cost);
  // Calls visit(stage, layers, choice) for every feasible range a split
  // inside `reach` may use.
  template <class Visit>
  void for_each_range(const Reach& reach, Visit visit);
  template <class Value>
  int grow_one(Reach& reach, int i, int a, double limit, Value value, const Reach* cap);
  template <class Value>
  void grow_all(Reach& reach, double limit, Value value, const Reach* cap);
  template <class Value>
  double next_event_of(const Reach& reach, Value value, const Reach* cap);
  // What the bottleneck reach grows on: the pace, or for generic layers the
  // compute time (see the top of this file).
  using ReachMeasure = double (*)(const StageCostTable::Choice&);
  ReachMeasure reach_measure() const;
  // Whether stage i's reaches pass over ranges that do not fit: where a
  // longer one may fit (StageCostTable::fit_may_return).
  bool passes_unfit(int i) const { return table_.fit_may_return(i); }
  // The furthest end reach(i, a) may grow to, capped by `cap` when given.
  int reach_top(int i, int a, const Reach* cap) const;
  void narrow(double T);
  // Starts whose reach is kept current (grown, watched for events).
  int active_lo(int i) const;
  int active_hi(int i) const;
  // Starts the DP considers.
  int dp_lo(int i) const;
  int dp_hi(int i) const;

  StageCostTable& table_;
  int L_, p_;
  double T_ = 0;  // the bottleneck threshold (set_threshold)
  Reach reach_t_;
  std::vector<int> split_;
  std::vector<double> f_;
  std::vector<int> parent_;
  std::vector<int> lo_, hi_, watch_lo_, watch_hi_;  // generic layers: see narrow()
  std::vector<std::vector<std::pair<double, int>>> tails_by_stage_;  // scratch of tails_within
};

}  // namespace autohaap
