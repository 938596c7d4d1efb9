#include "autohaap/search/memory_pruning.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "autohaap/search/parallel.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/units.hpp"

namespace autohaap {
namespace {

struct RuleText {
  const char* name;
  const char* description;
};
constexpr std::array<RuleText, kPruneRuleCount> kRules = {{
    {"micro_batch_not_dividing_batch", "micro-batch size does not divide the global batch"},
    {"tp_exceeds_node", "tensor parallelism does not divide the GPUs of a node"},
    {"tp_not_dividing_heads",
     "tensor parallelism does not divide the attention (or key/value) heads or the MLP width (or, under sequence "
     "parallelism, a sequence's tokens), or is above 1 on a generic layer-list model"},
    {"dp_not_dividing_micro_batch",
     "a stage's data parallelism does not divide the micro-batch, and no context parallelism makes it"},
    {"not_profiled", "--profiles-only: the profiles do not measure a layer on this device, tp and micro-batch"},
    {"not_runnable", "--runnable megatron: stages differ in tp or dp, or mix FP8 and non-FP8 devices in fp8"},
    {"more_stages_than_layers", "more pipeline stages than layers"},
    {"stage_cannot_hold_one_layer", "a stage cannot hold one layer, even with the leanest recompute"},
    {"capacity_below_layers", "the stages together cannot hold all layers"},
    {"lower_bound_above_best", "lower bound on iteration time above the best plan found"},
    {"no_feasible_split", "no layer split fits every stage's memory"},
    {"beyond_skeleton_limit",
     "lower bound above the --max-skeletons best skeletons kept; the proven gap covers them"},
}};

// Rank of the first structural rule a group layout breaks; kNone if none.
constexpr int kNone = kPruneRuleCount;
int layout_rank(const Problem& problem, const GroupLayout& layout, int micro_batch) {
  const auto rule = layout_rule(problem, layout, micro_batch);
  return rule ? static_cast<int>(*rule) : kNone;
}

std::vector<Recompute> allowed_modes(const TrainingSpec& training) {
  return training.recompute_modes.empty() ? std::vector<Recompute>{Recompute::none} : training.recompute_modes;
}

}  // namespace

std::optional<PruneRule> layout_rule(const Problem& problem, const GroupLayout& layout, int micro_batch) {
  // The layout's context parallelism is the least that lets its replicas
  // divide B, where the model allows one (stage_degrees): so the cp rule
  // holds, and a layout none can save breaks the dp rule.
  const auto rule = broken_stage_rule(problem.model, problem.seq_len(), problem.training.sequence_parallel,
                                      &problem.cluster.groups[layout.group],
                                      stage_degrees(problem, layout.group, layout.tp, layout.dp, micro_batch), micro_batch);
  if (!rule) {
    const DeviceSpec& device = problem.cluster.groups[layout.group].device;
    if (problem.profiles_only &&
        !problem.profiles.measures_layer(device.name, layout.tp, micro_batch / layout.dp, problem.seq_len()))
      return PruneRule::not_profiled;
    return std::nullopt;
  }
  switch (*rule) {
    case StageRule::tp_exceeds_node:
      return PruneRule::tp_exceeds_node;
    case StageRule::tp_not_dividing_heads:
    case StageRule::tp_not_splitting_sequence:
      return PruneRule::tp_not_dividing_heads;
    case StageRule::dp_not_dividing_micro_batch:
      return PruneRule::dp_not_dividing_micro_batch;
    case StageRule::cp_not_splitting_sequence:
      break;
  }
  throw std::logic_error(std::string("layout_rule: no prune rule counts stage rule ") + stage_field(*rule));
}

bool megatron_compatible(const Problem& problem, const GroupLayout& a, const GroupLayout& b) {
  return a.gpus_per_stage == b.gpus_per_stage && a.tp == b.tp &&
         megatron_shares_precision(problem.training.precision, problem.cluster.groups[a.group].device,
                                   problem.cluster.groups[b.group].device);
}

const char* to_string(PruneRule rule) { return kRules[static_cast<int>(rule)].name; }
const char* describe(PruneRule rule) { return kRules[static_cast<int>(rule)].description; }

std::int64_t PruneReport::removed_initially() const {
  std::int64_t n = 0;
  for (int r = 0; r <= static_cast<int>(PruneRule::capacity_below_layers); ++r) n += removed[r];
  return n;
}

std::int64_t PruneReport::skipped_in_search() const {
  return count(PruneRule::lower_bound_above_best) + count(PruneRule::no_feasible_split) +
         count(PruneRule::beyond_skeleton_limit);
}

void PruneReport::merge(const PruneReport& other) {
  for (int r = 0; r < kPruneRuleCount; ++r) removed[r] += other.removed[r];
}

std::vector<std::pair<std::string, std::int64_t>> PruneReport::rows() const {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (int r = 0; r < kPruneRuleCount; ++r) out.emplace_back(kRules[r].name, removed[r]);
  return out;
}

// ---------------------------------------------------------------------------

namespace {
struct CapacityKey {
  int group, tp, dp, micro_batch, recompute, first, last, in_flight;
  bool operator==(const CapacityKey&) const = default;
};
struct CapacityHash {
  std::size_t operator()(const CapacityKey& k) const {
    std::size_t h = 1469598103934665603ULL;
    for (int v : {k.group, k.tp, k.dp, k.micro_batch, k.recompute, k.first, k.last, k.in_flight}) {
      h = (h ^ static_cast<std::size_t>(static_cast<unsigned>(v))) * 1099511628211ULL;
    }
    return h;
  }
};
}  // namespace

// The capacities, shared by all threads, with a small direct-mapped copy
// per thread in front: the skeleton walk asks for the same few thousand
// keys millions of times, and a shared lookup takes a bucket lock each
// time (it was half the walk's time on four node groups). A thread's copy
// is tagged with the memo's serial number, never its address (a later
// pruner may reuse it), so it never answers for another problem; values
// are deterministic, so which thread computed one does not matter.
struct MemoryPruner::Memo {
  parallel::ConcurrentMap<CapacityKey, int, CapacityHash> capacity;
  std::uint64_t serial = next_serial();

  static std::uint64_t next_serial() {
    static std::atomic<std::uint64_t> counter{0};
    return ++counter;
  }

  std::optional<int> find(const CapacityKey& key) const {
    Slot& slot = local_slot(key);
    if (slot.serial == serial && slot.key == key) return slot.value;
    std::optional<int> found = capacity.find(key);
    if (found) slot = {serial, key, *found};
    return found;
  }
  void insert(const CapacityKey& key, int value) {
    capacity.insert(key, value);
    local_slot(key) = {serial, key, value};
  }

 private:
  struct Slot {
    std::uint64_t serial = 0;  // 0: empty
    CapacityKey key{};
    int value = 0;
  };
  static constexpr std::size_t kLocalSlots = 1 << 14;
  static Slot& local_slot(const CapacityKey& key) {
    thread_local std::vector<Slot> slots(kLocalSlots);
    return slots[CapacityHash{}(key) & (kLocalSlots - 1)];
  }
};

MemoryPruner::MemoryPruner(const CostModel& cost) : cost_(cost), memo_(std::make_unique<Memo>()) {}
MemoryPruner::~MemoryPruner() = default;

int MemoryPruner::max_layers(const StageSlot& slot, Recompute recompute, int micro_batch, int stage_index,
                             int num_stages, int num_micro_batches) const {
  const bool first = stage_index == 0;
  const bool last = stage_index == num_stages - 1;
  const int in_flight = CostModel::in_flight(stage_index, num_stages, num_micro_batches);
  // Memory depends on the position only through the edges and the
  // micro-batches in flight (DESIGN.md "Memory per GPU"), so the memo key
  // drops the stage index.
  const CapacityKey key{slot.group, slot.tp, slot.dp, micro_batch, static_cast<int>(recompute), first, last, in_flight};
  if (auto found = memo_->find(key)) return *found;

  const StageDegrees d = stage_degrees(cost_.problem(), slot, micro_batch);
  const StageShape shape{slot.group, d.tp, d.dp, recompute, d.cp};
  const int layers = cost_.problem().model.layers;
  const double capacity = cost_.capacity_bytes(slot.group);
  auto fits = [&](int begin, int end) {
    return cost_.stage_memory(shape, micro_batch, begin, end, stage_index, num_stages, num_micro_batches).total() <=
           capacity;
  };
  int result = 0;
  if (cost_.memory_grows_with_range(stage_index, num_stages)) {
    // Largest n in [0, layers] whose range(n) fits; memory grows with n.
    auto largest = [&](auto range) {
      auto ok = [&](int n) {
        const auto [begin, end] = range(n);
        return fits(begin, end);
      };
      if (!ok(1)) return 0;
      int lo = 1, hi = layers;  // ok(lo) holds
      while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (ok(mid))
          lo = mid;
        else
          hi = mid - 1;
      }
      return lo;
    };
    // Identical layers: the position is in the key, not the range.
    const bool identical = cost_.problem().model.family != ModelFamily::generic;
    if (first || identical) {
      result = largest([](int n) { return std::pair{0, n}; });
    } else if (last) {
      result = largest([layers](int n) { return std::pair{layers - n, layers}; });
    } else {
      // Longest window anywhere: two pointers, each window grown while it fits.
      int begin = 0;
      for (int end = 1; end <= layers; ++end) {
        while (begin < end && !fits(begin, end)) ++begin;
        result = std::max(result, end - begin);
      }
    }
  } else {
    // A layer list's sending stage under DeepSpeed
    // (CostModel::memory_grows_with_range): a range ending on a narrower
    // output can fit where a shorter one does not, but for a fixed end the
    // memory still grows as the range starts earlier. Per end, the
    // earliest start that fits, by bisection (the first stage starts at 0).
    for (int end = 1; end <= layers; ++end) {
      if (first) {
        if (fits(0, end)) result = end;
        continue;
      }
      if (!fits(end - 1, end)) continue;
      int lo = 0, hi = end - 1;  // fits(hi, end) holds
      while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (fits(mid, end))
          hi = mid;
        else
          lo = mid + 1;
      }
      result = std::max(result, end - lo);
    }
  }
  memo_->insert(key, result);
  return result;
}

int MemoryPruner::max_layers_leanest(const StageSlot& slot, int micro_batch, int stage_index, int num_stages,
                                     int num_micro_batches) const {
  // Memoized under recompute -1 ("the leanest allowed"): the skeleton walk
  // asks this for every stage of every skeleton, so one lookup instead of
  // one per mode.
  const CapacityKey key{slot.group,
                        slot.tp,
                        slot.dp,
                        micro_batch,
                        -1,
                        stage_index == 0,
                        stage_index == num_stages - 1,
                        static_cast<int>(CostModel::in_flight(stage_index, num_stages, num_micro_batches))};
  if (auto found = memo_->find(key)) return *found;
  int best = 0;
  for (Recompute r : allowed_modes(cost_.problem().training)) {
    best = std::max(best, max_layers(slot, r, micro_batch, stage_index, num_stages, num_micro_batches));
  }
  memo_->insert(key, best);
  return best;
}

int MemoryPruner::max_layers_anywhere(const StageSlot& slot, Recompute recompute, int micro_batch) const {
  return std::max(max_layers(slot, recompute, micro_batch, 1, 3, 1), max_layers(slot, recompute, micro_batch, 0, 1, 1));
}

int MemoryPruner::max_layers_anywhere_leanest(const StageSlot& slot, int micro_batch) const {
  return std::max(max_layers_leanest(slot, micro_batch, 1, 3, 1), max_layers_leanest(slot, micro_batch, 0, 1, 1));
}

int MemoryPruner::max_layers_in_flight_leanest(const StageSlot& slot, int micro_batch, int in_flight) const {
  // Stage 1 of in_flight + 2 with in_flight micro-batches: neither first
  // nor last, min(in_flight + 1, in_flight) in flight.
  return max_layers_leanest(slot, micro_batch, 1, in_flight + 2, in_flight);
}

int MemoryPruner::max_layers_in_flight(const StageSlot& slot, Recompute recompute, int micro_batch,
                                       int in_flight) const {
  return max_layers(slot, recompute, micro_batch, 1, in_flight + 2, in_flight);
}

std::vector<int> MemoryPruner::capacities(const Skeleton& skeleton) const {
  const int m = num_micro_batches(cost_.problem(), skeleton);
  const int p = skeleton.num_stages();
  std::vector<int> caps(p);
  for (int i = 0; i < p; ++i) caps[i] = max_layers_leanest(skeleton.stages[i], skeleton.micro_batch, i, p, m);
  return caps;
}

std::optional<PruneRule> MemoryPruner::check(const Skeleton& skeleton) const {
  const int m = num_micro_batches(cost_.problem(), skeleton);
  const int p = skeleton.num_stages();
  long long total = 0;
  for (int i = 0; i < p; ++i) {
    const int cap = max_layers_leanest(skeleton.stages[i], skeleton.micro_batch, i, p, m);
    if (cap == 0) return PruneRule::stage_cannot_hold_one_layer;
    total += cap;
  }
  if (total < cost_.problem().model.layers) return PruneRule::capacity_below_layers;
  return std::nullopt;
}

// ---------------------------------------------------------------------------

struct LayoutRules::Rows {
  std::size_t num_b = 0;
  std::unique_ptr<std::once_flag[]> filled;  // per (group, B)
  std::vector<std::vector<int>> rank;        // per (group, B): per layout, layout_rank
};

LayoutRules::LayoutRules(const SearchSpace& space) : space_(space), rows_(std::make_unique<Rows>()) {
  const std::size_t rows = space.problem().cluster.groups.size() * space.micro_batches().size();
  rows_->num_b = space.micro_batches().size();
  rows_->filled = std::make_unique<std::once_flag[]>(rows);
  rows_->rank.resize(rows);
}

LayoutRules::~LayoutRules() = default;

std::optional<PruneRule> LayoutRules::rule(int group, int layout_index, int micro_batch_index) const {
  const std::size_t row = static_cast<std::size_t>(group) * rows_->num_b + static_cast<std::size_t>(micro_batch_index);
  std::call_once(rows_->filled[row], [&] {
    const int micro_batch = space_.micro_batches()[micro_batch_index];
    std::vector<int>& rank = rows_->rank[row];
    for (const GroupLayout& layout : space_.layouts(group))
      rank.push_back(layout_rank(space_.problem(), layout, micro_batch));
  });
  const int r = rows_->rank[row][static_cast<std::size_t>(layout_index)];
  return r == kNone ? std::nullopt : std::optional<PruneRule>(static_cast<PruneRule>(r));
}

std::vector<std::vector<int>> structural_layouts(const SearchSpace& space, int order_index, int micro_batch_index,
                                                 PruneReport& report, const LayoutRules* rules) {
  const Problem& problem = space.problem();
  const auto& order = space.group_orders()[order_index];
  const int micro_batch = space.micro_batches()[micro_batch_index];
  std::vector<std::vector<int>> ok(order.size());
  if (problem.training.global_batch % micro_batch != 0) {
    const std::int64_t combos = static_cast<std::int64_t>(std::min<std::uint64_t>(
        space.combinations(order_index), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    report.add(PruneRule::micro_batch_not_dividing_batch, combos);
    return ok;
  }
  // Per group: the rule each raw layout breaks. A skeleton is counted under
  // the earliest rule any of its groups breaks: with N_g(r) the layouts of
  // group g breaking no rule before r, rule r removes prod N_g(r) -
  // prod N_g(r+1) skeletons.
  std::vector<std::array<std::int64_t, kNone + 1>> at_least(order.size());
  for (std::size_t j = 0; j < order.size(); ++j) {
    const auto& layouts = space.layouts(order[j]);
    at_least[j].fill(0);
    for (int li = 0; li < static_cast<int>(layouts.size()); ++li) {
      int rule = kNone;
      if (rules) {
        if (const auto r = rules->rule(order[j], li, micro_batch_index)) rule = static_cast<int>(*r);
      } else {
        rule = layout_rank(problem, layouts[li], micro_batch);
      }
      for (int r = 0; r <= rule; ++r) ++at_least[j][r];
      if (rule == kNone) ok[j].push_back(li);
    }
  }
  for (int r = static_cast<int>(PruneRule::tp_exceeds_node); r <= static_cast<int>(PruneRule::not_profiled); ++r) {
    std::int64_t with_r = 1, after_r = 1;
    for (std::size_t j = 0; j < order.size(); ++j) {
      with_r *= at_least[j][r];
      after_r *= at_least[j][r + 1];
    }
    report.add(static_cast<PruneRule>(r), with_r - after_r);
  }
  return ok;
}

void fix_leading_layouts(std::vector<std::vector<int>>& ok, const std::vector<int>& fixed) {
  for (std::size_t j = 0; j < fixed.size() && j < ok.size(); ++j) {
    const bool kept = std::binary_search(ok[j].begin(), ok[j].end(), fixed[j]);
    ok[j].clear();
    if (kept) ok[j].push_back(fixed[j]);
  }
}

std::optional<bool> walks_arrangements(const std::vector<int>& order) {
  if (order.size() < 4) return std::nullopt;
  return std::is_sorted(order.begin() + 1, order.end() - 1);
}

bool enumerate_skeletons(const SearchSpace& space, const MemoryPruner* memory, int order_index, int micro_batch_index,
                         PruneReport& report, const SkeletonWalk& walk) {
  const int layers = space.problem().model.layers;
  const auto& order = space.group_orders()[order_index];
  const int n = static_cast<int>(order.size());
  PruneReport uncounted;
  std::vector<std::vector<int>> ok = structural_layouts(space, order_index, micro_batch_index,
                                                       walk.counts_structure ? report : uncounted, walk.rules);
  fix_leading_layouts(ok, walk.fixed_layouts);
  for (const auto& list : ok) {
    if (list.empty()) return true;
  }
  // The orders this walk stands for (SkeletonWalk::arrangements), each with
  // the position in `order` of the group at each of its positions: this
  // order alone, or every arrangement of its ascending middle.
  struct Arrangement {
    int order_index;
    std::vector<int> from;
  };
  std::vector<Arrangement> arrangements;
  const std::optional<bool> walks = walk.arrangements ? walks_arrangements(order) : std::nullopt;
  if (walks == false) return true;
  if (walks == true) {
    std::vector<int> arranged = order;
    do {
      // Halves keep their order (search_space.hpp): not every arrangement
      // is in the space, and the ascending one is whenever any is.
      const std::optional<int> index = space.order_index(arranged);
      if (!index) continue;
      Arrangement a{*index, std::vector<int>(n)};
      for (int j = 0; j < n; ++j)
        a.from[j] = static_cast<int>(std::find(order.begin(), order.end(), arranged[j]) - order.begin());
      arrangements.push_back(std::move(a));
    } while (std::next_permutation(arranged.begin() + 1, arranged.end() - 1));
  } else {
    Arrangement alone{order_index, std::vector<int>(n)};
    for (int j = 0; j < n; ++j) alone.from[j] = j;
    arrangements.push_back(std::move(alone));
  }
  const std::int64_t orders_walked = static_cast<std::int64_t>(arrangements.size());
  auto saturate = [](long double v) {
    return v > static_cast<long double>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(v);
  };
  // below[j]: skeletons under one choice at position j, over every order
  // walked (saturating).
  std::vector<std::int64_t> below(n, orders_walked);
  for (int j = n - 2; j >= 0; --j)
    below[j] = saturate(static_cast<long double>(below[j + 1]) * static_cast<long double>(ok[j + 1].size()));
  std::vector<int> arranged_layouts(n);
  // Depth-first over the positions, last position fastest: the mixed-radix
  // (id) order, with whole subtrees skipped when a prefix cannot win.
  std::vector<int> digit(n, 0), layout_index(n), stages_before(n + 1, 0);
  std::int64_t visited = 0, next_poll = 4096;
  // Megatron-runnable: every group's stages as large, with the same tp, as
  // the first group's (one tp and dp for the whole pipeline).
  const bool one_shape = uniform_stages_required(space.problem().runnable_by);
  auto same_shape = [&](int depth) {
    return megatron_compatible(space.problem(), space.layouts(order[0])[layout_index[0]],
                               space.layouts(order[depth])[layout_index[depth]]);
  };
  int j = 0;
  while (true) {
    layout_index[j] = ok[j][digit[j]];
    stages_before[j + 1] = stages_before[j] + space.layouts(order[j])[layout_index[j]].stages;
    if (one_shape && j > 0 && !same_shape(j)) {
      report.add(PruneRule::not_runnable, below[j]);
    } else if (walk.keep_prefix && !walk.keep_prefix(j, layout_index)) {
      report.add(PruneRule::lower_bound_above_best, below[j]);
    } else if (j + 1 < n) {
      ++j;
      digit[j] = 0;
      continue;
    } else if (stages_before[n] > layers) {
      report.add(PruneRule::more_stages_than_layers, orders_walked);
    } else {
      // The arrangements come in lexicographic order of their middles, so
      // those that place the same first t middle groups follow each other:
      // one that shares a placement keep_arrangement refused is skipped,
      // and the placements it shares with the one before it that passed
      // are not asked again. ok_depth: how many of the previous
      // arrangement's placements passed; cut_depth: the one refused (none:
      // past the middle).
      const int middle = n - 2;
      // The stages of the layout at position k of `order`.
      auto stages_of = [&](int k) { return space.layouts(order[k])[layout_index[k]].stages; };
      int ok_depth = 0, cut_depth = n;
      const Arrangement* previous = nullptr;
      for (const Arrangement& a : arrangements) {
        int shared = 0;  // middle groups placed as in the previous arrangement
        if (previous)
          while (shared < middle && a.from[shared + 1] == previous->from[shared + 1]) ++shared;
        previous = &a;
        if (cut_depth <= shared) {
          report.add(PruneRule::lower_bound_above_best, 1);
          continue;
        }
        for (int k = 0; k < n; ++k) arranged_layouts[k] = layout_index[a.from[k]];
        Skeleton s = space.make(a.order_index, micro_batch_index, arranged_layouts);
        if (walk.keep_arrangement) {
          // Placing t middle groups leaves the rest loose: from the stage
          // after the t-th to the last group's first.
          const int loose_end = s.num_stages() - stages_of(n - 1);
          int loose_begin = stages_of(0);
          for (int t = 1; t <= std::min(ok_depth, shared); ++t) loose_begin += stages_of(a.from[t]);
          ok_depth = std::min(ok_depth, shared);
          cut_depth = n;
          // A placement of t groups stands for (middle - t)! arrangements
          // at most: the last ones, of fewer than six, are left to each
          // arrangement's own bound (visit), which costs about what asking
          // for them would.
          for (int t = ok_depth + 1; t <= middle - 3; ++t) {
            loose_begin += stages_of(a.from[t]);
            if (!walk.keep_arrangement(s, loose_begin, loose_end)) {
              cut_depth = t;
              break;
            }
            ok_depth = t;
          }
          if (cut_depth < n) {
            report.add(PruneRule::lower_bound_above_best, 1);
            continue;
          }
        }
        std::optional<PruneRule> broken = memory ? memory->check(s) : std::nullopt;
        if (broken)
          report.add(*broken, 1);
        else if (walk.visit)
          walk.visit(std::move(s));
      }
    }
    if (j + 1 == n) {
      visited += orders_walked;
      if (walk.stop && visited >= next_poll) {
        next_poll = visited + 4096;
        if (walk.stop()) return false;
      }
    }
    // Next choice at this depth, climbing while a position is exhausted.
    while (j >= 0 && ++digit[j] == static_cast<int>(ok[j].size())) --j;
    if (j < 0) return true;
  }
}

void stream_structural_skeletons(const SearchSpace& space, const std::function<void(Skeleton&&)>& visit,
                                 const std::function<bool()>& stop) {
  const int num_b = static_cast<int>(space.micro_batches().size());
  SkeletonWalk walk;
  walk.visit = visit;
  walk.stop = stop;
  for (std::size_t task = 0; task < space.group_orders().size() * num_b && !stop(); ++task) {
    PruneReport scratch;
    enumerate_skeletons(space, nullptr, static_cast<int>(task / num_b), static_cast<int>(task % num_b), scratch, walk);
  }
}

SkeletonList initialize_skeletons(const SearchSpace& space, const MemoryPruner* memory) {
  const auto& orders = space.group_orders();
  const int num_b = static_cast<int>(space.micro_batches().size());

  // One task per (group order, B); results concatenated in canonical order,
  // so the list does not depend on scheduling.
  struct Part {
    std::vector<Skeleton> kept;
    PruneReport report;
  };
  std::vector<Part> parts(orders.size() * static_cast<std::size_t>(num_b));
  parallel::for_each(parts.size(), [&](std::size_t task) {
    Part& part = parts[task];
    SkeletonWalk walk;
    walk.visit = [&](Skeleton&& s) { part.kept.push_back(std::move(s)); };
    enumerate_skeletons(space, memory, static_cast<int>(task / num_b), static_cast<int>(task % num_b), part.report,
                        walk);
  });

  SkeletonList list;
  list.report.considered = static_cast<std::int64_t>(
      std::min<std::uint64_t>(space.raw_size(), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
  for (auto& part : parts) {
    list.report.merge(part.report);
    for (auto& s : part.kept) list.skeletons.push_back(std::move(s));
  }
  list.report.kept = static_cast<std::int64_t>(list.skeletons.size());
  return list;
}

// ---------------------------------------------------------------------------

StaticStateFloor static_state_floor(const CostModel& cost) {
  // Weights, gradients and optimizer states of the whole model with no
  // data parallelism (ZeRO cannot shard anything then, and replicas only add
  // copies), spread evenly over every GPU of the cluster: no plan can need
  // less static memory on its fullest GPU.
  const Problem& problem = cost.problem();
  const StageShape lean{0, 1, 1, Recompute::full};
  double static_bytes = cost.edge_memory(lean, 1, true, true).static_bytes;
  for (int l = 0; l < problem.model.layers; ++l) static_bytes += cost.layer_memory(lean, 1, l).static_bytes;
  StaticStateFloor out;
  for (int g = 1; g < static_cast<int>(problem.cluster.groups.size()); ++g) {
    if (cost.capacity_bytes(g) > cost.capacity_bytes(out.largest_group)) out.largest_group = g;
  }
  out.need_GiB = static_bytes / std::max(1, problem.cluster.total_gpus()) / kGiB + problem.training.headroom_GiB;
  out.largest_GiB = cost.capacity_bytes(out.largest_group) / kGiB;
  return out;
}

std::string infeasible_reason(const CostModel& cost, const PruneReport& report) {
  const Problem& problem = cost.problem();
  char buffer[640];
  if (report.considered == 0) {
    return "the search space is empty: the cluster has no usable GPUs or no micro-batch size was given";
  }
  // Structural rules only narrow the layouts; if any layout survived them,
  // memory is what ruled it out. So memory explains the failure whenever a
  // memory rule removed anything; otherwise the largest structural rule does.
  auto largest_of = [&](std::initializer_list<PruneRule> rules) {
    PruneRule best = *rules.begin();
    for (PruneRule r : rules) {
      if (report.count(r) > report.count(best)) best = r;
    }
    return best;
  };
  const PruneRule memory_rule = largest_of(
      {PruneRule::stage_cannot_hold_one_layer, PruneRule::capacity_below_layers, PruneRule::no_feasible_split});
  if (report.count(memory_rule) == 0) {
    const std::initializer_list<PruneRule> structural = {
        PruneRule::micro_batch_not_dividing_batch, PruneRule::tp_exceeds_node,   PruneRule::tp_not_dividing_heads,
        PruneRule::dp_not_dividing_micro_batch,    PruneRule::not_profiled,      PruneRule::not_runnable,
        PruneRule::more_stages_than_layers};
    const PruneRule rule = largest_of(structural);
    std::snprintf(buffer, sizeof buffer, "no valid plan: %lld of %lld candidate skeletons removed because %s (%s)",
                  static_cast<long long>(report.count(rule)), static_cast<long long>(report.considered), describe(rule),
                  to_string(rule));
    // Every skeleton broke some rule: where the largest is not all of them,
    // the others say what else would have to change (a node size that
    // splits into no stage breaks several at once).
    std::vector<PruneRule> others;
    for (PruneRule r : structural)
      if (r != rule && report.count(r) > 0) others.push_back(r);
    std::stable_sort(others.begin(), others.end(),
                     [&](PruneRule a, PruneRule b) { return report.count(a) > report.count(b); });
    std::string reason = buffer;
    for (std::size_t i = 0; i < others.size(); ++i)
      reason += (i == 0 ? "; the others: " : ", ") + std::string(to_string(others[i])) + " " +
                std::to_string(report.count(others[i]));
    return reason;
  }
  const PruneRule rule = memory_rule;
  const int top = static_cast<int>(rule);
  const ModelSpec& model = problem.model;
  const StaticStateFloor floor = static_state_floor(cost);
  const int gpus = problem.cluster.total_gpus();
  const double need = floor.need_GiB, have = floor.largest_GiB;
  const char* device = problem.cluster.groups[floor.largest_group].device.name.c_str();
  if (need > have) {
    std::snprintf(buffer, sizeof buffer,
                  "%s does not fit: its weights, gradients and optimizer states alone need %.1f GiB per GPU even "
                  "spread evenly over all %d GPUs (headroom included, activations not), but the largest device (%s) "
                  "has %.1f GiB",
                  model.name.c_str(), need, gpus, device, have);
  } else {
    std::snprintf(buffer, sizeof buffer,
                  "%s does not fit any allowed layout: spread evenly over all %d GPUs its weights, gradients and "
                  "optimizer states would need %.1f GiB per GPU (the largest device, %s, has %.1f GiB), but whole "
                  "layers per stage plus the activations of the micro-batches in flight exceed some stage's memory "
                  "in every candidate (%lld skeletons: %s)",
                  model.name.c_str(), gpus, need, device, have, static_cast<long long>(report.removed[top]),
                  describe(rule));
  }
  return buffer;
}

}  // namespace autohaap
