#include "autohaap/search/cluster_merge.hpp"

#include <stdexcept>
#include <string>

#include "autohaap/specs/spec_fingerprint.hpp"

namespace autohaap {
namespace {

// The canonical text of a group alone, without its name: the fields the
// cost model reads, listed once, in spec_fingerprint.cpp.
std::string priced_fields(const NodeGroup& g) {
  ClusterSpec alone;
  alone.groups.push_back(g);
  alone.groups.front().name.clear();
  return canonical_text(alone);
}

}  // namespace

bool identical_groups(const NodeGroup& a, const NodeGroup& b) {
  return a.parts == b.parts && priced_fields(a) == priced_fields(b);
}

ClusterMerge merge_identical_groups(const ClusterSpec& cluster) {
  ClusterMerge out;
  out.cluster = cluster;
  out.cluster.groups.clear();
  std::vector<std::string> keys;
  for (int i = 0; i < static_cast<int>(cluster.groups.size()); ++i) {
    const NodeGroup& g = cluster.groups[i];
    // Only groups of one part join: a merged group stays one level deep.
    const std::string key = g.parts == 1 ? priced_fields(g) : std::string();
    std::size_t into = keys.size();
    for (std::size_t m = 0; m < keys.size() && !key.empty(); ++m)
      if (keys[m] == key) into = m;
    if (into == keys.size()) {
      keys.push_back(key);
      out.cluster.groups.push_back(g);
      out.members.push_back({i});
      continue;
    }
    NodeGroup& merged = out.cluster.groups[into];
    merged.nodes += g.nodes;
    merged.parts += 1;  // named as the first of them
    out.members[into].push_back(i);
  }
  return out;
}

ClusterMerge merge_for_search(const ClusterSpec& cluster, int apart) {
  if (static_cast<int>(cluster.groups.size()) > apart) return merge_identical_groups(cluster);
  ClusterMerge out;
  out.cluster = cluster;
  for (int i = 0; i < static_cast<int>(cluster.groups.size()); ++i) out.members.push_back({i});
  return out;
}

Plan unmerge_plan(const Plan& plan, const ClusterMerge& merge) {
  Plan out = plan;
  auto place = [&](int& group, int& first_gpu, int gpus) {
    const NodeGroup& g = merge.cluster.groups.at(group);
    const int part = first_gpu / g.part_gpus();
    if ((first_gpu + gpus - 1) / g.part_gpus() != part)
      throw std::logic_error("a stage of GPUs " + std::to_string(first_gpu) + ".." +
                             std::to_string(first_gpu + gpus - 1) + " of merged group " + std::to_string(group) +
                             " crosses two of its parts");
    first_gpu -= part * g.part_gpus();
    group = merge.members.at(group).at(part);
  };
  for (StagePlan& s : out.stages) {
    if (s.has_replica_sets()) {
      for (ReplicaSet& r : s.replicas) place(r.group, r.first_gpu, r.gpus);
      set_replica_sets(s, std::move(s.replicas));
    } else {
      place(s.group, s.first_gpu, s.gpus);
    }
  }
  return out;
}

}  // namespace autohaap
