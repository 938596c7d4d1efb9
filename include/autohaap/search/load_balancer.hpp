// LoadBalancer: for one skeleton, the interleaving (vpp), contiguous layer
// split and per-stage recompute that minimize the 1F1B iteration time
// within every stage's memory (the exact split), and a cheap lower bound on
// that time over every vpp (split_lower_bound.hpp).
//
// Objective (DESIGN.md "Iteration time", CostModel::iteration_time_1f1b):
//   (m - 1/v) * max_i (t_i + p2p_i) + sum_i (t_i + p2p_i) / v + max_i (sync_i + opt_i)
// with t_i the forward + backward time of one micro-batch on stage i, p2p_i
// its pipeline sends (the steady state is paced by the slowest stage
// including its sends) and v the chunks per stage; v = 1 is plain 1F1B,
// (m - 1) max + sum. Every vpp the interleaving rule allows
// (max_interleaving, specs/parallel_rules.hpp) gets its own split, in
// ascending order: at vpp 1 the exact split, interleaved the one split of
// equal layers (interleaving_searched, search_space.hpp: where stages
// differ the schedule runs slower than this objective), each with a stage
// cost table of that vpp: its p2p_i
// crosses each boundary v times (Megatron hides it behind compute), its
// memory holds that vpp's micro-batches in flight, and a stage keeps at
// least v layers. The best over the vpps (the first on ties) is the
// skeleton's answer; a vpp's search starts with the best so far as its
// bound, so one that cannot beat it stops at its first threshold. For a fixed
// layer range the best recompute of a stage is the fastest mode (none <
// selective < full) whose memory fits: it lowers t_i and leaves the other
// terms alone. So the balancer derives recompute instead of searching it
// (stage_cost_table.hpp). Not so under overlap_grad_reduce: sync_i is then
// what the last backward leaves exposed, so a slower mode can hide more of
// it, and it need not grow with the layers; the table then keeps each
// range's leaner fitting modes, and the method below filters by S (see
// there). A
// Megatron-runnable search (specs/runnable_by.hpp) gives every stage one
// mode: the split is found per mode and the best kept.
//
// Method (exact for that objective). The two max terms are fixed by
// thresholds: for a bottleneck T and a sync bound S, each stage may take any
// range whose pace t + p2p is <= T, sync <= S and memory fits; a DP over
// contiguous splits minimizes the sum term, and (m - 1) T + S + DP is an
// upper bound that is attained at the optimum's own (T, S)
// (threshold_split.hpp); under vpp v the same holds for
// (m - 1/v) T + S + DP / v, whose coefficients are positive too. T runs
// through the stage times at which some stage's reach grows, ascending from
// the least feasible one; S likewise for each T. Where tails vary
// (StageCostTable::tails_vary) a range is filtered, not reached, by S, each
// range may take any of its modes within (T, S), T also runs through the
// leaner modes' paces and S through every tail a range within T has; a
// split is priced in its fastest mix of modes (exact: StageCostTable's
// iteration_time). Both loops stop as soon as (m - 1) T + S + (a lower
// bound of the sum) cannot beat the best so far; the caller's bound only
// lets the whole search give up early. The best split is then polished by moving
// single layers across stage boundaries while the true iteration time
// improves: this guards the result should the cost model's iteration time
// ever deviate from the decomposition above. Models of identical layers
// work on layer counts, generic layer lists on ranges.
//
// Thread safety: const methods; many threads may balance different
// skeletons at once (the cache is concurrent). Cost: lower_bound
// O(stages + groups * distinct layers); balance, per vpp tried,
// O(stage estimates touched + (T, S) pairs tried * stages * layers * layers
// per stage).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_space.hpp"
#include "autohaap/search/stage_cost_table.hpp"

namespace autohaap {

struct StageSpeeds;  // split_lower_bound.hpp

struct BalancedSplit {
  std::vector<int> layer_end;        // stage i holds [layer_end[i-1], layer_end[i]); last == layers
  std::vector<Recompute> recompute;  // per stage
  int vpp = 1;                       // chunks per stage (interleaved 1F1B when > 1)
  double iteration_time_s = 0;       // CostModel::iteration_time_1f1b of these stages
};

struct BalanceResult {
  enum class Status {
    found,              // split holds the skeleton's best split
    above_bound,        // proven: no split beats the caller's bound
    no_feasible_split,  // no split fits every stage's memory
    stopped,            // the caller's stop came first: nothing is known
  };
  Status status = Status::no_feasible_split;
  BalancedSplit split;
};

// What a plain (vpp 1) run's stage table proves of every interleaved run
// of the same skeleton and recompute modes, for identical layers. Under v
// chunks a stage of n layers computes what it computes in the plain run
// (the cost model prices the same layers, edges and gradient accumulation;
// only the sends and the micro-batches in flight change), holds no more
// layers in any mode (at least as many micro-batches in flight:
// split_lower_bound.hpp), so its fastest mode that fits is no faster, and
// its sends only add. So every stage's pace under v is at least its plain
// compute time at its count, and the interleaved time
// m P + (S - P) / v + tail (CostModel::iteration_time_1f1b), increasing in
// the pace P and the sum S, is at least its value at
//   P = the least bottleneck at which stages of the plain compute times
//       hold every layer, each at least v (one a chunk),
//   S = a sum-term bound (sum_term_lower_bound of the per-layer speeds),
// plus a tail bound (LoadBalancer::tail_lower_bound). The plain run has
// already priced the counts this reads (its own bottleneck, sends
// included, is at least P), so the floor costs no stage estimate, where an
// interleaved run prices every count again under its own cache keys.
// Measured: Llama 3 70B on six node groups of 64 GPUs balanced 19,657
// skeletons, each at every vpp up to 10; all but about 2,000 of the
// interleaved runs ended above the bound. With the floor first, the search
// took 5.8-6.4 s instead of 8.0-8.4 s (2 threads), same plan.
struct InterleavedFloor {
  double pace = std::numeric_limits<double>::infinity();  // least whole-layer bottleneck of the compute times
  std::vector<double> v_layers;  // [v - 1]: the slowest stage's compute of v layers (infinity: one cannot hold v)
  double sum = 0;                // the sum-term bound
  // The bound without the tail for v chunks (1 <= v <= v_layers.size());
  // infinity where no split of v chunks fits.
  double iteration_time_s(int micro_batches, int v) const;
};
// The floor of `plain`'s skeleton (a table of vpp 1 with identical layers)
// for 1 .. most_vpp chunks, with `sum_lower` as S. Reads table counts only
// (computing those not asked yet).
InterleavedFloor interleaved_floor(StageCostTable& plain, int most_vpp, double sum_lower);

class LoadBalancer {
 public:
  // `cache` may be null: stage estimates are then computed afresh each time.
  LoadBalancer(const CostModel& cost, const MemoryPruner& memory, LatencyCache* cache);

  const CostModel& cost() const { return cost_; }

  // A value no plan on this skeleton can beat (within rounding), at any vpp:
  // iteration_lower_bound with every stage's recompute modes (a stage whose
  // layers fit only a leaner mode pays its time). The fastest mode's bound
  // alone is cheaper (one capacity a stage, not one a mode); when it
  // already exceeds `refine_below` it is returned as is, and the modes'
  // bound stops tightening once it does: the caller only asks whether the
  // skeleton can beat that. The tail is left to the caller; the
  // interleaved terms add `interleaved_excess`, what they pay beyond it
  // (split_lower_bound.hpp; e.g. the stages' interleaved_tail_floor less
  // the caller's tail).
  double lower_bound(const Skeleton& skeleton, double refine_below = std::numeric_limits<double>::infinity(),
                     double interleaved_excess = 0) const;
  // lower_bound with each vpp's own memory (its micro-batches in flight,
  // split_lower_bound.hpp InterleavedTiers) and the tail, the pace and the
  // tail bounded together (paced_tail_lower_bound), each interleaved term
  // with interleaved_tail_floor: at least as high, and
  // above it where interleaving does not fit or the stages that hold the
  // most layers by the pace sync slowly, but a capacity lookup per stage,
  // mode and vpp and a tail bound per pace tried. For the skeletons the
  // initialization keeps, which are searched in its order, and (for a set
  // of arrangements at once) what its walk keeps; each skeleton it visits,
  // millions, takes lower_bound.
  double searched_lower_bound(const Skeleton& skeleton,
                              double refine_below = std::numeric_limits<double>::infinity()) const;
  // The same bound for every skeleton that rearranges this one's stages
  // [front, p - back) among themselves (the middle groups of a group
  // order, SkeletonWalk::arrangements): each of those stages holds what it
  // holds at the last of those places, where the fewest micro-batches are
  // in flight (CostModel::in_flight), and a boundary between two groups
  // there sends at least its floor over any neighbour (stage_speeds), so
  // no arrangement's bound is below it.
  double arrangement_lower_bound(const Skeleton& skeleton, int front, int back,
                                 double refine_below = std::numeric_limits<double>::infinity(),
                                 double interleaved_excess = 0) const;

  // A value the tail max_i (sync_i + opt_i) of no split of this skeleton is
  // below. Each stage's least tail (CostModel::stage_tail_floor) rises with
  // its layers and does not depend on where they sit or how they are
  // recomputed, and every stage holds from 1 to `capacities[i]` layers
  // (none given: as many as leave the others one each). So the least
  // maximum over splits is max(max_i f_i(1), the (L - p)-th least of the
  // f_i(k), 2 <= k <= cap_i): what giving each next layer to the stage
  // whose tail it raises least reaches. The pipeline bounds leave the tail
  // out, and min over splits of a sum is at least the sum of the minima,
  // so searched_lower_bound adds it. Infinity when the capacities cannot
  // hold the layers; 0 for a generic layer list (its layers' parameters
  // differ). O(layers * stages) arithmetic, no stage estimate.
  double tail_lower_bound(const Skeleton& skeleton, const std::vector<int>* capacities = nullptr) const;
  // The least tail of any interleaved plan of this skeleton: a search
  // interleaves only the split of equal layers (interleaving_searched), so
  // every stage reduces the gradients of its L / p layers (with the
  // embedding or output layer where it has one), and the largest of their
  // CostModel::stage_tail_floor bounds the tail. 0 where p does not divide
  // the layers (no interleaving) and for a generic layer list. O(stages).
  double interleaved_tail_floor(const Skeleton& skeleton) const;
  // searched_lower_bound for every such arrangement (each middle stage's
  // memory and sends as arrangement_lower_bound prices them; the tails,
  // which the arrangement does not change, as searched_lower_bound's).
  double searched_arrangement_lower_bound(const Skeleton& skeleton, int front, int back,
                                          double refine_below = std::numeric_limits<double>::infinity()) const;

  // The largest vpp the exact split tries on this skeleton
  // (max_interleaving).
  int max_vpp(const Skeleton& skeleton) const;

  // tau: forward + backward time of one micro-batch of `micro_batch`
  // sequences through one layer on a stage of this slot's shape, in the
  // fastest allowed recompute mode: the per-layer time lower_bound uses.
  // None when the stage's layers are not identical (generic model, or a
  // per-layer profile for the shape). One cached estimate.
  std::optional<double> layer_time(const StageSlot& slot, int micro_batch) const;
  // Identical layers: finish[k - 1] is the least time a stage of this
  // slot's shape spends on k layers of one micro-batch: k times the fastest
  // allowed recompute mode whose memory holds k layers where a stage holds
  // the most (MemoryPruner::max_layers_anywhere). Its size is the most
  // layers any mode holds there (at most the model's); empty when not even
  // one. None when the layers are not identical. A few
  // cached estimates and memoized capacities.
  std::optional<std::vector<double>> layer_finish_times(const StageSlot& slot, int micro_batch) const;
  // The same for the edge work a first and/or last stage adds (embedding,
  // output layer and loss): the E of split_lower_bound.hpp.
  double edge_time(const StageSlot& slot, int micro_batch, bool first, bool last) const;

  // The skeleton's best split, if its iteration time is <= bound (ties with
  // an incumbent count as found). The bound only decides whether the search
  // may give up early; the split found never depends on it, so results do
  // not depend on the order skeletons are searched in. `stop`, when given,
  // is asked between thresholds (a long model's balance takes seconds): once
  // true, the result is `stopped`.
  BalanceResult balance(const Skeleton& skeleton, double bound = std::numeric_limits<double>::infinity(),
                        const std::function<bool()>& stop = {}) const;

  // One given split under `vpp`, each stage's recompute derived (the
  // fastest that fits), scored through the cache: what a tuning step that
  // moves layers costs — only stages whose range changed are estimated
  // again. Status found (with the time) or no_feasible_split.
  BalanceResult evaluate(const Skeleton& skeleton, const std::vector<int>& layer_end, int vpp = 1) const;

  // Whether every layer costs the same on every stage of the skeleton: true
  // for transformer families unless a profile measured individual layers on
  // one of its stage shapes. Identical layers are balanced by count, others
  // by range (slower: a stage estimate per range instead of per count).
  bool identical_layers(const Skeleton& skeleton) const;

  // Stage estimates computed (cache misses included, cache hits excluded).
  std::int64_t stage_estimates() const { return stage_estimates_.load(std::memory_order_relaxed); }

 private:
  // A table of this skeleton's stages under `vpp`, each range in the
  // fastest of `modes` that fits.
  StageCostTable table(const Skeleton& skeleton, const std::vector<Recompute>& modes, int vpp) const;
  // The recompute choices a split may make: {all modes} (each stage its
  // fastest that fits), or under a Megatron-runnable search one set per
  // mode (every stage that mode).
  std::vector<std::vector<Recompute>> mode_sets() const;
  // balance() over one table (its modes and vpp); `speeds` are the
  // skeleton's stage_speeds in the fastest mode (for the sum-term bound),
  // computed once per balance().
  BalanceResult balance_in(StageCostTable& table, const StageSpeeds& speeds, double bound,
                           const std::function<bool()>& stop) const;
  // An interleaved table's one searched split, every stage L / p layers
  // (none where p does not divide L or the rules refuse it), priced against
  // `bound` as balance_in prices its best.
  BalanceResult equal_split_in(StageCostTable& table, double bound) const;

  // lower_bound with the stages [loose_begin, loose_end) priced at place
  // loose_end - 1 for memory (none when the range is empty); with
  // per_vpp_memory, searched_lower_bound's (its own tails: the excess
  // given is not read).
  double lower_bound_placed(const Skeleton& skeleton, double refine_below, int loose_begin, int loose_end,
                            bool per_vpp_memory, double interleaved_excess) const;

  const CostModel& cost_;
  const MemoryPruner& memory_;
  LatencyCache* cache_;
  IdenticalLayers identical_;
  std::vector<Recompute> modes_;  // allowed recompute modes, fastest first
  mutable std::atomic<std::int64_t> stage_estimates_{0};
};

}  // namespace autohaap
