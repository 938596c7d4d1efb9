// Incumbent: the K best plans found so far, shared by every search worker,
// and the bound they give for pruning.
//
// Plans are ranked by a canonical order: predicted iteration time, then the
// skeleton (micro-batch size, stages' group / placement / tp / dp), then
// the split and recompute modes. The order is total, so the K plans kept
// do not depend on which worker, thread count or rank offered what first.
// One plan per skeleton is kept (the better one): the top-K are K different
// parallel layouts, not K splits of one. On a split cluster
// (cluster_split.hpp) a skeleton is where its stages sit in the cluster
// the split was made from: a plan on a group's two halves and the same
// stages on the whole group are one plan, so the K kept are K plans of the
// cluster as given (counted apart, they had filled the K-th place with a
// twin and pruned plans of the true top K).
//
// Thread safety: offer() and tighten() may be called from any thread at
// once; bound() and best() are lock-free reads. Cost: offer O(K) under a mutex.
#pragma once

#include <limits>
#include <mutex>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/search/cluster_split.hpp"
#include "autohaap/search/parallel.hpp"

namespace autohaap {

// True when a comes before b in the canonical order of plans.
bool plan_before(const Plan& a, const Plan& b);
// True when a and b are the same skeleton (placement, degrees and B).
bool same_skeleton(const Plan& a, const Plan& b);

class Incumbent {
 public:
  explicit Incumbent(int k);
  // Plans of `cluster`, which may hold halves of groups (NodeGroup::half_of).
  Incumbent(int k, const ClusterSpec& cluster);

  int k() const { return k_; }
  // Offers a plan whose `predicted` is filled; plans that do not fit memory
  // are refused. Returns whether it entered the top K.
  bool offer(const Plan& plan);
  // A plan slower than this cannot enter: the K-th best iteration time
  // (infinity until K plans are held), lowered by tighten().
  double bound() const { return bound_.load(); }
  // Lowers the bound with one known from elsewhere (a peer's K-th best).
  void tighten(double bound) { bound_.lower(bound); }
  // The best iteration time held (infinity while none): what the search's
  // gap is measured from (search_driver.hpp).
  double best() const { return best_.load(); }
  // The plans held, best first.
  std::vector<Plan> plans() const;

 private:
  // Canonical order: plan_before's with each stage placed where it sits in
  // the cluster before the split, then as placed (a total order still).
  bool before(const Plan& a, const Plan& b) const;
  bool same(const Plan& a, const Plan& b) const;

  int k_;
  // Per group: where it lies before the split (group_origins; empty: every
  // group its own).
  std::vector<ClusterSplit::Origin> origin_;
  mutable std::mutex mutex_;
  std::vector<Plan> plans_;  // sorted, at most k_
  parallel::AtomicMin bound_;
  parallel::AtomicMin best_;
};

// The K best plans of several lists (e.g. one per rank), one per skeleton,
// in canonical order: the same answer whatever the lists' order.
std::vector<Plan> merge_top_k(const std::vector<std::vector<Plan>>& lists, int k);
std::vector<Plan> merge_top_k(const std::vector<std::vector<Plan>>& lists, int k, const ClusterSpec& cluster);

}  // namespace autohaap
