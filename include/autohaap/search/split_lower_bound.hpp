// Split lower bound: a value no layer split of a skeleton can beat, from
// per-layer estimates alone (no stage estimate), so the search can skip a
// skeleton before balancing it, and the exact split can stop its threshold
// loops early.
//
// With tau_i the per-layer time of stage i in its fastest mode, E_i its
// embedding / head time and c_i its layer capacity, the 1F1B iteration time
//   sum_i (t_i + p2p_i) + (m - 1) max_i (t_i + p2p_i) + max_i (sync_i + opt_i)
// has a bottleneck of at least the least T with
// sum_i min(c_i, (T - E_i) / tau_i) >= L (a fractional split), and a sum
// term of at least sum_i (E_i + tau_i) + (L - p) min_i tau_i (every stage
// holds a layer; the rest run at best on the fastest stage). Under plain
// 1F1B, E_i counts stage i's pipeline sends s_i too: with identical layers
// every boundary moves the same bytes, so they are known before the split
// (on Llama 3 70B over five node groups they are 2% of the pace, and
// counting them cut the skeletons the search keeps from 126,749 to 518). Other
// communication, sync and recompute only add. Generic layer lists use
// per-stage speed ratios against stage 0 and, for the sum, each layer on
// its fastest stage, and count no sends.
//
// Interleaved over v chunks the time is m max_i (t_i + p2p_i) + (sum -
// max) / v + tail = (m - 1/v) pace + sum / v + tail: increasing in pace and
// sum, so the bounds B on the bottleneck and S on the sum give
// m B + (S - B) / v, which is monotone in 1/v: the least over every v from
// 1 to max_vpp is at v = 1 or v = max_vpp for one B. A search interleaves
// only the split of equal layers (interleaving_searched), every stage L / p
// layers (at least v, one a chunk), so with identical layers B is at least
// every stage's (L / p)-layer finish there (a stage that cannot hold them
// rules interleaving out): each v has its own B, and the bound is the least
// term. The
// capacities are those of plain 1F1B: interleaving holds at least as many
// micro-batches in flight on every stage (CostModel::in_flight), so a stage
// holds no more layers under any vpp, and the bottleneck bound stays valid.
// Where the caller gives each v's own capacities (InterleavedTiers), v's
// B is also the least pace at which stages of those capacities hold every
// layer, infinity where they cannot: a skeleton whose memory fits only
// plain 1F1B is then bounded by the plain schedule's bubble, not by an
// interleaving it cannot run (Llama 3 70B on six node groups: the least
// bounds lay 12.8% under their skeletons' best times, each of them vpp 1).
// The sends of an interleaved schedule (which Megatron hides behind
// compute) are left out, so the interleaved terms take the edges without
// s_i and the plain term with them: the bound is the least of the two.
// The tail max_i (sync_i + opt_i) differs between them too: a plain split
// may leave a stage whose gradient sync is slow one layer, an interleaved
// one gives it its L / p (CostModel::stage_tail_floor rises with the
// layers). So the functions below take an `interleaved_excess`, the tail
// the interleaved terms pay beyond the one the caller adds to every
// schedule (0: none known). Measured: Llama 3 70B on eight node groups of
// 64 GPUs, whose best bounds lay on 16-stage skeletons interleaved five
// ways with an L40S stage of 64-way data parallelism, that stage's sync of
// 5 layers 1.45 s against 0.29 s for one: every one of the 138,688
// skeletons the initialization kept bounded 2-15% under its best time,
// and every one above the optimum with each schedule's own tail.
//
// Thread safety: pure functions of their arguments (the cache is
// concurrent). Cost: O(stages + groups * distinct layers) cached layer
// estimates, plus a bisection of O(stages) steps.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/search_space.hpp"

namespace autohaap {

// Forward + backward time of one micro-batch of `micro_batch` sequences
// through one layer (layer < 0: any layer of a model of identical layers)
// or through the edge work (first / last stage), in mode `mode`, on a stage
// of this slot's shape; through the cache when there is one.
double layer_seconds(const CostModel& cost, LatencyCache* cache, Recompute mode, const StageSlot& slot,
                     int micro_batch, int layer, bool first, bool last);

// Per stage of a skeleton: edge time and per-layer time in one recompute mode.
struct StageSpeeds {
  std::vector<double> edge;                 // E_i (0 for a middle stage)
  std::vector<double> layer;                // identical layers: tau_i
  std::vector<std::vector<double>> layers;  // generic: tau_il
  // Identical layers: s_i, stage i's pipeline sends of one micro-batch
  // under plain 1F1B (CostModel::boundary_send_s, once per boundary it
  // has), the same whatever the split; empty for generic layers.
  std::vector<double> send;
};
StageSpeeds stage_speeds(const CostModel& cost, LatencyCache* cache, Recompute mode, const Skeleton& skeleton,
                         bool identical);
// The same into `out`, whose buffers are reused. Stages [loose_begin,
// loose_end) may be rearranged among themselves group by group (the
// middle of a group order, LoadBalancer::arrangement_lower_bound): a
// boundary between two groups that touches them counts each side's floor
// over any neighbour (CostModel::boundary_send_floor_s), so the sends
// bound every arrangement.
void stage_speeds(const CostModel& cost, LatencyCache* cache, Recompute mode, const Skeleton& skeleton, bool identical,
                  StageSpeeds& out, int loose_begin = 0, int loose_end = 0);

// Lower bound of the sum term sum_i (t_i + p2p_i) over every split (the
// sends left out: an interleaved schedule may hide them).
double sum_term_lower_bound(const StageSpeeds& speeds, int layers);
// The same under plain 1F1B, which pays every stage's sends.
double plain_sum_term_lower_bound(const StageSpeeds& speeds, int layers);

// Per stage, its recompute modes as the bound sees them: each mode's
// per-layer time (forward + backward) and the most layers it holds
// (MemoryPruner::max_layers). k layers cost at least k times the least
// per-layer time among the modes that hold k (the balancer runs a stage in
// the fastest mode that fits, stage_cost_table.hpp).
struct ModeTier {
  int capacity = 0;
  double layer_s = 0;
};
using StageTiers = std::vector<std::vector<ModeTier>>;

// Lower bound of the whole iteration time (infinity when the capacities
// cannot hold the layers), scaled down by a relative 1e-12 so rounding
// never lets it exceed the optimum. `speeds` in the fastest allowed mode;
// `capacities` per stage (MemoryPruner::capacities), every layer at the
// fastest mode's time; the sum term unpaced. Cheap: what the search's
// initialization asks of every skeleton it builds.
double iteration_lower_bound(const StageSpeeds& speeds, const std::vector<int>& capacities, int layers,
                             int micro_batches, int max_vpp = 1, double interleaved_excess = 0);
// Tighter, for a skeleton the cheap bound keeps: each stage's modes (a
// stage whose layers only fit a leaner mode pays that mode's time for them;
// at most the first three), and the sum term at each pace (no stage slower
// than the pace, so the fastest stages cannot take every extra layer).
// Identical layers; a generic layer list gets the cheap bound with the
// leanest capacity. `enough`: a value the caller only compares the bound
// with; once the bound is known to exceed it, a bound above it (not the
// tightest) is returned.
// `interleaved(w)`, when given: each stage's modes under w chunks (as
// `tiers`, with w's micro-batches in flight), asked only for the w whose
// term could still bring the bound to `enough` or below.
using InterleavedTiers = std::function<const StageTiers&(int vpp)>;
double iteration_lower_bound(const StageSpeeds& speeds, const StageTiers& tiers, int layers, int micro_batches,
                             int max_vpp = 1, double enough = std::numeric_limits<double>::infinity(),
                             const InterleavedTiers& interleaved = {}, double interleaved_excess = 0);

// The pace and the tail cannot both be at their least. A stage of pace P
// holds no more layers than it finishes by P (its fastest modes that fit,
// as `tiers` has them), so every split of pace P has a tail of at least
// the least tail over splits under those caps (`capped_tail`, given the
// caps per stage: LoadBalancer::tail_lower_bound), and a time of at least
// f(P) + that, with f = pipeline_time_lower_bound at the sum-term bound,
// rising in P. The caps grow only where some stage finishes one layer more,
// and in between f rises while the tail stays, so the least over every
// pace is among those paces, from the whole-layer bottleneck up; the walk
// stops once f with `uncapped_tail` (the least tail of any split) passes
// the least found, or `enough`; the interleaved terms' tail is at least
// `interleaved_tail` (every stage holds L / p layers) at every pace.
// Identical layers (generic: the uncapped tail). Measured: Llama 3 70B
// on eight node groups of 64 GPUs, whose plans at B = 8 spend a tenth of
// their time in the gradient sync of the stage that paces them: the
// skeletons the initialization kept lay a median 9.5% under their best
// times with the pace and tail bounded apart, 6.7% with them bounded
// together.
using CappedTail = std::function<double(const std::vector<int>& caps)>;
double paced_tail_lower_bound(const StageSpeeds& speeds, const StageTiers& tiers, int layers, int micro_batches,
                              int max_vpp, double uncapped_tail, const CappedTail& capped_tail,
                              double enough = std::numeric_limits<double>::infinity(), double interleaved_tail = 0);

// Stages alike in how fast they finish a micro-batch's layers: each
// finishes its k-th layer at `edge` + (*finish)[k - 1] at the earliest
// (non-decreasing in k; its size is the most layers such a stage holds
// wherever it sits). `limit`: the most it holds where it does sit (its
// memory at its pipeline position), when that is known. With `holds_one`,
// every stage of the class holds at least one layer (a stage of a
// skeleton, or the envelope of a group not placed yet: the most any of its
// layouts could finish, and it takes at least one stage); without, it may
// hold none.
struct FinishClass {
  const std::vector<double>* finish = nullptr;
  double edge = 0;
  int count = 1;
  bool holds_one = true;
  int limit = std::numeric_limits<int>::max();
  int held = 0;  // scratch of least_whole_layer_pace
  int capacity() const { return std::min(limit, static_cast<int>(finish->size())); }
};

// The least pace by which the classes hold `layers` whole layers (a stage
// of pace T holds the layers it finishes by T: the pace is the layers-th
// smallest finish time over every stage, a merge of their sequences), and
// at least the slowest one-layer finish of a class that holds one;
// infinity when their capacities cannot hold the layers. `below`: a pace
// the answer is known not to be under (e.g. the bound from per-layer
// rates), from which the merge starts, so it takes a few steps rather than
// one per layer. What the search's walk over layouts asks at every prefix:
// O(classes) per step. `enough`: a pace the caller only asks whether the
// answer passes; the merge stops at the first step past it and returns
// that step's pace, still a lower bound and still past `enough`
// (pace_passing gives it; the walk's prefixes are mostly cut this way, and
// on 126 layers the merge was a quarter of the walk).
double least_whole_layer_pace(std::span<FinishClass> classes, int layers, double below,
                              double enough = std::numeric_limits<double>::infinity());

// pipeline_time_lower_bound(P, S(P), micro_batches, floors, plain) of a
// pipeline of these classes over every pace P from `pace` (at most their
// least whole-layer pace) up, where S(P), the sum of stage times when no
// stage takes longer than P, is at least `fixed_sum` plus each stage that
// holds one its edge and first layer, and the layers beyond those on the
// classes of least per-layer time first, each up to what it finishes by P
// (an envelope, which need hold none, up to its own); never below
// `unpaced_sum`. As paced_sum_bound for a whole skeleton: the fastest
// stages cannot take every extra layer, so a pipeline paced near its
// least bottleneck has its stages near that pace too. `enough` as in
// least_whole_layer_pace. What the walk asks of a prefix its cheaper
// tests keep.
double paced_classes_lower_bound(std::span<const FinishClass> classes, int layers, int micro_batches, double pace,
                                 double fixed_sum, double unpaced_sum, std::span<const double> floors, bool plain,
                                 double enough = std::numeric_limits<double>::infinity(),
                                 double interleaved_excess = 0);

// Per interleaving degree w = 2 .. max_vpp (out[w - 2]): the least pace of
// a pipeline of these stages interleaved over w chunks. Every stage holds
// at least w layers (one a chunk), and at least stage_layers[w - 2] where
// the caller knows more: a search interleaves stages of L / p layers only
// (interleaving_searched), so a whole skeleton's hold L / p and a prefix's
// at least L over the most stages any pipeline interleaved over w may have
// (InterleavingLimits, searcher.cpp). The pace is at least every stage's
// finish of that many; infinity where a stage holds fewer (w impossible).
// Envelopes (classes that need not hold one) do not count.
void interleaved_pace_floors(std::span<const FinishClass> classes, int max_vpp, std::vector<double>& out,
                             std::span<const int> stage_layers = {});

// The least iteration time of a 1F1B pipeline of m micro-batches whose
// pace (slowest stage, communication included) is at least `pace` and
// whose stage times sum to at least `stage_sum` (the tail left out), over
// every interleaving the floors allow (CostModel::iteration_time_1f1b):
// (m - 1) P + S plain, and over w chunks m P_w + (S - P_w) / w with
// P_w = max(P, floors[w - 2]). Both are increasing in P and S, so bounds
// on them bound the time.
// Without `plain`, the interleaved terms only (infinity where no floor is
// finite): what bounds the interleaved schedules apart from the plain one,
// whose pace and sum count the pipeline sends the others may hide. Each
// interleaved term adds `interleaved_excess` (header).
double pipeline_time_lower_bound(double pace, double stage_sum, int micro_batches, std::span<const double> floors,
                                 bool plain = true, double interleaved_excess = 0);
// A pace past which pipeline_time_lower_bound(pace, stage_sum,
// micro_batches, floors, true, interleaved_excess) exceeds `limit` (each
// of its terms is linear and non-decreasing in the pace: the largest of
// their crossings); -infinity when it does at every pace, infinity when at
// none.
double pace_passing(double limit, double stage_sum, int micro_batches, std::span<const double> floors,
                    double interleaved_excess = 0);
// The same with no floor on any w from 2 to max_vpp: the least term is
// then at w = max_vpp (without `plain`, that term alone; infinity where
// max_vpp < 2).
double pipeline_time_lower_bound(double pace, double stage_sum, int micro_batches, int max_vpp, bool plain = true,
                                 double interleaved_excess = 0);

}  // namespace autohaap
