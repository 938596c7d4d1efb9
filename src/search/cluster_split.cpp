#include "autohaap/search/cluster_split.hpp"

#include <algorithm>

#include "autohaap/search/search_space.hpp"

namespace autohaap {
namespace {

// `problem` with each group in `halved` (indices into its cluster) followed,
// at the end of the list, by its two halves.
ClusterSplit with_halves(const Problem& problem, const std::vector<int>& halved) {
  ClusterSplit out{problem, {}, halved};
  std::vector<NodeGroup>& groups = out.problem.cluster.groups;
  for (const int g : halved) {
    const NodeGroup whole = problem.cluster.groups[g];
    for (int half = 1; half <= 2; ++half) {
      NodeGroup h = whole;
      h.name = whole.name + (half == 1 ? " (first half)" : " (second half)");
      h.nodes = whole.nodes / 2;
      h.parts = std::max(1, whole.parts / 2);
      h.half_of = g;
      h.half = half;
      groups.push_back(std::move(h));
    }
  }
  out.origin = group_origins(out.problem.cluster);
  return out;
}

// A group of one part is halved by its nodes, a merged group by its parts
// (each half is then whole original groups).
bool halvable(const NodeGroup& g) {
  if (g.half_of >= 0) return false;
  return g.parts == 1 ? g.nodes >= 2 && g.nodes % 2 == 0 : g.parts % 2 == 0;
}

}  // namespace

std::vector<ClusterSplit::Origin> group_origins(const ClusterSpec& cluster) {
  std::vector<ClusterSplit::Origin> out;
  for (int g = 0; g < static_cast<int>(cluster.groups.size()); ++g) {
    const NodeGroup& group = cluster.groups[g];
    // The second half's GPUs follow the first's, as many.
    if (group.half_of >= 0)
      out.push_back({group.half_of, group.half == 1 ? 0 : group.gpus()});
    else
      out.push_back({g, 0});
  }
  return out;
}

ClusterSplit split_groups(const Problem& problem, bool every_share) {
  const std::vector<NodeGroup>& groups = problem.cluster.groups;
  if (groups.empty() || static_cast<int>(groups.size()) > kMostSplitGroups) return with_halves(problem, {});
  std::vector<int> candidates;
  for (int g = 0; g < static_cast<int>(groups.size()); ++g)
    if (halvable(groups[g])) candidates.push_back(g);
  if (candidates.empty()) return with_halves(problem, {});
  // Largest groups first (then in the cluster's order): they hold the most
  // stages, where two layouts can differ most.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int a, int b) { return groups[a].gpus() > groups[b].gpus(); });
  std::vector<int> halved;
  for (const int g : candidates) {
    std::vector<int> trying = halved;
    trying.push_back(g);
    const ClusterSplit split = with_halves(problem, trying);
    if (SearchSpace(split.problem, every_share).raw_size() <= kSplitSkeletons) halved = std::move(trying);
  }
  std::sort(halved.begin(), halved.end());
  return with_halves(problem, halved);
}

Plan unsplit_plan(const Plan& plan, const ClusterSplit& split) {
  Plan out = plan;
  auto place = [&](int& group, int& first_gpu) {
    const ClusterSplit::Origin& o = split.origin.at(group);
    group = o.group;
    first_gpu += o.first_gpu;
  };
  for (StagePlan& s : out.stages) {
    if (s.has_replica_sets()) {
      for (ReplicaSet& r : s.replicas) place(r.group, r.first_gpu);
      set_replica_sets(s, std::move(s.replicas));
    } else {
      place(s.group, s.first_gpu);
    }
  }
  return out;
}

}  // namespace autohaap
