// SearchSpace: every pipeline skeleton AutoHAAP may choose, in one canonical
// order, each with a stable id.
//
// A skeleton fixes everything of a plan but the layer split and the
// recompute modes: the node groups used and their order along the pipeline,
// each group cut into k equal stages (a used group contributes all its GPUs,
// or, when its node count is not a power of two or exceeds what any plan
// can use, its first 2^j nodes for the largest such count a plan can fill:
// search_space.cpp raw_layouts; in a small space also shares of it,
// kEveryShareSkeletons below), each group's (tp, dp) for its stages, and
// the micro-batch size B; a stage's context parallelism follows from its dp
// and B (stage_degrees). The raw space is
//   ordered non-empty subsets of groups
//   x per group a layout (GPUs used, k, tp): the stage size used/k divides a
//     node or is a multiple of one (3 nodes -> 3 stages of 8 is allowed), tp
//     any divisor of the stage size, dp = stage size / tp
//   x B from the training's micro_batch_sizes (per pipeline; with
//     micro_batch_per_replica, per replica times every dp the layouts
//     offer: searched_micro_batches).
// A merged group (NodeGroup::parts > 1, search/cluster_merge.hpp) is used
// whole parts at a time, its first 1..parts, and its stage size divides a
// part, so no stage crosses two of the original groups.
// Rules that make a raw skeleton invalid or hopeless (tp beyond a node, dp
// not dividing B, too little memory, ...) live in memory_pruning.hpp, so
// that every removed candidate is counted under its rule.
//
// A group the search's split cluster halves (cluster_split.hpp) is used
// whole or as both halves, first half first, never a half alone.
// Canonical order: group orders by length, then lexicographically; within
// one order, B ascending; then the groups' layouts as a mixed-radix number
// (first group of the pipeline most significant), each group's layouts by
// GPUs used, then k, then tp ascending. The id of a skeleton is its rank in
// that order, so any process building the same Problem numbers skeletons
// identically and a distributed driver can hand out ids or positions as
// shares.
//
// Holds a reference to the Problem, which must outlive the space; a
// temporary Problem is refused at compile time.
// Immutable after construction; every method is const and thread-safe.
// Cost: construction O(group orders * groups + layouts); decode O(groups).
// Group orders grow as groups! (8 groups: 109,600), so the space is meant
// for clusters of a handful of node groups, as real mixed clusters are.
// Above kMaxGroupOrders (10 groups: 9,864,100 orders, about 1 GB and a
// second to build; 11 would take ten times that) construction throws
// InputError naming the groups, before allocating anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/plan_builder.hpp"  // even_split
#include "autohaap/specs/parallel_rules.hpp"  // StageDegrees
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// One pipeline stage of a skeleton: where it sits and how it is cut. `dp`
// is the stage's data-parallel width, gpus / tp: with the micro-batch it
// fixes the stage's context parallelism and replicas (stage_degrees).
struct StageSlot {
  int group = 0;
  int first_gpu = 0;  // offset inside the group
  int gpus = 0;       // tp * dp
  int tp = 1;
  int dp = 1;         // tp * dp = gpus: replicas * cp

  bool operator==(const StageSlot&) const = default;
};

struct Skeleton {
  std::uint64_t id = 0;  // rank in the canonical order of the raw space
  int micro_batch = 0;   // B: sequences per pipeline micro-batch
  std::vector<StageSlot> stages;
  // Filled by the search's initialization: a valid lower bound on the
  // iteration time of any plan on this skeleton, and the relative effort
  // of searching it (for work-balanced shares).
  double lower_bound_s = 0;
  double work = 0;

  int num_stages() const { return static_cast<int>(stages.size()); }
};

// One group's cut: `stages` stages of `gpus_per_stage` GPUs, each (tp, dp).
struct GroupLayout {
  int group = 0;
  int stages = 0;
  int gpus_per_stage = 0;
  int tp = 1;
  int dp = 1;
};

// The most group orders a search space holds (see above).
inline constexpr std::uint64_t kMaxGroupOrders = 10'000'000;
// What a search allows where a cluster of `groups` node groups has more
// group orders than kMaxGroupOrders, else "": the rule SearchSpace's
// construction applies, for a caller to name the cluster's file.
std::string group_count_violation(std::size_t groups);
// A space of at most kEveryShareSkeletons raw skeletons with every share
// of each group (its first node's first 1, 2, 3, ... GPUs, its first 2,
// 3, ... nodes: search_space.cpp, small_space_layouts) takes them all;
// past it, the power-of-two shares if those stay within
// kSmallSpaceSkeletons; past that, a group whole or its fitting prefix
// alone. Every share of a 128-node group is 12,000-26,000 skeletons where
// its powers of two are 264 (3-4x the search time for plans within 0.3%).
inline constexpr std::uint64_t kEveryShareSkeletons = 10'000;
inline constexpr std::uint64_t kSmallSpaceSkeletons = 200'000;

// Which shares of its groups a space offers (kEveryShareSkeletons above).
enum class SpaceShares {
  every,         // each group's first 1, 2, 3, ... GPUs of a node and first 2, 3, ... nodes
  power_of_two,  // its first 1, 2, 4, ... GPUs and first 2, 4, ... nodes
  whole,         // a group whole or its fitting prefix alone
};

class SearchSpace {
 public:
  // every_share: a small space also takes the shares of each group
  // (kSmallSpaceSkeletons); false keeps a group whole or its fitting prefix
  // alone, as the Metis-style baseline does (Metis places every GPU).
  explicit SearchSpace(const Problem& problem, bool every_share = true);
  // The space would keep a reference to a Problem about to be destroyed.
  explicit SearchSpace(const Problem&& problem, bool every_share = true) = delete;

  const Problem& problem() const { return problem_; }
  // Ordered non-empty subsets of group indices, canonical order.
  const std::vector<std::vector<int>>& group_orders() const { return orders_; }
  // Raw layouts of one group, canonical order.
  const std::vector<GroupLayout>& layouts(int group) const { return layouts_[group]; }
  // Micro-batch sizes, ascending, without duplicates.
  const std::vector<int>& micro_batches() const { return micro_batches_; }
  // The shares of its groups this space took.
  SpaceShares shares() const { return shares_; }

  // Skeletons in the raw space (saturates at UINT64_MAX).
  std::uint64_t raw_size() const { return raw_size_; }
  // Raw skeletons of one group order and one B: product of layout counts.
  std::uint64_t combinations(int order_index) const { return combos_[order_index]; }
  // Id of the first skeleton of (order, B index).
  std::uint64_t first_id(int order_index, int micro_batch_index) const;

  // The skeleton of a group order, a B and one layout per used group
  // (layout_index[j] indexes layouts(order[j])).
  Skeleton make(int order_index, int micro_batch_index, const std::vector<int>& layout_index) const;

  // Where a skeleton (or a plan's stages) sits in the space: make's
  // arguments. None when the space cannot make it (a group's stages not
  // together and from its first GPU, a shape or B it does not list).
  struct Coordinates {
    int order = 0;
    int micro_batch = 0;  // index into micro_batches()
    std::vector<int> layout;
  };
  std::optional<Coordinates> locate(const Skeleton& skeleton) const;
  // The index of a group order in group_orders(), if it is one.
  std::optional<int> order_index(const std::vector<int>& order) const;

 private:
  const Problem& problem_;
  std::vector<std::vector<int>> orders_;
  std::vector<std::vector<GroupLayout>> layouts_;
  std::vector<int> micro_batches_;
  std::vector<std::uint64_t> combos_;       // per order
  std::vector<std::uint64_t> order_first_;  // per order: id of its first skeleton
  std::uint64_t raw_size_ = 0;
  SpaceShares shares_ = SpaceShares::whole;
};

// The micro-batch sizes B the search tries, ascending, without duplicates:
// the training's micro_batch_sizes, or with micro_batch_per_replica every
// b * dp for b in them and dp any data-parallel degree of a raw layout of
// the cluster, kept where B divides the global batch. Cost: one pass over
// the raw layouts.
std::vector<int> searched_micro_batches(const Problem& problem);

// A stage must not straddle nodes partially: it fits in one node (and a
// whole number of stages fill the node) or it is made of whole nodes.
bool valid_stage_size(int stage_gpus, int gpus_per_node);

// Whether a stage may split its sequences over `cp` GPUs: the model and the
// runtime allow it (context_parallel_violation,
// runtime_context_parallel_violation), and a --profiles-only search keeps
// cp 1 (profiles time whole sequences; a cp share of one is never measured).
bool context_parallel_allowed(const Problem& problem, int cp);

// The most pipeline stages a plan of `problem` may have: max_pipeline_stages
// (specs/parallel_rules.hpp) for its model, runtime and ZeRO stage.
int max_pipeline_stages(const Problem& problem);

// The (tp, cp, dp) a searched stage of `tp` x `width` GPUs of node group
// `group` runs with when its pipeline's micro-batch is B sequences:
// cp = width / gcd(width, B) where context_parallel_allowed and no profile
// measures the group's device, else 1; dp = width / cp replicas.
// Without cp each of the width replicas takes B / width sequences, so width
// must divide B. With cp c, width / c replicas each take B·c / width
// sequences split over c GPUs: every GPU still holds B / width of a
// sequence's tokens, does the same share of the attention and reduces the
// same gradients, and the ring adds K/V passes (cost_model.cpp). So the
// least c that makes the replicas divide B is the stage's fastest cp, and
// the one the search gives it: where width divides B, cp 1 (the refinement,
// refinement.hpp, still tries the others on finished plans). A device with
// profiles keeps cp 1: a share of a sequence is never measured, and a
// stage timed from measurements is not traded for an analytic one (the
// refinement's rule). A stage whose width does not divide B and may not use
// cp keeps cp 1, and the stage rule rejects it
// (dp_not_dividing_micro_batch). O(1) where width divides B; else one
// context_parallel_violation and one profile lookup.
StageDegrees stage_degrees(const Problem& problem, int group, int tp, int width, int micro_batch);
inline StageDegrees stage_degrees(const Problem& problem, const StageSlot& slot, int micro_batch) {
  return stage_degrees(problem, slot.group, slot.tp, slot.dp, micro_batch);
}

// Micro-batches per iteration for a skeleton: global_batch / B.
int num_micro_batches(const Problem& problem, const Skeleton& skeleton);

// Ways to split `layers` layers into `stages` non-empty contiguous ranges,
// C(layers-1, stages-1), saturating at INT64_MAX.
std::int64_t count_splits(int layers, int stages);

// Whether a search may run `stage_layers` interleaved over vpp chunks: the
// schedule's rule (interleaving_violation) and what the estimate prices
// (searched_interleaving_violation: stages of equal layers), both in
// specs/parallel_rules.hpp. Every strategy, refinement and reference asks
// this one question.
bool interleaving_searched(const Problem& problem, int vpp, const std::vector<int>& stage_layers,
                           int num_micro_batches);

// The stage a slot makes at micro-batch B: its group, device, GPUs and
// degrees (stage_degrees), without layers (an empty range) or recompute.
StagePlan slot_stage(const Problem& problem, const StageSlot& slot, int micro_batch);

// The plan of a skeleton with a split (layer_end[i] = end of stage i's
// range, the last one == layers), a recompute mode per stage and the
// chunks per stage (vpp; 1: plain 1F1B). Prediction and search stats are
// left empty.
Plan make_plan(const Problem& problem, const Skeleton& skeleton, const std::vector<int>& layer_end,
               const std::vector<Recompute>& recompute, int vpp = 1);

}  // namespace autohaap
