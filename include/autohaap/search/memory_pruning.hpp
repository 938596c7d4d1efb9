// Memory-aware initialization: before any latency is computed, remove every
// skeleton that is invalid or cannot hold the model, and count what each
// rule removed so `--explain` can show where the space went.
//
// Rules, applied in this order (a skeleton is counted under the first rule
// it breaks):
//   structural (every strategy):
//     micro_batch_not_dividing_batch   B does not divide the global batch
//     tp_exceeds_node                  tp does not divide the GPUs of a node
//     tp_not_dividing_heads            tp does not divide the (kv) heads or
//                                      ffn_hidden (or, under sequence
//                                      parallelism, a cp rank's tokens), or
//                                      tp > 1 on a generic layer-list model
//     dp_not_dividing_micro_batch      a stage's dp does not divide B, and no
//                                      context parallelism the model allows
//                                      makes its replicas divide it
//     not_profiled                     --profiles-only: the profiles do not
//                                      measure a layer of this layout
//     not_runnable                     --runnable megatron: the groups' stages
//                                      differ in tp or dp, or mix devices with
//                                      and without FP8 in fp8 training
//                                      (specs/runnable_by.hpp)
//     more_stages_than_layers          every stage needs at least one layer
//   memory (AutoHAAP only; from CostModel::stage_memory, before any latency):
//     stage_cannot_hold_one_layer      a stage cannot hold one layer, even
//                                      with the leanest allowed recompute
//     capacity_below_layers            the stages' layer capacities sum to
//                                      fewer than the model's layers
// The report also counts skeletons skipped because their lower bound cannot
// beat the best plan (lower_bound_above_best: during initialization against
// a few probe plans, never stored, and during the search against the
// incumbent) and those with no split that fits memory (no_feasible_split).
//
// Capacity: the most layers one GPU of a stage can hold for (group, tp, dp,
// B, recompute, first/last position, micro-batches in flight under 1F1B).
// For a model of identical layers that is a count; for a generic layer list
// it is the longest contiguous window that fits where the stage may sit
// (from layer 0 for the first stage, up to the last layer for the last), an
// upper bound, so pruning stays safe. Memory is assumed to grow with the
// layer range (true of every term of the cost model).
//
// Thread safety: MemoryPruner is safe to share (its memo is concurrent);
// initialize_skeletons runs in parallel itself and returns the same list for
// any thread count. Cost: one capacity needs O(log layers) stage_memory
// calls (O(layers) windows for generic models), memoized.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/search/search_space.hpp"

namespace autohaap {

enum class PruneRule : int {
  micro_batch_not_dividing_batch,
  tp_exceeds_node,
  tp_not_dividing_heads,
  dp_not_dividing_micro_batch,
  not_profiled,
  not_runnable,
  more_stages_than_layers,
  stage_cannot_hold_one_layer,
  capacity_below_layers,
  lower_bound_above_best,
  no_feasible_split,
  // Lower bound above the --max-skeletons best kept by initialization: the
  // search's proven bound covers them (PreparedSearch::dropped_bound_s).
  beyond_skeleton_limit,
};
inline constexpr int kPruneRuleCount = 12;

// Stable snake_case name (what --explain and result files print).
const char* to_string(PruneRule rule);
// One line saying what the rule means.
const char* describe(PruneRule rule);

struct PruneReport {
  std::int64_t considered = 0;                          // skeletons in the raw space
  std::int64_t kept = 0;                                // skeletons left after initialization
  std::array<std::int64_t, kPruneRuleCount> removed{};  // by PruneRule

  void add(PruneRule rule, std::int64_t count) { removed[static_cast<int>(rule)] += count; }
  std::int64_t count(PruneRule rule) const { return removed[static_cast<int>(rule)]; }
  // Removed by initialization (structural + memory rules).
  std::int64_t removed_initially() const;
  // Skipped during the search (bound, no split).
  std::int64_t skipped_in_search() const;
  // Adds another report's counts (shares of a distributed search).
  void merge(const PruneReport& other);
  // (rule name, count) for every rule, in rule order, zero counts included.
  std::vector<std::pair<std::string, std::int64_t>> rows() const;
};

// The first structural rule a group layout breaks with micro-batch size B
// (tp_exceeds_node, tp_not_dividing_heads, dp_not_dividing_micro_batch):
// the stage rule (specs/parallel_rules.hpp) counted under its prune rule.
std::optional<PruneRule> layout_rule(const Problem& problem, const GroupLayout& layout, int micro_batch);

// Whether two groups' layouts can share a Megatron-runnable pipeline
// (specs/runnable_by.hpp): stages of one shape (as many GPUs, the same tp,
// hence the same dp) on devices that run one precision.
bool megatron_compatible(const Problem& problem, const GroupLayout& a, const GroupLayout& b);

class MemoryPruner {
 public:
  explicit MemoryPruner(const CostModel& cost);
  ~MemoryPruner();
  MemoryPruner(const MemoryPruner&) = delete;
  MemoryPruner& operator=(const MemoryPruner&) = delete;

  const CostModel& cost() const { return cost_; }

  // Layers one GPU of stage `stage_index` (of `num_stages`) can hold with
  // this slot, recompute mode, B and micro-batch count; 0: not even one.
  int max_layers(const StageSlot& slot, Recompute recompute, int micro_batch, int stage_index, int num_stages,
                 int num_micro_batches) const;
  // The same with the leanest mode among the training's recompute modes.
  int max_layers_leanest(const StageSlot& slot, int micro_batch, int stage_index, int num_stages,
                         int num_micro_batches) const;
  // The most layers a stage of this slot holds wherever it sits in any
  // pipeline: as a middle stage with one micro-batch in flight (no edges)
  // or as a lone stage (edges, but no pipeline communicator); every other
  // place keeps more activations or the edges. A bound on max_layers at
  // every position, before a skeleton exists.
  int max_layers_anywhere(const StageSlot& slot, Recompute recompute, int micro_batch) const;
  int max_layers_anywhere_leanest(const StageSlot& slot, int micro_batch) const;
  // The most layers a middle stage of this slot holds, leanest mode, with
  // `in_flight` micro-batches in flight (CostModel::in_flight, plain
  // 1F1B): for a stage whose place is known only so far as how many it
  // keeps at least (a pipeline's prefix). Non-increasing in in_flight; at
  // least what a first stage holds there (the edges only add memory).
  int max_layers_in_flight_leanest(const StageSlot& slot, int micro_batch, int in_flight) const;
  // The same in one recompute mode: what a stage holds under an
  // interleaved schedule, whose memory differs from plain 1F1B's only in
  // the micro-batches in flight (CostModel::in_flight with vpp; rounded
  // down, it gives a capacity at least the true one).
  int max_layers_in_flight(const StageSlot& slot, Recompute recompute, int micro_batch, int in_flight) const;
  // Per stage of the skeleton, max_layers_leanest.
  std::vector<int> capacities(const Skeleton& skeleton) const;
  // The first memory rule the skeleton breaks, if any.
  std::optional<PruneRule> check(const Skeleton& skeleton) const;

 private:
  struct Memo;
  const CostModel& cost_;
  std::unique_ptr<Memo> memo_;
};

struct SkeletonList {
  std::vector<Skeleton> skeletons;  // canonical (id) order
  PruneReport report;
};

// Every skeleton of the space that passes the structural rules and, when
// `memory` is given, the memory rules; counted per rule. Materializes the
// whole list: for small spaces (tests, the exhaustive reference); the
// search streams with enumerate_skeletons instead.
SkeletonList initialize_skeletons(const SearchSpace& space, const MemoryPruner* memory);

// The first per-layout structural rule (layout_rule) each raw layout of a
// space breaks, per group and B index: a rule depends on the group, the
// layout and B alone, while the search's walk asks structural_layouts for
// every group of every (group order, B) several times (a tenth of the walk
// on eight groups). Each (group, B) row is filled on first use, once, by
// whichever thread asks first.
// Thread safety: const methods may be called from any thread at once. The
// space and its problem must outlive it and not change.
class LayoutRules {
 public:
  explicit LayoutRules(const SearchSpace& space);
  ~LayoutRules();
  LayoutRules(const LayoutRules&) = delete;
  LayoutRules& operator=(const LayoutRules&) = delete;
  // layout_rule of layouts(group)[layout_index] at micro_batches()[micro_batch_index].
  std::optional<PruneRule> rule(int group, int layout_index, int micro_batch_index) const;

 private:
  struct Rows;
  const SearchSpace& space_;
  std::unique_ptr<Rows> rows_;
};

// Per used group of one (group order, B index): the indices into
// space.layouts(group) that break no per-layout structural rule, and the
// counts of the raw skeletons of that (order, B) each structural rule
// removes (micro-batch, tp and dp rules; more_stages_than_layers is only
// known per skeleton) added to `report`. Empty lists when B does not divide
// the batch. `rules`: the space's rules already known (else each layout's
// is worked out here). Cost: O(groups * layouts).
std::vector<std::vector<int>> structural_layouts(const SearchSpace& space, int order_index, int micro_batch_index,
                                                 PruneReport& report, const LayoutRules* rules = nullptr);

// What enumerate_skeletons asks its caller while it walks one (order, B).
struct SkeletonWalk {
  // After the layout of pipeline position `depth` is chosen (layout_index
  // [0..depth] set): false skips every skeleton below, counted under
  // lower_bound_above_best (ahead of any memory rule they might break: the
  // bound only ever skips what cannot win). Null: visit everything.
  std::function<bool(int depth, const std::vector<int>& layout_index)> keep_prefix;
  // Each skeleton that passes every rule (memory ones too, when a pruner
  // is given).
  std::function<void(Skeleton&& skeleton)> visit;
  // Polled every few thousand skeletons: true abandons the walk.
  std::function<bool()> stop;
  // keep_prefix's answer does not depend on how the groups between the
  // first and the last are arranged (its bounds see the prefix's layouts,
  // which group is first and last, and the open groups as a set). Then
  // every order of four or more groups whose middle is not ascending walks
  // nothing (its structural counts only): the order with the same first
  // and last group and that middle ascending walks for all of them and, at
  // each skeleton it keeps, visits that skeleton's every arrangement of the
  // middle ((n - 2)! orders, each a skeleton of its own order; the memory
  // rules and visit see each). What a prefix skips is skipped for every
  // arrangement, counted as such. On n groups the walk's prefix tests drop
  // up to (n - 2)!-fold; the skeletons visited stay the same, but for the
  // arrangements keep_arrangement skips.
  bool arrangements = false;
  // With `arrangements`, before the arrangements of a skeleton kept are
  // visited: asked of `skeleton`, one of them, with its first t middle
  // groups placed (1 <= t <= n - 5: each placement stands for at least six
  // arrangements) and the others, its stages [loose_begin,
  // loose_end), still to be arranged among themselves. False skips every
  // arrangement that places those t groups so, counted under
  // lower_bound_above_best. Null: every arrangement is visited.
  std::function<bool(const Skeleton& skeleton, int loose_begin, int loose_end)> keep_arrangement;
  // The space's layout rules, when the caller keeps them (structural_layouts).
  const LayoutRules* rules = nullptr;
  // A slice of the walk (fix_leading_layouts): the layouts of its first
  // positions fixed to these, so one heavy (order, B) is walked in pieces
  // by several threads. The slices of every choice of those layouts the
  // structural rules keep, walked in their mixed-radix order, visit what
  // the whole walk does in its order. What the structural rules remove is
  // counted by the slice whose counts_structure is set (one per walk);
  // every slice counts what it skips itself. Empty: the whole walk.
  std::vector<int> fixed_layouts;
  bool counts_structure = true;
};

// Restricts each position j < fixed.size() of `ok` (structural_layouts) to
// the layout fixed[j], or to none where the rules do not keep it.
void fix_leading_layouts(std::vector<std::vector<int>>& ok, const std::vector<int>& fixed);

// Whether enumerate_skeletons, told `arrangements`, walks this order for
// the orders that rearrange its middle (true when it is their ascending
// one) or leaves it to another (false), or walks it alone (std::nullopt:
// fewer than four groups).
std::optional<bool> walks_arrangements(const std::vector<int>& order);

// Streams the skeletons of one (group order, B index) in id order without
// storing them, counting every removed one in `report` (the raw total of
// the (order, B) is not added to report.considered). Returns false if
// stopped. Memory O(groups); cost O(skeletons visited * stages) plus the
// pruner's memoized capacities.
bool enumerate_skeletons(const SearchSpace& space, const MemoryPruner* memory, int order_index, int micro_batch_index,
                         PruneReport& report, const SkeletonWalk& walk);

// Every structurally valid skeleton of `space` (no memory rules), to
// `visit`, one (group order, B) after another in id order, on the calling
// thread, until stop() is true (asked between them and every few thousand
// skeletons). Memory O(groups): it counts spaces too large to list.
void stream_structural_skeletons(const SearchSpace& space, const std::function<void(Skeleton&&)>& visit,
                                 const std::function<bool()>& stop);

// The least static memory any plan needs on its fullest GPU: the whole
// model's weights, gradients and optimizer states spread evenly over every
// GPU of the cluster (headroom included), against the largest device's
// capacity. need_GiB > largest_GiB: no plan fits, whatever its layout.
struct StaticStateFloor {
  double need_GiB = 0;
  double largest_GiB = 0;
  int largest_group = 0;
};
StaticStateFloor static_state_floor(const CostModel& cost);

// Why no plan exists, in one sentence a user can act on, from the report of
// an initialization (or search) that kept nothing: the rule that removed
// the most and, for memory, the smallest per-GPU memory the model needs
// (weights, gradients and optimizer states spread over every GPU) against
// the largest device.
std::string infeasible_reason(const CostModel& cost, const PruneReport& report);

}  // namespace autohaap
