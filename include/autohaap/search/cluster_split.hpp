// Cluster halves: a node group searched whole and also as its two halves,
// so that one group can hold stages of two (stage size, tp, dp) and sit at
// both ends of a pipeline.
//
// Why: the search space (search_space.hpp) cuts a used group into equal
// stages of one (tp, dp), contiguous along the pipeline. Two kinds of plan
// lie outside it, and both are faster on some problems:
//   - stages of different (tp, dp) on one group: Llama 3 70B on 32 nodes
//     of 8 A100-80GB runs 4 stages of tp 4 x dp 8 at 42.92 s/iter, and 2 of
//     tp 4 x dp 8 then 2 of tp 2 x dp 16 at 41.92 s (found by describing
//     the same nodes as two groups);
//   - one device type at both ends (h200 > h100 > h100 > h200): with tied
//     embeddings the first and last stages reduce the embedding's gradient
//     together, and inside one group that runs over its own NICs rather
//     than the slower fabric between groups (12.7% faster on GPT-3 760M
//     on 2 + 2 one-GPU nodes).
//
// What: split_groups appends, for each chosen group, two groups of half
// its nodes (NodeGroup::half_of, half): a group of N nodes (N even) its
// first and last N/2; a merged group (cluster_merge.hpp) of an even number
// of parts its first and last half of the parts, each then whole original
// groups. The search space uses a group either whole or as both of its
// halves, the first half before the second (anything between them; the
// mirror image, second half first, prices the same and is left out), never
// a half alone (a prefix of the whole group, which the group's own shares
// offer). Each half is cut into its own equal stages of its own (tp, dp),
// and may be used in part as its raw layouts allow. The cost model prices
// a pipeline link between two halves as the group prices it: between its
// nodes, or between the parts of a merged group over the fabric between
// groups. Everything else of a stage depends on its group's fields and its
// first GPU modulo the node, which a half keeps, so a plan costs on the
// split cluster exactly what unsplit_plan makes of it costs on the cluster
// it was split from.
//
// Which groups: halves only pay while the space stays small. A cluster of
// at most kMostSplitGroups groups offers halves of its halvable groups,
// the largest first, each kept while the space with the halves holds at
// most kSplitSkeletons raw skeletons. SearchSpace decides which shares of
// the whole groups to offer on the orders without halves, so the space
// with halves holds every skeleton of the space without them, and the
// search, the exhaustive and the reference strategies answer over the same
// larger space. A cluster of more groups, or a group of one or an odd
// number of nodes, is searched as before.
//
// Callers: the search driver (search_driver.cpp) splits after merging and
// unsplits its final plans before unmerging; run_search splits for the
// exhaustive and reference strategies. Every MPI rank splits the same way
// (deterministic), so lists, checkpoints and caches stay in split
// coordinates. Cost: one SearchSpace construction per group tried. Pure.
#pragma once

#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// Halving is tried on clusters of at most this many groups (after merging):
// three groups and their halves are six, 1,956 group orders.
inline constexpr int kMostSplitGroups = 3;
// The most raw skeletons a space with halves may hold.
inline constexpr std::uint64_t kSplitSkeletons = 200'000;

struct ClusterSplit {
  Problem problem;  // the problem on the split cluster (the given one when nothing is split)
  // Per group of problem.cluster: the group of the cluster given it is in,
  // and the GPU of that group its first GPU is.
  struct Origin {
    int group = 0;
    int first_gpu = 0;
  };
  std::vector<Origin> origin;
  std::vector<int> halved;  // the groups given that are also offered as halves, ascending

  bool split() const { return !halved.empty(); }
};

// Per group of `cluster` (a split one, or any): where its GPUs lie in the
// cluster it was split from (NodeGroup::half_of, half), what
// ClusterSplit::origin holds.
std::vector<ClusterSplit::Origin> group_origins(const ClusterSpec& cluster);

// `problem` with the groups chosen above halved (see the header comment).
// `every_share` as SearchSpace takes it.
ClusterSplit split_groups(const Problem& problem, bool every_share = true);

// A plan of split.problem as a plan of the problem given: each stage's and
// replica set's group and first GPU moved onto the group it is part of.
// Same prediction and search stats.
Plan unsplit_plan(const Plan& plan, const ClusterSplit& split);

}  // namespace autohaap
