// ClusterSpec: node groups of (possibly) different GPU types and the links
// between them. A group is homogeneous: one device type, one node shape, one
// NIC. Groups are joined by an inter-group fabric.
#pragma once

#include <string>
#include <vector>

#include "autohaap/specs/device.hpp"

namespace autohaap {

struct NodeGroup {
  std::string name;                 // defaults to the device name
  DeviceSpec device;
  int nodes = 0;
  int gpus_per_node = 0;
  double intra_node_GBps = 0;       // per-GPU unidirectional bandwidth inside a node (NVLink or PCIe)
  double intra_node_latency_us = 0; // per ring step
  double inter_node_GBps = 0;       // per-GPU unidirectional NIC bandwidth between nodes of this group
  double inter_node_latency_us = 0;
  // The NICs that carry a node's inter_node_GBps x gpus_per_node (a
  // cluster file's nics_per_node). 0: not stated, one per GPU (the
  // rail-optimized DGX/HGX nodes). It matters where a bus bandwidth was
  // measured (below): that is one NIC's rate, and a node's concurrent rings
  // share its NICs (CostModel, collective_link).
  int nics_per_node = 0;
  // NCCL's all-reduce bus bandwidth measured across whole nodes of this
  // group (nccl-tests all_reduce_perf "busbw" at large messages, GB/s): what
  // the fabric and its NCCL transport achieve, which on some fabrics is a
  // small part of the NICs' nominal rate. 0: not measured; the NICs run at
  // CostParameters::network_efficiency of inter_node_GBps.
  double inter_node_busbw_GBps = 0;
  // Identical sub-groups of nodes//parts nodes each, joined by the cluster's
  // inter-group fabric like separate groups. 1 for every group a cluster
  // file describes; only the search's merged cluster (search/cluster_merge.hpp)
  // sets more, so it is never loaded, written or fingerprinted. The cost
  // model prices a pipeline link between two parts as one between groups;
  // the search never cuts a stage across parts.
  int parts = 1;
  // A half of another group's nodes: only the search's split cluster
  // (search/cluster_split.hpp) sets these, so like `parts` they are never
  // loaded, written or fingerprinted. half_of is the index, in that
  // cluster, of the group whose nodes are halved; half is 1 for its first
  // nodes, 2 for the rest. The cost model prices a pipeline link between
  // the two halves of one group as one between its nodes; the search space
  // uses a group whole or as both halves, first half before second.
  int half_of = -1;
  int half = 0;

  int gpus() const { return nodes * gpus_per_node; }
  int nics() const { return nics_per_node > 0 ? nics_per_node : gpus_per_node; }
  int part_gpus() const { return gpus() / parts; }
};

// A node's NICs as bought (nics_per_node x nic_Gbps, gigabits per second
// each) shared by its GPUs: the per-GPU, per-direction share in GB/s that
// NodeGroup::inter_node_GBps holds.
inline double nic_share_GBps(int nics_per_node, double nic_Gbps, int gpus_per_node) {
  return nics_per_node * nic_Gbps / 8.0 / gpus_per_node;
}

struct ClusterSpec {
  std::string name;
  std::vector<NodeGroup> groups;    // non-empty
  double inter_group_GBps = 0;      // per-GPU unidirectional bandwidth across the fabric between groups
  double inter_group_latency_us = 0;

  int total_gpus() const {
    int n = 0;
    for (const auto& g : groups) n += g.gpus();
    return n;
  }
};

}  // namespace autohaap
