// Mixed stages: the GPUs a found plan leaves idle, put to work as replica
// sets of its stages (plan.hpp ReplicaSet), each set on its own device type
// with its own share of the micro-batch (search/replica_shares.hpp).
//
// Why after the search. The exact search (searcher.hpp) places every stage
// on one device type and uses a chosen group whole, so a group too small or
// too slow to hold a stage of its own (a node of older GPUs next to many
// new ones: AMP, Li et al. 2022; Sailor, Strati et al. 2025) stays idle.
// Such a group can still help as extra data-parallel replicas of a stage on
// faster GPUs, taking fewer sequences of each micro-batch. Whether it pays
// depends on the exact share split, the stage's memory on the slower
// device and the gradient sync over the slower link, so each candidate is
// priced by the cost model, not by a bound.
//
// Method: local improvement, best move first. A move adds one replica set
// to one stage: r replicas of the stage's tp and cp on idle GPUs of one
// group (the first GPUs of a free range, each tensor-parallel group inside
// a node), with r = 1, 2, 4, ... and all the range holds. The micro-batch
// B may grow with it (every stage's replicas must each take a sequence):
// every B of the search's list (search_space.hpp searched_micro_batches)
// that is at least the current one, divides the global batch and gives
// each one-device stage whole sequences per replica (with sizes per
// replica, micro_batch_per_replica, also every divisor of the global
// batch up to the largest size times the stage's replicas). Every mixed stage then
// takes its exact best shares (choose_replica_shares) and the plan is
// estimated; the interleaving stays when its rule still holds, else 1. Of
// all moves the fastest that fits and beats the plan is applied; moves
// repeat until none is faster. So the result is never slower than the
// plan given (it is that plan when nothing helps) and is a local optimum
// over these moves, not a proven one: the search's bound and gap describe
// the space of one-device stages it searched.
//
// Not tried (a next step): moving replicas between stages, or splitting a
// group the search used whole into sets of two stages.
//
// Pure and deterministic (moves in a fixed order, ties to the first).
// Cost per round: stages x free ranges x O(log gpus) replica counts x
// |B list| plan estimates, each after an exact share choice per mixed stage
// (O(B / replicas) set estimates). Thread-safe: reads the const model only.
// Callers: refine_plans (search/refinement.hpp) unless the search was told
// --no-mixed-stages or asked for Megatron-runnable plans (Megatron-LM runs
// one device type per replica set of a stage: io/megatron_export.hpp).
#pragma once

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/search/stop_condition.hpp"

namespace autohaap {

// `plan` with idle GPUs added as replica sets where that makes it faster;
// `plan` itself (re-estimated) otherwise. `stop` (the search's time limit
// or a signal) ends the greedy rounds early with the best plan so far: on
// hundreds of node groups a round prices thousands of plans.
Plan add_idle_replica_sets(const CostModel& model, const Plan& plan, const StopCondition& stop = {});

}  // namespace autohaap
