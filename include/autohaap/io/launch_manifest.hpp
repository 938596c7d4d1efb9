// Launch manifest: what a heterogeneous training runtime needs to start
// every rank of a plan — any plan, whose stages may differ in device, tp,
// cp and dp — as one JSON document (`autohaap export PLAN --to
// launch-json`, format autohaap-launch/1; README "Reports and exports" has
// the table of keys).
//
// It holds the plan's execution settings, one entry per stage, and one per
// global rank: where the rank runs and its stage, tp, cp and dp ranks (from
// host_slots(), io/hostfile.hpp: the one placement), the layers, sequences
// and tokens it computes, and the ranks it receives activations from and
// sends activations to. Gradients flow the reverse way over the same pairs
// (a rank sends gradients to its `recv_from` ranks and receives them from
// its `send_to` ranks); they are not listed twice.
//
// The peer rule (exchange_peers(), used by the writer and by the reader's
// check alike). A micro-batch holds B sequences of S tokens.
//   - dp: replica d of a stage with dp replicas computes sequences
//     [d·B/dp, (d+1)·B/dp) of every micro-batch. A stage of replica sets
//     (`replica_sets`) gives them out in set order: set j's r_j replicas
//     take its n_j sequences after the sets before it, n_j / r_j each, so
//     its replica e holds [o_j + e·n_j/r_j, o_j + (e+1)·n_j/r_j) with o_j
//     the sequences of the sets before it.
//   - cp: cp rank c of a stage with cp ranks holds tokens
//     [⌊c·S/cp⌋, ⌊(c+1)·S/cp⌋) of each of its sequences (chunk c, in order;
//     a runtime that balances causal attention by re-ordering chunks does
//     so inside the stage).
//   - tp: with k = min(tp of the sender, tp of the receiver), tp rank r of
//     the sender exchanges with tp rank r of the receiver, for r < k. This
//     is what the cost model prices (cost/cost_model.cpp, pipeline
//     transfers): under pipeline_p2p scatter_gather the boundary activation
//     is cut into k slices, pair r carries slice r (k concurrent sends of
//     1/k each), and the receiving tensor-parallel group all-gathers them
//     (Megatron-LM, Narayanan et al. 2021, Sec. 4.1); under `full` each
//     pair carries the whole tensor and the receiving group's other ranks
//     (r >= k) get it inside their group.
//   - A rank of stage i exchanges with each rank of stage i+1 that has its
//     paired tp rank and whose sequences and tokens overlap its own; the
//     peer entry names the overlap (`sequences`, `tokens`). With vpp > 1
//     and more than one stage, chunk v of the last stage feeds chunk v+1 of
//     the first (Narayanan et al. 2021, Sec. 2.2.2): the last stage's ranks
//     also send to the first stage's by the same rule.
//
// Reading checks the document (format and version, every key present,
// typed and no other key, ranks 0..world_size-1 each once at distinct
// positions and GPUs, each rank's stage fields and ranges consistent with
// its stage, layers covering the model exactly once along the stage chain,
// the replicas' sequences adding up to B, peers within range, symmetric
// and exactly the rule's) and throws InputError naming the file, the key
// path (`ranks[3].send_to[1].rank`), the value and what is allowed. JSON is
// read through io/json_input (bounded nesting).
//
// Callers: the export and validate commands, tests. Cost: O(ranks ×
// replicas of a neighbouring stage) to build or check. Stateless;
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

inline constexpr const char* kLaunchManifestFormat = "autohaap-launch/1";

// [first, end): a half-open range of layers, sequences or tokens.
struct IndexRange {
  int first = 0;
  int end = 0;
  bool operator==(const IndexRange&) const = default;
};

// A rank this one exchanges activations with, and what they exchange: the
// sequences of each micro-batch and the tokens of each sequence.
struct LaunchPeer {
  int rank = 0;
  IndexRange sequences;
  IndexRange tokens;
  bool operator==(const LaunchPeer&) const = default;
};

// A stage's replicas on one device with one share of the micro-batch
// (plan.hpp, ReplicaSet): `replicas` consecutive dp ranks, after the
// previous sets', that take `sequences` sequences of each micro-batch
// together, sequences / replicas each.
struct LaunchReplicaSet {
  std::string device;
  int group = 0;
  int replicas = 0;
  int sequences = 0;
  bool operator==(const LaunchReplicaSet&) const = default;
};

// One virtual pipeline chunk of a stage (vpp > 1): the model layers it runs.
struct LaunchChunk {
  IndexRange layers;
  bool operator==(const LaunchChunk&) const = default;
};

struct LaunchStage {
  int index = 0;
  std::string device;
  int group = 0;
  int tp = 1;
  int cp = 1;
  int dp = 1;
  IndexRange layers;
  Recompute recompute = Recompute::none;
  int sequences_per_replica = 0;  // B / dp; 0 for a stage of replica sets (each set has its own)
  std::vector<LaunchReplicaSet> replica_sets;  // empty: one device, B split evenly (written only when not)
  // With vpp > 1 and several stages, the layers each of its vpp chunks runs
  // (written only then): chunk-major, as Megatron-Core places them (the
  // layout export --to megatron writes): chunk v of stage i follows chunk v
  // of stage i-1, and chunk v+1 of the first stage follows chunk v of the
  // last; each chunk holds the layers the plan's cut gives it
  // (StagePlan::chunk; read back: any cut chunks_violation allows, at
  // least one layer a chunk). `layers` is then the stage's count of layers,
  // numbered in plan order, not the layers it runs.
  std::vector<LaunchChunk> chunks;
  bool operator==(const LaunchStage&) const = default;
};

struct LaunchRank {
  int rank = 0;
  std::string node;
  int local_gpu = 0;
  std::string device;
  int stage = 0;
  int tp_rank = 0;
  int cp_rank = 0;
  int dp_rank = 0;
  IndexRange layers;
  IndexRange sequences;   // of every micro-batch: [d·B/dp, (d+1)·B/dp), or its set's share
  int sequences_per_replica = 0;  // the length of `sequences`
  IndexRange tokens;      // of each sequence: cp chunk cp_rank
  std::vector<LaunchPeer> recv_from;  // previous stage (activations in, gradients out)
  std::vector<LaunchPeer> send_to;    // next stage (activations out, gradients in)
  bool operator==(const LaunchRank&) const = default;
};

struct LaunchManifest {
  std::string model;
  std::string cluster;
  int layers = 0;            // the model's layers
  int seq_len = 0;           // S: tokens per sequence
  int world_size = 0;
  int global_batch = 0;
  int micro_batch_size = 0;  // B: sequences per pipeline micro-batch
  int num_micro_batches = 0;
  int vpp = 1;
  Precision precision = Precision::bf16;
  PipelineP2P pipeline_p2p = PipelineP2P::scatter_gather;
  std::vector<LaunchStage> stages;
  std::vector<LaunchRank> ranks;  // in rank order when built
  bool operator==(const LaunchManifest&) const = default;
};

// The manifest of `plan`, which must satisfy check_plan_against for the
// problem's model and cluster.
LaunchManifest launch_manifest(const Plan& plan, const Problem& problem);

// The peers, by the rule above, of the rank at (tp_rank, cp_rank, dp_rank)
// of stage `from` in stage `to` (send_to: to = the next stage; recv_from:
// the previous one; the relation is symmetric). `rank_at[s]` gives the
// global rank of stage s's position (dp·cp + c)·tp + t. Ordered by rank.
std::vector<LaunchPeer> exchange_peers(const LaunchManifest& m, const std::vector<std::vector<int>>& rank_at,
                                       int from, int tp_rank, int cp_rank, int dp_rank, int to);

// The sequences of each micro-batch that replica d of stage s computes
// (the dp rule above), and that replica's device.
IndexRange replica_sequences(const LaunchStage& s, int d, int micro_batch_size);
const std::string& replica_device(const LaunchStage& s, int d);

// The stage a stage sends activations to / receives them from, or -1.
int next_stage(const LaunchManifest& m, int stage);
int previous_stage(const LaunchManifest& m, int stage);

// The manifest as JSON, ending in a newline.
std::string launch_manifest_to_json(const LaunchManifest& m);

// Parses and checks manifest text (JSON); `file` names it in errors.
LaunchManifest launch_manifest_from_string(const std::string& text, const std::string& file);
LaunchManifest read_launch_manifest(const std::string& path);

// The checks reading makes, on a manifest in memory.
void check_launch_manifest(const LaunchManifest& m, const std::string& file);

}  // namespace autohaap
