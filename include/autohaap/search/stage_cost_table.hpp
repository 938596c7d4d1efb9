// Stage cost table: for one skeleton, the cost of every stage on any layer
// range in the recompute mode a policy picks, computed on first use (through
// the latency cache when there is one) and kept for one balancing call. The
// exact split (load_balancer.hpp) picks per range the fastest mode that fits;
// the Metis-style balancer (metis_balancer.hpp) gives each stage one mode
// and ignores memory. Under overlap_grad_reduce a stage's exposed gradient
// sync shrinks as its backward grows, so a slower mode can win on a stage
// that does not pace the pipeline and a stage's tail need not grow with its
// layers: the table then also keeps each range's leaner fitting modes
// (Choice::leaner) and prices a split in the modes that make it fastest
// (tails_vary). A table is for one vpp (interleaved 1F1B over vpp
// chunks per stage, specs/parallel_rules.hpp): its stage entries carry that
// vpp's sends and micro-batches in flight, a range of fewer than vpp layers
// is infeasible, and iteration_time is the interleaved one. Also here: which stages hold identical layers (then a
// range's cost depends only on its length and the pipeline edges).
//
// Thread safety: a StageCostTable is not (one per call); IdenticalLayers is
// immutable. Cost: one stage estimate (or cache lookup) per (stage, range,
// mode) first asked for; the capacities of a must-fit table are computed up
// front (O(stages * modes) memoized capacity queries).
#pragma once

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_space.hpp"

namespace autohaap {

// Whether every layer costs the same on a stage: true for transformer
// families unless a profile measured individual layers on the stage's shape
// (device, tp, sequences per replica) at the problem's sequence length.
class IdenticalLayers {
 public:
  explicit IdenticalLayers(const Problem& problem);
  bool on(const StageSlot& slot, int micro_batch) const;
  // On every stage of the skeleton.
  bool on(const Skeleton& skeleton) const;

 private:
  const Problem& problem_;
  bool generic_ = false;
  std::vector<std::string> group_device_;                       // device name per node group
  std::set<std::tuple<std::string, int, int>> layer_profiles_;  // (device, tp, sequences per replica)
};

// How a table picks each stage's recompute mode for a range.
struct RecomputeChoice {
  // Per stage: the modes to try, in order.
  std::vector<std::vector<Recompute>> modes;
  // true: the first mode whose memory fits (none fits: the range is
  // infeasible). false: the first mode, memory ignored (infeasibility is
  // left to the final estimate).
  bool must_fit = true;
};

class StageCostTable {
 public:
  // A recompute mode for a range and its cost there.
  struct Option {
    Recompute recompute = Recompute::none;
    StageEntry entry;
    // Compute plus the stage's own sends: what paces the 1F1B steady state
    // and the stage's share of the fill-and-drain sum
    // (CostModel::iteration_time_1f1b).
    double pace() const { return entry.pace_s(); }
    // Data-parallel sync and optimizer step.
    double sync() const { return entry.tail_s(); }
  };
  // The fastest mode that fits a range (the Option part) and, where tails
  // vary, the slower modes that fit it with a smaller tail.
  struct Choice : Option {
    bool computed = false;
    bool feasible = false;
    // What a layer list's reach grows on (threshold_split.hpp), a compute
    // time that grows with the range: where a range that does not fit may
    // fit with more layers (fit_may_return), in the stage's first mode
    // (its fastest) whether it fits or not; elsewhere in the mode chosen.
    // Set for layer lists only.
    double reach_compute_s = 0;
    // Where tails_vary() only: the later fitting modes whose tail is below
    // this one's (a mode no faster that hides no more sync cannot help).
    std::vector<Option> leaner;

    // Its options: 0 the fastest mode itself, then the leaner ones.
    int options() const { return 1 + static_cast<int>(leaner.size()); }
    const Option& option(int k) const { return k == 0 ? *this : leaner[static_cast<std::size_t>(k - 1)]; }
  };

  // `memory` is read only when choice.must_fit (layer capacities of
  // identical layers skip hopeless modes); `cache` may be null; every
  // stage estimate computed is counted in `estimates`.
  StageCostTable(const CostModel& cost, const MemoryPruner* memory, LatencyCache* cache,
                 std::atomic<std::int64_t>& estimates, const Skeleton& skeleton, bool identical,
                 RecomputeChoice choice, int vpp = 1);

  int layers() const { return layers_; }
  int stages() const { return stages_; }
  int micro_batches() const { return micro_batches_; }
  bool identical() const { return identical_; }
  int vpp() const { return vpp_; }
  const Skeleton& skeleton() const { return skeleton_; }
  // Whether a stage's tail may shrink as its layers or its backward grow
  // (the training's overlap_grad_reduce with a must-fit choice): the split
  // search then filters ranges by tail instead of growing a reach over it,
  // and tries each range's leaner modes.
  bool tails_vary() const { return tails_vary_; }
  // The fewest layers a stage may hold: one per chunk.
  int min_layers() const { return vpp_; }
  // Stage i starts at >= i and ends at <= last_end(i): every stage keeps a layer.
  int last_end(int i) const { return layers_ - (stages_ - 1 - i); }
  // Whether a range that does not fit may still fit with more layers on
  // stage i (CostModel::memory_grows_with_range; a must-fit table only).
  bool fit_may_return(int i) const { return !most_layers_.empty() && most_layers_[i] >= 0; }
  // Where it may, the most layers a range of stage i can hold and fit: its
  // longest range that fits in the leanest mode
  // (MemoryPruner::max_layers_leanest), which bounds the ranges a split
  // passes over (threshold_split.hpp).
  int most_layers(int i) const { return most_layers_[i]; }

  // Stage i on layers [begin, end).
  const Choice& at(int i, int begin, int end);
  // The cost model's iteration time of a split (end layer per stage) in its
  // fastest modes: each range's Choice, or where tails vary the mix of each
  // range's options that minimizes it (exact: see pick_options); infinity
  // when a stage's range is infeasible.
  double iteration_time(const std::vector<int>& layer_end);
  // Per stage, the recompute mode of that fastest pricing.
  std::vector<Recompute> recompute_of(const std::vector<int>& layer_end);

 private:
  Choice compute(int i, int n, int begin, int end);
  // The least iteration time of the split over its ranges' options; the
  // option taken per stage is left in picks_ (index 0: the Choice itself).
  double pick_options(const std::vector<int>& layer_end);
  StageEntry estimate(int i, int begin, int end, Recompute recompute);
  StageKey key(int i, int begin, int end, Recompute recompute) const;

  const CostModel& cost_;
  LatencyCache* cache_;
  std::atomic<std::int64_t>& estimates_;
  const Skeleton& skeleton_;
  RecomputeChoice choice_;
  bool identical_;
  bool tails_vary_;
  int layers_, stages_, micro_batches_, vpp_;
  Plan scratch_;
  std::vector<StageEstimate> split_estimates_;          // scratch of iteration_time
  std::vector<const Choice*> split_choices_;            // scratch of pick_options
  std::vector<double> split_tails_;                     // scratch of pick_options
  std::vector<int> picks_, trial_picks_;                // pick_options' result, its scratch
  std::vector<std::vector<Choice>> by_count_;           // identical: [stage][layers]
  std::vector<std::vector<int>> capacity_;              // identical, must fit: [stage][mode]
  std::vector<int> most_layers_;                        // must fit: [stage], -1 where memory grows with the range
  std::unordered_map<std::uint64_t, Choice> by_range_;  // otherwise: (stage, begin, end)
};

}  // namespace autohaap
