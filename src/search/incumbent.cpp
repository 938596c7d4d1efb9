#include "autohaap/search/incumbent.hpp"

#include <algorithm>
#include <tuple>

namespace autohaap {
namespace {

auto placement(const StagePlan& s) { return std::tie(s.group, s.first_gpu, s.gpus, s.tp, s.dp); }

// -1, 0, 1 like a three-way comparison of the skeletons.
int compare_skeletons(const Plan& a, const Plan& b) {
  if (a.micro_batch_size != b.micro_batch_size) return a.micro_batch_size < b.micro_batch_size ? -1 : 1;
  const std::size_t n = std::min(a.stages.size(), b.stages.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (placement(a.stages[i]) != placement(b.stages[i]))
      return placement(a.stages[i]) < placement(b.stages[i]) ? -1 : 1;
  }
  if (a.stages.size() != b.stages.size()) return a.stages.size() < b.stages.size() ? -1 : 1;
  return 0;
}

}  // namespace

bool same_skeleton(const Plan& a, const Plan& b) { return compare_skeletons(a, b) == 0; }

bool plan_before(const Plan& a, const Plan& b) {
  if (a.predicted.iteration_time_s != b.predicted.iteration_time_s) {
    return a.predicted.iteration_time_s < b.predicted.iteration_time_s;
  }
  if (const int c = compare_skeletons(a, b); c != 0) return c < 0;
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const auto& x = a.stages[i];
    const auto& y = b.stages[i];
    if (x.layer_end != y.layer_end) return x.layer_end < y.layer_end;
    if (x.recompute != y.recompute) return x.recompute < y.recompute;
  }
  return a.vpp < b.vpp;
}

Incumbent::Incumbent(int k) : k_(std::max(1, k)) {}

bool Incumbent::offer(const Plan& plan) {
  if (!plan.predicted.fits) return false;
  std::lock_guard lock(mutex_);
  auto same = std::find_if(plans_.begin(), plans_.end(), [&](const Plan& p) { return same_skeleton(p, plan); });
  if (same != plans_.end()) {
    if (!plan_before(plan, *same)) return false;
    plans_.erase(same);
  } else if (static_cast<int>(plans_.size()) == k_ && !plan_before(plan, plans_.back())) {
    return false;
  }
  plans_.insert(std::upper_bound(plans_.begin(), plans_.end(), plan, plan_before), plan);
  if (static_cast<int>(plans_.size()) > k_) plans_.pop_back();
  if (static_cast<int>(plans_.size()) == k_) bound_.lower(plans_.back().predicted.iteration_time_s);
  best_.lower(plans_.front().predicted.iteration_time_s);
  return std::any_of(plans_.begin(), plans_.end(), [&](const Plan& p) { return same_skeleton(p, plan); });
}

std::vector<Plan> Incumbent::plans() const {
  std::lock_guard lock(mutex_);
  return plans_;
}

std::vector<Plan> merge_top_k(const std::vector<std::vector<Plan>>& lists, int k) {
  Incumbent merged(k);
  for (const auto& list : lists) {
    for (const auto& plan : list) merged.offer(plan);
  }
  return merged.plans();
}

}  // namespace autohaap
