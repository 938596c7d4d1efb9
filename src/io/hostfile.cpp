#include "autohaap/io/hostfile.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace autohaap {
namespace {

std::vector<std::string> unique_group_names(const ClusterSpec& cluster) {
  std::vector<std::string> names;
  for (const NodeGroup& g : cluster.groups) names.push_back(g.name.empty() ? g.device.name : g.name);
  std::vector<std::string> out = names;
  for (std::size_t g = 0; g < names.size(); ++g) {
    if (std::count(names.begin(), names.end(), names[g]) > 1) out[g] += "-g" + std::to_string(g);
  }
  return out;
}

}  // namespace

std::vector<HostSlot> host_slots(const Plan& plan, const ClusterSpec& cluster) {
  const std::vector<std::string> groups = unique_group_names(cluster);
  std::vector<HostSlot> slots;
  int rank = 0;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const StagePlan& s = plan.stages[i];
    // One device's GPUs of the stage: all of them, or one replica set,
    // whose replicas follow the previous sets' in dp rank.
    auto place = [&](int group, const std::string& device, int first_gpu, int gpus, int first_dp_rank) {
      const int gpn = cluster.groups.at(group).gpus_per_node;
      for (int q = 0; q < gpus; ++q) {
        const int gpu = first_gpu + q;
        HostSlot slot;
        slot.group = groups.at(group);
        slot.node_index = gpu / gpn;
        slot.node = slot.group + "-node" + std::to_string(slot.node_index);
        slot.local_gpu = gpu % gpn;
        slot.rank = rank++;
        slot.stage = i;
        slot.tp_rank = q % s.tp;
        slot.cp_rank = q / s.tp % s.cp;
        slot.dp_rank = first_dp_rank + q / (s.tp * s.cp);
        slot.device = device;
        slots.push_back(slot);
      }
    };
    if (!s.has_replica_sets()) place(s.group, s.device, s.first_gpu, s.gpus, 0);
    int dp_rank = 0;
    for (std::size_t k = 0; k < s.replicas.size(); ++k) {
      const ReplicaSet& r = s.replicas[k];
      place(r.group, r.device, r.first_gpu, r.gpus, dp_rank);
      dp_rank += s.set_replicas(k);
    }
  }
  return slots;
}

std::string format_hostfile(const Plan& plan, const ClusterSpec& cluster) {
  const std::vector<HostSlot> slots = host_slots(plan, cluster);
  std::size_t width = 4;
  for (const HostSlot& s : slots) width = std::max(width, s.node.size());
  std::string out = std::string(kHostfileHeading) + plan.model + " on " + plan.cluster + ": " + std::to_string(slots.size()) +
                    " ranks, one line per GPU\n";
  char line[512];
  std::snprintf(line, sizeof line, "# %-*s %4s %6s %6s %8s %8s %8s  %s\n", static_cast<int>(width) - 2, "node", "gpu",
                "rank", "stage", "tp_rank", "cp_rank", "dp_rank", "device");
  out += line;
  for (const HostSlot& s : slots) {
    std::snprintf(line, sizeof line, "%-*s %4d %6d %6d %8d %8d %8d  %s\n", static_cast<int>(width), s.node.c_str(),
                  s.local_gpu, s.rank, s.stage, s.tp_rank, s.cp_rank, s.dp_rank, s.device.c_str());
    out += line;
  }
  return out;
}

std::vector<NodeLaunch> node_order(const Plan& plan, const ClusterSpec& cluster) {
  std::vector<NodeLaunch> out;
  for (const HostSlot& s : host_slots(plan, cluster)) {
    // Slots come in rank order: a new launch starts where the node changes.
    if (out.empty() || out.back().node != s.node) {
      NodeLaunch n;
      n.node = s.node;
      n.group = s.group;
      n.node_index = s.node_index;
      n.device = s.device;
      n.first_rank = s.rank;
      out.push_back(n);
    }
    NodeLaunch& n = out.back();
    n.local_gpus.push_back(s.local_gpu);
    if (n.stages.empty() || n.stages.back() != s.stage) n.stages.push_back(s.stage);
    n.last_rank = s.rank;
  }
  return out;
}

namespace {

std::string comma_list(const std::vector<int>& v) {
  std::string out;
  for (int x : v) {
    if (!out.empty()) out += ',';
    out += std::to_string(x);
  }
  return out;
}

}  // namespace

std::string format_nodelist(const Plan& plan, const ClusterSpec& cluster) {
  const std::vector<NodeLaunch> nodes = node_order(plan, cluster);
  std::size_t node_w = 4, group_w = 5, device_w = 6, gpus_w = 10, stages_w = 6;
  for (const NodeLaunch& n : nodes) {
    node_w = std::max(node_w, n.node.size());
    group_w = std::max(group_w, n.group.size());
    device_w = std::max(device_w, n.device.size());
    gpus_w = std::max(gpus_w, comma_list(n.local_gpus).size());
    stages_w = std::max(stages_w, comma_list(n.stages).size());
  }
  std::string out = std::string(kNodelistHeading) + plan.model + " on " + plan.cluster + ": " + std::to_string(nodes.size()) +
                    " launches in Megatron rank order (tensor-parallel fastest, then context-parallel, then "
                    "data-parallel, then stage); launch line k (from 0) as node rank k, its GPUs in the order listed\n";
  std::vector<char> buffer(node_w + group_w + device_w + gpus_w + stages_w + 128);
  char* line = buffer.data();
  std::snprintf(line, buffer.size(), "# %-*s %-*s %-*s %4s %-*s %-*s %10s %10s\n", static_cast<int>(node_w) - 2, "node",
                static_cast<int>(group_w), "group", static_cast<int>(device_w), "device", "gpus",
                static_cast<int>(gpus_w), "local_gpus", static_cast<int>(stages_w), "stages", "first_rank", "last_rank");
  out += line;
  for (const NodeLaunch& n : nodes) {
    std::snprintf(line, buffer.size(), "%-*s %-*s %-*s %4zu %-*s %-*s %10d %10d\n", static_cast<int>(node_w),
                  n.node.c_str(), static_cast<int>(group_w), n.group.c_str(), static_cast<int>(device_w),
                  n.device.c_str(), n.local_gpus.size(), static_cast<int>(gpus_w), comma_list(n.local_gpus).c_str(),
                  static_cast<int>(stages_w), comma_list(n.stages).c_str(), n.first_rank, n.last_rank);
    out += line;
  }
  return out;
}

}  // namespace autohaap
