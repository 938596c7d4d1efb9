#include "autohaap/search/search_space.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "autohaap/error.hpp"

namespace autohaap {
namespace {

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSaturated / b ? kSaturated : a * b;
}
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

// The most GPUs of one group a plan can use without context parallelism:
// every layer its own stage (at most max_pipeline_stages), the largest tp
// the model and the node allow (the stage rules: a divisor of the node's
// GPUs, the heads and the MLP width; 1 on a layer list), and as many
// replicas as a micro-batch has sequences (the largest B listed; with
// micro_batch_per_replica, the global batch). Context parallelism is left
// out: past this size a group also offers a smaller prefix, an extra choice
// that never loses a plan. With tp a whole node whatever the model, a
// 4-layer list on 8 nodes of 8 GPUs, or a GPT of odd sequence length (no
// cp) on 64 nodes, was offered only the whole group, more than any plan
// fills, and had no plan where fewer nodes had one.
long long most_useful_gpus(const Problem& problem, const NodeGroup& g) {
  const TrainingSpec& t = problem.training;
  long long replicas = t.global_batch;
  if (!t.micro_batch_per_replica && !t.micro_batch_sizes.empty())
    replicas = *std::max_element(t.micro_batch_sizes.begin(), t.micro_batch_sizes.end());
  int tp = 1;
  for (int d = 1; d <= g.gpus_per_node; ++d)
    if (!broken_stage_rule(problem.model, problem.seq_len(), problem.training.sequence_parallel, &g,
                           StageDegrees{d, 1, 1}, 1)) tp = d;
  const long long stages = std::max(1, std::min(problem.model.layers, max_pipeline_stages(problem)));
  return stages * tp * std::max(1LL, replicas);
}

// Every way to cut `total` GPUs of a group into equal stages of (tp, dp),
// appended to `out`: stage sizes that divide a node or are whole nodes
// (and divide a part of a merged group).
void append_layouts(int group, const NodeGroup& g, int total, std::vector<GroupLayout>& out) {
  const int part = g.part_gpus();
  for (int k = 1; k <= total; ++k) {
    if (total % k != 0) continue;
    const int size = total / k;
    if ((g.parts > 1 && part % size != 0) || !valid_stage_size(size, g.gpus_per_node)) continue;
    for (int tp = 1; tp <= size; ++tp) {
      if (size % tp != 0) continue;
      out.push_back({group, k, size, tp, size / tp});
    }
  }
}

// Whether `total` GPUs of the group make at least one layout that breaks no
// structural rule (the stage rules of parallel_rules.hpp, at some
// micro-batch size B the search tries, with the least cp that lets its
// replicas divide B, as layout_rule has it; no more stages than layers).
bool offers_a_runnable_layout(const Problem& problem, int group, const NodeGroup& g, int total) {
  std::vector<GroupLayout> layouts;
  append_layouts(group, g, total, layouts);
  const TrainingSpec& t = problem.training;
  const int most_stages = std::max(1, std::min(problem.model.layers, max_pipeline_stages(problem)));
  for (const GroupLayout& l : layouts) {
    if (l.stages > most_stages) continue;
    for (const int b : t.micro_batch_sizes) {
      // Per replica, a pipeline micro-batch is b sequences on each of the
      // stage's dp replicas (searched_micro_batches).
      const long long B = t.micro_batch_per_replica ? static_cast<long long>(b) * l.dp : b;
      if (B < 1 || B > t.global_batch || t.global_batch % B != 0) continue;
      const int micro_batch = static_cast<int>(B);
      if (!broken_stage_rule(problem.model, problem.seq_len(), problem.training.sequence_parallel, &g,
                             stage_degrees(problem, group, l.tp, l.dp, micro_batch), micro_batch))
        return true;
    }
  }
  return false;
}

// A group of several parts (a merged group, NodeGroup::parts) is used
// whole parts at a time, its first `used` ones, and a stage never crosses a
// part: the stage size divides a part.
// A group of one part is used whole, and also by its first 2^j nodes for
// the largest such count that is below its node count and within what a
// plan can use, when the group itself is not a power-of-two node count, is
// larger than any plan can use, or makes no layout the stage rules allow;
// that prefix is halved while it makes none either. Why: a group whose
// size does not factor into (stages, tp, dp) the batch allows (171 nodes
// of 8 GPUs: 1368 = 2^3 * 3^2 * 19; 2 nodes of 7 GPUs for a 12-layer model,
// whose stages of 1 GPU are too many and of 7 have dp 7) had no plan at
// all where fewer of its nodes had one, and one larger than the batch can
// feed made more GPUs give a slower plan; one extra size per group keeps
// the space (and the search time) within 2^groups of the whole-group one.
std::vector<GroupLayout> raw_layouts(const Problem& problem, int group, const NodeGroup& g) {
  std::vector<int> totals;  // GPUs used, ascending
  if (g.parts > 1) {
    for (int used = 1; used <= g.parts; ++used) totals.push_back(used * g.part_gpus());
  } else {
    const long long most = most_useful_gpus(problem, g);
    const bool power_of_two = (g.nodes & (g.nodes - 1)) == 0;
    if (!power_of_two || g.gpus() > most || !offers_a_runnable_layout(problem, group, g, g.gpus())) {
      long long nodes = 1;
      while (nodes * 2 < g.nodes && nodes * 2 * g.gpus_per_node <= most) nodes *= 2;
      while (nodes > 1 && !offers_a_runnable_layout(problem, group, g, static_cast<int>(nodes) * g.gpus_per_node))
        nodes /= 2;
      if (nodes < g.nodes && nodes * g.gpus_per_node <= most) totals.push_back(static_cast<int>(nodes) * g.gpus_per_node);
    }
    totals.push_back(g.gpus());
  }
  std::vector<GroupLayout> out;
  for (const int total : totals) append_layouts(group, g, total, out);
  return out;
}

// How much of each group a small space offers besides raw_layouts' sizes.
enum class Shares {
  every,         // its first node's first 1, 2, 3, ... GPUs and its first 2, 3, ... nodes
  power_of_two,  // its first node's first 1, 2, 4, ... GPUs and its first 2, 4, ... nodes
};

// A small space's layouts: raw_layouts' sizes and the shares of a group a
// plan can use (stages that divide the node); of a merged group, the
// shares of its first part (the stages stay inside it, as raw_layouts'
// do). Why: a plan that leaves GPUs idle can be the fastest (a slower
// device's node added to a pipeline slows it; a model too small for a
// node fits in part of one; a batch of 3 sequences feeds 3 replicas of 4
// GPUs, a 3-layer model 3 stages), and with these more GPUs never give a
// slower answer (two identical groups of 3 GPUs, merged, had no plan for a
// 2-layer model of 16 heads at B = 2, where one such group has one on 2 of
// its GPUs); past kSmallSpaceSkeletons they multiply the search time by
// the sizes' count per group, so a larger space takes fewer (SearchSpace's
// constructor).
// Null where the group has more shares than `most_shares`: each share's
// check costs time linear in its GPUs, so every share of a 65,536-node
// group (a batch per replica lets a plan use all of it) took minutes
// before the search began, deaf to its time limit; such a group has more
// layouts than a small space holds anyway.
std::optional<std::vector<GroupLayout>> small_space_layouts(const Problem& problem, int group, const NodeGroup& g,
                                                            Shares shares, std::uint64_t most_shares) {
  const long long most = most_useful_gpus(problem, g);
  const long long share_nodes = g.part_gpus() / g.gpus_per_node;  // the nodes a share may take
  auto next = [&](long long n) { return shares == Shares::every ? n + 1 : n * 2; };
  std::vector<int> totals;
  for (long long t = 1; t < g.gpus_per_node && t <= most; t = next(t)) totals.push_back(static_cast<int>(t));
  for (long long nodes = 1; nodes < share_nodes && nodes * g.gpus_per_node <= most; nodes = next(nodes)) {
    if (totals.size() >= most_shares) return std::nullopt;
    totals.push_back(static_cast<int>(nodes) * g.gpus_per_node);
  }
  std::vector<GroupLayout> raw = raw_layouts(problem, group, g);
  std::vector<GroupLayout> out;
  for (const int total : totals) {
    const bool listed =
        std::any_of(raw.begin(), raw.end(), [&](const GroupLayout& l) { return l.stages * l.gpus_per_stage == total; });
    if (!listed && offers_a_runnable_layout(problem, group, g, total)) append_layouts(group, g, total, out);
  }
  // By GPUs used, then k, then tp, as raw_layouts lists them.
  out.insert(out.end(), raw.begin(), raw.end());
  std::stable_sort(out.begin(), out.end(), [](const GroupLayout& a, const GroupLayout& b) {
    return a.stages * a.gpus_per_stage < b.stages * b.gpus_per_stage;
  });
  return out;
}

// Whether the raw skeletons of the given layouts (over every ordered subset
// of groups, the product of its groups' layout counts, times the
// micro-batch sizes) number at most `budget`; counted until they pass it.
bool raw_skeletons_within(const std::vector<std::vector<int>>& orders,
                          const std::vector<std::vector<GroupLayout>>& layouts, std::size_t micro_batches,
                          std::uint64_t budget) {
  std::uint64_t total = 0;
  for (const auto& order : orders) {
    std::uint64_t combos = 1;
    for (int g : order) combos = saturating_mul(combos, layouts[g].size());
    total = saturating_add(total, saturating_mul(combos, micro_batches));
    if (total > budget) return false;
  }
  return true;
}

// All sequences of distinct group indices, by length, then lexicographic.
std::vector<std::vector<int>> ordered_subsets(int groups) {
  std::vector<std::vector<int>> out;
  std::vector<int> current;
  std::vector<bool> used(groups, false);
  std::function<void(int)> extend = [&](int length) {
    if (static_cast<int>(current.size()) == length) {
      out.push_back(current);
      return;
    }
    for (int g = 0; g < groups; ++g) {
      if (used[g]) continue;
      used[g] = true;
      current.push_back(g);
      extend(length);
      current.pop_back();
      used[g] = false;
    }
  };
  for (int length = 1; length <= groups; ++length) extend(length);
  return out;
}

// Whether the space offers a pipeline in this order of groups: a halved
// group (NodeGroup::half_of, cluster_split.hpp) is used whole or as both
// halves, its first half before its second, never a half alone.
bool order_allowed(const std::vector<NodeGroup>& groups, const std::vector<int>& order) {
  for (std::size_t j = 0; j < order.size(); ++j) {
    const NodeGroup& g = groups[order[j]];
    if (g.half_of < 0) continue;
    const int whole = g.half_of;
    if (std::find(order.begin(), order.end(), whole) != order.end()) return false;
    const auto other = std::find_if(order.begin(), order.end(), [&](int k) {
      return groups[k].half_of == whole && groups[k].half != g.half;
    });
    if (other == order.end()) return false;
    if (g.half == 1 && other < order.begin() + static_cast<std::ptrdiff_t>(j)) return false;
  }
  return true;
}

}  // namespace

std::string group_count_violation(std::size_t groups) {
  // Ordered non-empty subsets of n groups: sum over k of n! / (n - k)!.
  std::uint64_t orders = 0, run = 1;
  for (std::uint64_t k = 0; k < groups; ++k) {
    run = saturating_mul(run, groups - k);
    orders = saturating_add(orders, run);
  }
  if (orders <= kMaxGroupOrders) return "";
  return "at most 10 node groups in one search: the orders of the pipeline's groups grow as n! (10 groups: "
         "9,864,100 orders; " + std::to_string(groups) + ": " +
         (orders == std::numeric_limits<std::uint64_t>::max() ? std::string("more than 1.8e19")
                                                             : std::to_string(orders)) +
         "); merge groups of one device type";
}

SearchSpace::SearchSpace(const Problem& problem, bool every_share) : problem_(problem) {
  const auto& groups = problem.cluster.groups;
  if (const std::string why = group_count_violation(groups.size()); !why.empty())
    throw InputError(problem.cluster.name, "groups", std::to_string(groups.size()) + " node groups", why);
  orders_ = ordered_subsets(static_cast<int>(groups.size()));
  std::erase_if(orders_, [&](const std::vector<int>& order) { return !order_allowed(groups, order); });
  micro_batches_ = searched_micro_batches(problem);
  // Every share of each group where the space stays small, else its
  // power-of-two shares, else raw_layouts' sizes alone; decided on the
  // orders without halves (cluster_split.hpp), so a space with halves takes
  // the shares the space without them does and holds all its skeletons. A
  // half is offered raw_layouts' sizes alone: its group's shares already
  // hold every plan on part of it.
  std::vector<std::vector<int>> whole_orders;
  for (const auto& order : orders_)
    if (std::none_of(order.begin(), order.end(), [&](int g) { return groups[g].half_of >= 0; }))
      whole_orders.push_back(order);
  // Whether the layouts `layouts_of` gives every group (null: too many)
  // make at most `budget` raw skeletons; layouts_ holds them.
  auto take = [&](auto layouts_of, std::uint64_t budget) {
    layouts_.clear();
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      if (groups[g].half_of >= 0) {
        layouts_.push_back(raw_layouts(problem, g, groups[g]));
        continue;
      }
      std::optional<std::vector<GroupLayout>> of = layouts_of(g, budget);
      if (!of) return false;
      layouts_.push_back(std::move(*of));
    }
    return raw_skeletons_within(whole_orders, layouts_, micro_batches_.size(), budget);
  };
  auto shares_of = [&](Shares shares) {
    return [&, shares](int g, std::uint64_t budget) {
      return small_space_layouts(problem, g, groups[g], shares, budget);
    };
  };
  shares_ = SpaceShares::whole;
  if (every_share && take(shares_of(Shares::every), kEveryShareSkeletons))
    shares_ = SpaceShares::every;
  else if (every_share && take(shares_of(Shares::power_of_two), kSmallSpaceSkeletons))
    shares_ = SpaceShares::power_of_two;
  else
    take([&](int g, std::uint64_t) { return std::optional(raw_layouts(problem, g, groups[g])); }, kSaturated);

  for (const auto& order : orders_) {
    std::uint64_t combos = 1;
    for (int g : order) combos = saturating_mul(combos, layouts_[g].size());
    combos_.push_back(combos);
    order_first_.push_back(raw_size_);
    raw_size_ = saturating_add(raw_size_, saturating_mul(combos, micro_batches_.size()));
  }
}

std::uint64_t SearchSpace::first_id(int order_index, int micro_batch_index) const {
  return saturating_add(order_first_[order_index],
                        saturating_mul(combos_[order_index], static_cast<std::uint64_t>(micro_batch_index)));
}

Skeleton SearchSpace::make(int order_index, int micro_batch_index, const std::vector<int>& layout_index) const {
  const auto& order = orders_[order_index];
  Skeleton s;
  s.micro_batch = micro_batches_[micro_batch_index];
  std::uint64_t digits = 0;
  for (std::size_t j = 0; j < order.size(); ++j) {
    const GroupLayout& layout = layouts_[order[j]].at(layout_index[j]);  // an index past the list throws
    digits = saturating_add(saturating_mul(digits, layouts_[order[j]].size()), layout_index[j]);
    for (int k = 0; k < layout.stages; ++k) {
      s.stages.push_back({layout.group, k * layout.gpus_per_stage, layout.gpus_per_stage, layout.tp, layout.dp});
    }
  }
  s.id = saturating_add(first_id(order_index, micro_batch_index), digits);
  return s;
}

std::optional<int> SearchSpace::order_index(const std::vector<int>& order) const {
  // group_orders() is sorted by length, then lexicographically.
  auto before = [](const std::vector<int>& a, const std::vector<int>& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  };
  const auto it = std::lower_bound(orders_.begin(), orders_.end(), order, before);
  if (it == orders_.end() || *it != order) return std::nullopt;
  return static_cast<int>(it - orders_.begin());
}

std::optional<SearchSpace::Coordinates> SearchSpace::locate(const Skeleton& skeleton) const {
  Coordinates at;
  const auto b = std::find(micro_batches_.begin(), micro_batches_.end(), skeleton.micro_batch);
  if (b == micro_batches_.end() || skeleton.stages.empty()) return std::nullopt;
  at.micro_batch = static_cast<int>(b - micro_batches_.begin());
  std::vector<int> order;
  for (std::size_t i = 0; i < skeleton.stages.size();) {
    const StageSlot& first = skeleton.stages[i];
    std::size_t end = i;
    while (end < skeleton.stages.size() && skeleton.stages[end].group == first.group) ++end;
    const int stages = static_cast<int>(end - i);
    if (first.group < 0 || first.group >= static_cast<int>(layouts_.size())) return std::nullopt;
    const auto& list = layouts_[first.group];
    const auto layout = std::find_if(list.begin(), list.end(), [&](const GroupLayout& g) {
      return g.stages == stages && g.gpus_per_stage == first.gpus && g.tp == first.tp && g.dp == first.dp;
    });
    if (layout == list.end()) return std::nullopt;
    order.push_back(first.group);
    at.layout.push_back(static_cast<int>(layout - list.begin()));
    i = end;
  }
  const auto index = order_index(order);
  if (!index) return std::nullopt;
  at.order = *index;
  // Only what make() would build (first GPUs in place, one group once).
  if (make(at.order, at.micro_batch, at.layout).stages != skeleton.stages) return std::nullopt;
  return at;
}

std::vector<int> searched_micro_batches(const Problem& problem) {
  const TrainingSpec& t = problem.training;
  std::vector<int> out;
  if (!t.micro_batch_per_replica) {
    out = t.micro_batch_sizes;
  } else {
    std::vector<int> dps;
    for (int g = 0; g < static_cast<int>(problem.cluster.groups.size()); ++g)
      for (const GroupLayout& l : raw_layouts(problem, g, problem.cluster.groups[g])) dps.push_back(l.dp);
    std::sort(dps.begin(), dps.end());
    dps.erase(std::unique(dps.begin(), dps.end()), dps.end());
    for (int b : t.micro_batch_sizes) {
      if (b <= 0) continue;
      for (int dp : dps) {
        const long long B = static_cast<long long>(b) * dp;
        // B must divide the global batch (memory_pruning's rule): the
        // others are not listed, so the space grows only by what can run.
        if (B <= t.global_batch && t.global_batch % B == 0) out.push_back(static_cast<int>(B));
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove_if(out.begin(), out.end(), [](int b) { return b <= 0; }), out.end());
  return out;
}

bool valid_stage_size(int stage_gpus, int gpus_per_node) {
  return stage_gpus > 0 && (gpus_per_node % stage_gpus == 0 || stage_gpus % gpus_per_node == 0);
}

int num_micro_batches(const Problem& problem, const Skeleton& skeleton) {
  return skeleton.micro_batch > 0 ? problem.training.global_batch / skeleton.micro_batch : 0;
}

std::int64_t count_splits(int layers, int stages) {
  if (stages < 1 || layers < stages) return 0;
  // C(n, k) with k = min(k, n-k), multiplying up in long double to detect overflow.
  const int n = layers - 1;
  const int k = std::min(stages - 1, n - (stages - 1));
  long double c = 1;
  for (int i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;
    if (c > static_cast<long double>(std::numeric_limits<std::int64_t>::max())) {
      return std::numeric_limits<std::int64_t>::max();
    }
  }
  return static_cast<std::int64_t>(c + 0.5L);
}

bool context_parallel_allowed(const Problem& problem, int cp) {
  if (cp > 1 && problem.profiles_only) return false;
  return context_parallel_violation(problem.model, problem.seq_len(), cp).empty() &&
         runtime_context_parallel_violation(problem.training.runtime, problem.training.precision, cp).empty();
}

int max_pipeline_stages(const Problem& problem) {
  return max_pipeline_stages(problem.model, problem.training.runtime, problem.training.zero);
}

StageDegrees stage_degrees(const Problem& problem, int group, int tp, int width, int micro_batch) {
  if (micro_batch % width == 0) return {tp, 1, width};
  const int cp = width / std::gcd(width, micro_batch);
  const DeviceSpec& device = problem.cluster.groups.at(group).device;
  if (!context_parallel_allowed(problem, cp) || problem.profiles.measures_device(device.name) ||
      !device_context_parallel_violation(device, problem.training.runtime, problem.model.head_dim(), cp).empty())
    return {tp, 1, width};
  return {tp, cp, width / cp};
}

bool interleaving_searched(const Problem& problem, int vpp, const std::vector<int>& stage_layers,
                           int num_micro_batches) {
  return interleaving_violation(problem.model, problem.training.runtime, vpp, stage_layers, num_micro_batches)
             .empty() &&
         searched_interleaving_violation(stage_layers, vpp).empty();
}

StagePlan slot_stage(const Problem& problem, const StageSlot& slot, int micro_batch) {
  StagePlan stage;
  stage.group = slot.group;
  stage.device = problem.cluster.groups[slot.group].device.name;
  stage.first_gpu = slot.first_gpu;
  stage.gpus = slot.gpus;
  const StageDegrees degrees = stage_degrees(problem, slot, micro_batch);
  stage.tp = degrees.tp;
  stage.cp = degrees.cp;
  stage.dp = degrees.dp;
  return stage;
}

Plan make_plan(const Problem& problem, const Skeleton& skeleton, const std::vector<int>& layer_end,
               const std::vector<Recompute>& recompute, int vpp) {
  Plan plan;
  plan.vpp = vpp;
  plan.model = problem.model.name;
  plan.cluster = problem.cluster.name;
  plan.global_batch = problem.training.global_batch;
  plan.micro_batch_size = skeleton.micro_batch;
  plan.num_micro_batches = num_micro_batches(problem, skeleton);
  plan.zero = problem.training.zero;
  int begin = 0;
  for (int i = 0; i < skeleton.num_stages(); ++i) {
    StagePlan stage = slot_stage(problem, skeleton.stages[i], skeleton.micro_batch);
    stage.layer_begin = begin;
    stage.layer_end = layer_end[i];
    stage.recompute = recompute[i];
    begin = layer_end[i];
    plan.stages.push_back(stage);
  }
  return plan;
}

}  // namespace autohaap
