#include "autohaap/search/incumbent.hpp"

#include <algorithm>
#include <tuple>

namespace autohaap {
namespace {

using Origins = std::vector<ClusterSplit::Origin>;

// A stage's placement, with its group and first GPU as they lie in the
// cluster before any split (`origin`; empty: as placed).
auto placement(const StagePlan& s, const Origins& origin) {
  int group = s.group, first_gpu = s.first_gpu;
  if (!origin.empty()) {
    const ClusterSplit::Origin& o = origin[static_cast<std::size_t>(group)];
    group = o.group;
    first_gpu += o.first_gpu;
  }
  return std::make_tuple(group, first_gpu, s.gpus, s.tp, s.dp);
}

// -1, 0, 1 like a three-way comparison of the skeletons.
int compare_skeletons(const Plan& a, const Plan& b, const Origins& origin) {
  if (a.micro_batch_size != b.micro_batch_size) return a.micro_batch_size < b.micro_batch_size ? -1 : 1;
  const std::size_t n = std::min(a.stages.size(), b.stages.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = placement(a.stages[i], origin), y = placement(b.stages[i], origin);
    if (x != y) return x < y ? -1 : 1;
  }
  if (a.stages.size() != b.stages.size()) return a.stages.size() < b.stages.size() ? -1 : 1;
  return 0;
}

bool before_in(const Plan& a, const Plan& b, const Origins& origin) {
  if (a.predicted.iteration_time_s != b.predicted.iteration_time_s) {
    return a.predicted.iteration_time_s < b.predicted.iteration_time_s;
  }
  if (const int c = compare_skeletons(a, b, origin); c != 0) return c < 0;
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const auto& x = a.stages[i];
    const auto& y = b.stages[i];
    if (x.layer_end != y.layer_end) return x.layer_end < y.layer_end;
    if (x.recompute != y.recompute) return x.recompute < y.recompute;
  }
  if (a.vpp != b.vpp) return a.vpp < b.vpp;
  // Twins on a split cluster: the one placed first.
  return !origin.empty() && compare_skeletons(a, b, {}) < 0;
}

}  // namespace

bool same_skeleton(const Plan& a, const Plan& b) { return compare_skeletons(a, b, {}) == 0; }

bool plan_before(const Plan& a, const Plan& b) { return before_in(a, b, {}); }

Incumbent::Incumbent(int k) : k_(std::max(1, k)) {}

Incumbent::Incumbent(int k, const ClusterSpec& cluster) : k_(std::max(1, k)) {
  // Only a split cluster's groups lie elsewhere than where they are placed.
  if (std::any_of(cluster.groups.begin(), cluster.groups.end(), [](const NodeGroup& g) { return g.half_of >= 0; }))
    origin_ = group_origins(cluster);
}

bool Incumbent::before(const Plan& a, const Plan& b) const { return before_in(a, b, origin_); }

bool Incumbent::same(const Plan& a, const Plan& b) const { return compare_skeletons(a, b, origin_) == 0; }

bool Incumbent::offer(const Plan& plan) {
  if (!plan.predicted.fits) return false;
  std::lock_guard lock(mutex_);
  auto twin = std::find_if(plans_.begin(), plans_.end(), [&](const Plan& p) { return same(p, plan); });
  if (twin != plans_.end()) {
    if (!before(plan, *twin)) return false;
    plans_.erase(twin);
  } else if (static_cast<int>(plans_.size()) == k_ && !before(plan, plans_.back())) {
    return false;
  }
  const auto at = std::upper_bound(plans_.begin(), plans_.end(), plan,
                                   [this](const Plan& a, const Plan& b) { return before(a, b); });
  plans_.insert(at, plan);
  if (static_cast<int>(plans_.size()) > k_) plans_.pop_back();
  if (static_cast<int>(plans_.size()) == k_) bound_.lower(plans_.back().predicted.iteration_time_s);
  best_.lower(plans_.front().predicted.iteration_time_s);
  return std::any_of(plans_.begin(), plans_.end(), [&](const Plan& p) { return same(p, plan); });
}

std::vector<Plan> Incumbent::plans() const {
  std::lock_guard lock(mutex_);
  return plans_;
}

namespace {

std::vector<Plan> merge_into(Incumbent merged, const std::vector<std::vector<Plan>>& lists) {
  for (const auto& list : lists) {
    for (const auto& plan : list) merged.offer(plan);
  }
  return merged.plans();
}

}  // namespace

std::vector<Plan> merge_top_k(const std::vector<std::vector<Plan>>& lists, int k) {
  return merge_into(Incumbent(k), lists);
}

std::vector<Plan> merge_top_k(const std::vector<std::vector<Plan>>& lists, int k, const ClusterSpec& cluster) {
  return merge_into(Incumbent(k, cluster), lists);
}

}  // namespace autohaap
