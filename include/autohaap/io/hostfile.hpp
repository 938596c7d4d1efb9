// Hostfile: where every rank of a plan runs — one line per GPU the plan
// uses, naming its node and local GPU index and the rank's pipeline stage,
// tensor-parallel rank and data-parallel rank — so a launcher (torchrun,
// mpirun, Slurm) can start each rank on the GPU the plan was scored for.
//
// Nodes are named <group>-node<k>: the node group's name and the node's
// index inside the group (a group name shared by several groups gets the
// group index appended, "-g<index>", so names stay unique). Inside a stage
// GPUs are taken in Megatron-LM's rank order: tensor-parallel rank fastest,
// then data-parallel rank, so each tensor-parallel group is tp consecutive
// GPUs of one node (check_plan_against guarantees it). Global ranks count
// stage by stage.
//
// Callers: the export command, tests. Pure; O(GPUs of the plan).
#pragma once

#include <string>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/specs/cluster.hpp"

namespace autohaap {

struct HostSlot {
  std::string node;  // <group>-node<k>
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

// The slots as a whitespace-separated table with a '#' header.
std::string format_hostfile(const Plan& plan, const ClusterSpec& cluster);

}  // namespace autohaap
