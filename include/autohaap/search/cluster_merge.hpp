// Cluster merging: identical node groups searched as one.
//
// Why: a fleet is often several groups of one kind (four pods of 8x8
// A100-80GB). Searched as separate groups, the space holds every ordered
// subset of them (n! orders) and every group's own layout, mostly mirror
// images of one another: llama3-70b on four such groups took 34 s and
// 398 MB, the same 256 GPUs as one group 0.03 s.
//
// What: merge_identical_groups joins groups that are equal in every field
// the cost model reads (device, nodes, GPUs per node, links; the canonical
// text of spec_fingerprint.hpp without the name) into one group of `parts`
// parts (NodeGroup::parts), in the place of the first of them. The merged
// group is priced exactly as the separate groups: the search cuts no stage
// across a part (search_space.hpp) and the cost model prices a pipeline
// link between two parts over the inter-group fabric, as between groups;
// inside a part every offset is node-aligned, so nothing else changes.
// unmerge_plan maps a plan of the merged cluster back onto the original
// groups (part j of merged group G is original group members[G][j], a
// stage's first GPU its offset inside that part): a plan valid for
// check_plan_against on the original cluster, whose estimate there is the
// one it had on the merged cluster, to the last bit.
//
// What it gives up: the merged space holds the plans whose identical groups
// are used as a prefix of their parts (the first c of n), next to each
// other along the pipeline and with one (stage size, tp, dp) for all of
// them. Plans that give two identical groups different layouts, or put
// another group between them, are not searched, except where the merged
// group is also offered as the two halves of its parts (cluster_split.hpp);
// the exhaustive strategy, which runs on the original cluster, still
// covers them.
//
// When: only where the unmerged space is too large to search whole
// (merge_for_search). Up to kGroupsSearchedApart groups the search takes
// every group apart, identical ones included, and so also the plans merging
// gives up. Measured (Llama 3 70B, groups of 8 nodes x 8 A100-80GB, 2
// threads; groups kept apart by a different NIC latency each): four groups
// 0.30 s and five 2.6 s apart (0.11 s merged), six 35 s and eight still
// walking after 120 s (0.14 and 0.16 s merged); on three such groups apart
// the plan is 0.6% faster than merged. Apart is dearest where few layouts
// fit: Llama 3 405B on four groups of 4 x 8 A100-80GB takes 4.1 s (0.08 s
// merged) for a plan 14% faster, and 9.7 s on four groups of 3 x 8 H100 to
// prove that it fits none.
//
// Callers: the search driver (search_driver.cpp) merges before
// initialization and unmerges its final plans; every rank of an MPI job
// merges the same way (deterministic), so skeleton lists, checkpoints and
// latency caches stay in merged coordinates throughout.
// Cost: O(groups^2) canonical texts. Pure; thread-safe.
#pragma once

#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/specs/cluster.hpp"

namespace autohaap {

struct ClusterMerge {
  ClusterSpec cluster;  // the merged cluster (same name and fabric)
  // Per merged group, the original group indices it stands for, ascending:
  // members[g][j] is part j of merged group g.
  std::vector<std::vector<int>> members;

  // Whether any groups were joined (otherwise `cluster` is the original).
  bool merged() const { return members.size() < static_cast<std::size_t>(total_members()); }
  int total_members() const {
    int n = 0;
    for (const auto& m : members) n += static_cast<int>(m.size());
    return n;
  }
};

// Whether two groups are priced alike by the cost model: every field but
// the name.
bool identical_groups(const NodeGroup& a, const NodeGroup& b);

ClusterMerge merge_identical_groups(const ClusterSpec& cluster);

// The most node groups a search takes apart, identical ones included.
inline constexpr int kGroupsSearchedApart = 4;

// The merge a search runs on: merge_identical_groups where the cluster has
// more than `apart` groups, else none (each group its own member).
ClusterMerge merge_for_search(const ClusterSpec& cluster, int apart = kGroupsSearchedApart);

// A plan of merge.cluster as a plan of the original cluster (same
// prediction and search stats): each stage's group and first GPU, and each
// replica set's, moved onto the original group of its part. Throws
// std::logic_error for a stage that crosses two parts (the search never
// makes one).
Plan unmerge_plan(const Plan& plan, const ClusterMerge& merge);

}  // namespace autohaap
