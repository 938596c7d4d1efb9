// Hostfile: where every rank of a plan runs — one line per GPU the plan
// uses, naming its node and local GPU index and the rank's pipeline stage,
// tensor-parallel rank and data-parallel rank — so a launcher (torchrun,
// mpirun, Slurm) can start each rank on the GPU the plan was scored for.
//
// Nodes are named <group>-node<k>: the node group's name and the node's
// index inside the group (a group name shared by several groups gets the
// group index appended, "-g<index>", so names stay unique). Ranks follow
// Megatron-LM's order (megatron/core/parallel_state.py, default order
// "tp-cp-ep-dp-pp"): tensor-parallel rank fastest, then context-parallel,
// then data-parallel, then pipeline stage. Inside a stage GPUs are taken in
// that order, so each tensor-parallel group is tp consecutive GPUs of one
// node (check_plan_against guarantees it); global ranks count stage by
// stage, which is Megatron's rank = tp + TP·(cp + CP·(dp + DP·stage)) when
// every stage has the same tp, cp and dp (the plans Megatron-LM runs).
//
// The node order (node_order, `export --to nodelist`) is the same placement
// seen node by node: the nodes in the order of the first rank each holds.
// A launcher that gives node k of that list node rank k and starts
// local-GPU-count processes on it (torchrun --node-rank k) hands out
// exactly the plan's global ranks, so every pipeline stage runs on the
// device type it was planned for, however many device types the plan
// mixes.
//
// Callers: the export command, tests. Pure; O(GPUs of the plan).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/specs/cluster.hpp"

namespace autohaap {

struct HostSlot {
  std::string node;  // <group>-node<k>
  std::string group; // the node group's (unique) name
  int node_index = 0; // k: the node's index inside its group
  int local_gpu = 0; // index inside the node
  int rank = 0;      // global rank
  int stage = 0;
  int tp_rank = 0;
  int cp_rank = 0;  // context-parallel rank (ranks ordered tp, cp, dp)
  int dp_rank = 0;
  std::string device;
};

// One slot per GPU of the plan, in rank order. The plan must satisfy
// check_plan_against for `cluster`.
std::vector<HostSlot> host_slots(const Plan& plan, const ClusterSpec& cluster);

// The slots as a whitespace-separated table with a '#' header, which
// begins with kHostfileHeading (how export tells an earlier one it may
// replace).
inline constexpr std::string_view kHostfileHeading = "# hostfile for ";
std::string format_hostfile(const Plan& plan, const ClusterSpec& cluster);

// One launch of a node: a run of consecutive global ranks on one node.
struct NodeLaunch {
  std::string node;             // <group>-node<k>
  std::string group;            // the node group's (unique) name
  int node_index = 0;           // k: the node's index inside its group
  std::string device;
  std::vector<int> local_gpus;  // local GPU of each rank, in rank order (CUDA_VISIBLE_DEVICES)
  std::vector<int> stages;      // pipeline ranks held, ascending
  int first_rank = 0;
  int last_rank = 0;
};

// The plan's nodes in Megatron rank order (the node of global rank 0
// first), from host_slots. A node whose ranks are not consecutive (stages
// placed out of node order) appears once per run of consecutive ranks:
// each run is its own launch (node rank) on that node.
std::vector<NodeLaunch> node_order(const Plan& plan, const ClusterSpec& cluster);

// The node order as a whitespace-separated table with a '#' header: node,
// group, device, GPUs used, local GPUs (comma-separated), pipeline ranks
// (comma-separated), first and last global rank; one line per launch, in
// launch order. The header begins with kNodelistHeading.
inline constexpr std::string_view kNodelistHeading = "# nodelist for ";
std::string format_nodelist(const Plan& plan, const ClusterSpec& cluster);

}  // namespace autohaap
