// Replica shares: how a stage whose data-parallel replicas sit on several
// device types (replica sets, plan.hpp ReplicaSet) should split each
// micro-batch among its sets. A faster device's replicas should take more
// sequences (Poplar, Zhang et al. 2025, sizes each GPU's batch by its
// speed and memory; AMP's DeepSpeed runs, Li et al. 2022, give every
// replica the same, which tests/data/amp/ shows is slower on V100 + T4),
// but only as many as fit its memory.
//
// Problem. Stage i of `plan` has sets k = 1..S, set k being r_k replicas
// (ReplicaSet::gpus / (tp * cp)) on its own group and GPUs. Choose integer
// per-replica shares q_k >= 1 (sequences n_k = q_k * r_k: every replica of a
// set takes the same share, and the plan-file rule gives every set at least
// one sequence) with sum_k n_k = B, the plan's micro_batch_size, minimizing
// the stage's pace max_k c_k(q_k), where c_k(q) is what CostModel::stage
// paces the stage by (CostModel::pacing_set): set k's forward + backward of
// one micro-batch plus its pipeline sends at share q, subject to every set
// fitting its own device (StageEstimate::fits at share q).
//
// Method: exact dynamic programme over (sets, sequences assigned). The
// cost model prices each set at its own share alone: replica_set_estimates
// costs set k as a one-device stage with micro-batch q_k * dp on its own
// device, whose gradient sync link and ZeRO shards depend on the placement
// and dp only, never on another set's share. So c_k and fits_k are
// functions of q_k alone and the problem is a bottleneck knapsack:
//   f_0(0) = 0, f_0(b > 0) = +inf,
//   f_k(b) = min over q >= 1, q * r_k <= b, fits_k(q) of max(c_k(q), f_{k-1}(b - q r_k)),
// and the optimum is f_S(B). Exactness: every share vector is one path of
// this recursion and max is monotone in each argument, so by induction on
// k, f_k(b) is the least pace over all feasible shares of the first k sets
// summing to b (the usual DP argument: an optimal vector's prefix is
// optimal for its own b). No monotonicity of c_k in q is assumed: measured
// profiles and the efficiency curve may make a larger share cost less per
// sequence, and the recursion still holds. (When c_k is non-decreasing,
// as under the roofline, a bisection on the pace with a greedy fill gives
// the same value; the DP needs no such argument and B is small.)
// Ties (deterministic): the last set takes the least share that keeps the
// optimum, then each set before it likewise for what is left.
//
// Cost: Q = max_k floor(B / r_k) calls of CostModel::replica_set_estimates
// (S stage estimates each: all sets priced at once per share q), then
// O(S * B * Q) comparisons. Pure; thread-safe (reads the const model only).
// Callers: search/mixed_stages.cpp; tests/unit/replica_shares_test.cpp
// checks it against every share vector with the real cost model.
#pragma once

#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/search/stop_condition.hpp"

namespace autohaap {

struct ReplicaShares {
  // Sequences of each micro-batch per set, in the stage's order (each a
  // multiple of its set's replicas, summing to B); empty when no split
  // fits (B below one sequence per replica, or some set out of memory at
  // every share the others leave it).
  std::vector<int> sequences;
  double pace_s = 0;                 // max over sets of forward + backward + sends at these shares
  std::vector<StageEstimate> sets;   // each set's estimate at its share
  bool found() const { return !sequences.empty(); }
};

// The best shares of stage `stage_index`'s replica sets for the plan's
// micro-batch (the sets' current `sequences` are ignored). The stage must
// have replica sets (std::invalid_argument otherwise: a caller's error).
// None (not found) when `stop` says so before the table is done. Cost:
// O(S * B/g * most share) with g the gcd of the sets' replica counts.
ReplicaShares choose_replica_shares(const CostModel& model, const Plan& plan, int stage_index,
                                    const StopCondition& stop = {});

}  // namespace autohaap
