#include "autohaap/io/hostfile.hpp"

#include <algorithm>
#include <cstdio>

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
    const int gpn = cluster.groups.at(s.group).gpus_per_node;
    for (int q = 0; q < s.gpus; ++q) {
      const int gpu = s.first_gpu + q;
      HostSlot slot;
      slot.node = groups.at(s.group) + "-node" + std::to_string(gpu / gpn);
      slot.local_gpu = gpu % gpn;
      slot.rank = rank++;
      slot.stage = i;
      slot.tp_rank = q % s.tp;
      slot.cp_rank = q / s.tp % s.cp;
      slot.dp_rank = q / (s.tp * s.cp);
      slot.device = s.device;
      slots.push_back(slot);
    }
  }
  return slots;
}

std::string format_hostfile(const Plan& plan, const ClusterSpec& cluster) {
  const std::vector<HostSlot> slots = host_slots(plan, cluster);
  std::size_t width = 4;
  for (const HostSlot& s : slots) width = std::max(width, s.node.size());
  std::string out = "# hostfile for " + plan.model + " on " + plan.cluster + ": " + std::to_string(slots.size()) +
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

}  // namespace autohaap
