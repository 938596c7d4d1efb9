// Plan: an asymmetric pipeline — stages in order, each on GPUs of one node
// group with its own tp, cp, dp, layer range and recompute mode — plus its
// execution settings (global batch, micro-batches, ZeRO stage, which the
// cost model reads from the plan), what the cost model predicts for it, how
// the search found it, and the specs it was made for. The same schema
// (io/plan_schema.hpp) is written by `search` and read by `estimate`,
// `report` and `export` (io/plan_io.hpp). A new field is its member here and
// its line in that schema: every format follows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// One set of a stage's data-parallel replicas that share a device type and
// a share of the micro-batch (heterogeneous data parallelism: AMP, Li et al.
// 2022; Sailor, Strati et al. 2025; HexiScale; Poplar, Zhang et al. 2025):
// gpus / (tp * cp) replicas on GPUs [first_gpu, first_gpu + gpus) of one
// node group, which together process `sequences` sequences of each
// micro-batch, each replica an equal share (so the replica count divides
// `sequences`). The sets of a stage process the whole micro-batch: their
// sequences sum to B.
struct ReplicaSet {
  std::string device;         // the group's device name (checked on load)
  int group = 0;
  int first_gpu = 0;
  int gpus = 0;               // tp * cp * its replicas
  int sequences = 0;          // of each micro-batch, split evenly over its replicas
};

struct StagePlan {
  // One-device stage: its group, device and GPUs. A stage with replica
  // sets holds its first set's here (code that names one device per stage
  // names that one) and its GPUs are the sets' together.
  int group = 0;              // index into ClusterSpec::groups
  std::string device;         // that group's device name (checked on load)
  int first_gpu = 0;          // offset of the stage's first GPU inside its group
  int gpus = 0;               // tp * cp * dp
  int tp = 1;
  int dp = 1;
  int layer_begin = 0;        // [layer_begin, layer_end) of the model's layers
  int layer_end = 0;
  Recompute recompute = Recompute::none;
  int cp = 1;                 // context parallel: each sequence split over cp GPUs (ring attention)
  // The nodes a plan file says the stage's GPUs touch (0: not said, as in
  // plans built in code): written for people reading the file, checked
  // against first_gpu and gpus on load, never used to place anything.
  int stated_nodes = 0;
  // Empty: every replica on `device`, each B / dp sequences. Otherwise the
  // stage's replicas in sets of their own device and share; dp is their
  // total replica count and gpus their total GPUs.
  std::vector<ReplicaSet> replicas;
  // Interleaved (the plan's vpp > 1): the stage's layers in each of its vpp
  // chunks where a plan file states them (Megatron-Core's layout runs any
  // cut: the export writes it, the report's schedule draws it). Empty: the
  // even cut (chunk_layers), which searches and estimates build. Rule:
  // chunks_violation.
  std::vector<int> chunks;

  int num_layers() const { return layer_end - layer_begin; }
  // Layers of chunk c of vpp: the stated cut, else the even one.
  int chunk(int vpp, int c) const {
    return chunks.empty() ? chunk_layers(num_layers(), vpp, c) : chunks.at(c);
  }
  bool has_replica_sets() const { return !replicas.empty(); }
  // Replicas of set k (gpus / (tp * cp)).
  int set_replicas(std::size_t k) const { return replicas.at(k).gpus / (tp * cp); }
  // The stage's device types: its own, or its sets' in order of first use
  // joined by '+' ("a100-40gb+v100-32gb"): what a one-line description of
  // the stage names.
  std::string devices() const {
    if (!has_replica_sets()) return device;
    std::string out;
    for (const auto& r : replicas)
      if (("+" + out + "+").find("+" + r.device + "+") == std::string::npos) out += (out.empty() ? "" : "+") + r.device;
    return out;
  }
  // Whether the sets are not all of one device type.
  bool mixes_devices() const {
    for (const auto& r : replicas)
      if (r.device != replicas.front().device) return true;
    return false;
  }
};

// Makes `s` the stage of these replica sets: its dp and gpus their totals,
// its group, device and first GPU the first set's. `s.tp` and `s.cp` must
// be set first.
inline void set_replica_sets(StagePlan& s, std::vector<ReplicaSet> sets) {
  s.replicas = std::move(sets);
  s.gpus = 0;
  for (const auto& r : s.replicas) s.gpus += r.gpus;
  s.dp = s.gpus / (s.tp * s.cp);
  if (s.replicas.empty()) return;
  s.group = s.replicas.front().group;
  s.device = s.replicas.front().device;
  s.first_gpu = s.replicas.front().first_gpu;
}

// A stage's replicas as its labels count them: "4", or per replica set in
// the plan's order, "2+2".
inline std::string replica_counts(const StagePlan& s) {
  if (!s.has_replica_sets()) return std::to_string(s.dp);
  std::string out;
  for (std::size_t k = 0; k < s.replicas.size(); ++k) out += (k ? "+" : "") + std::to_string(s.set_replicas(k));
  return out;
}

// A stage in a few characters, as the pipeline summaries print it:
// "device:TPxDP" ("device:TPxCPxDP" with cp > 1); a stage of replica sets
// names each set's device and replica count, "a100-40gb+v100-32gb:1x(2+2)".
inline std::string stage_summary(const StagePlan& s) {
  std::string devices = s.device, replicas = replica_counts(s);
  if (s.has_replica_sets()) {
    devices.clear();
    for (std::size_t k = 0; k < s.replicas.size(); ++k) devices += (k ? "+" : "") + s.replicas[k].device;
    replicas = "(" + replicas + ")";
  }
  return devices + ":" + std::to_string(s.tp) + "x" + (s.cp > 1 ? std::to_string(s.cp) + "x" : "") + replicas;
}

// Per-GPU memory of one stage, bytes.
// Each component is what a GPU holds at its peak, which is in the backward
// pass of the last micro-batch in flight (cost/cost_model.hpp says how each
// is computed and from which source).
struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;       // the gradient buffer, in the gradient element type
  double optimizer = 0;       // master weights and optimizer moments
  double activations = 0;     // all micro-batches in flight, incl. recompute working set
  double logits = 0;          // last stage: logits + loss buffers
  double runtime = 0;         // CUDA context, kernels and NCCL communicator buffers
  double allocator = 0;       // caching-allocator fragmentation of the short-lived tensors
  double headroom = 0;        // the user's safety margin (training headroom_GiB)
  double total() const {
    return weights + gradients + optimizer + activations + logits + runtime + allocator + headroom;
  }
};

// Where a stage's compute times come from, best first: every op measured
// by a profile; some scaled from a profile's measurements of other
// configurations (cost/profile_correction.hpp); some from the analytic
// roofline alone.
enum class TimeSource { measured, corrected, analytic };
const char* to_string(TimeSource source);
std::optional<TimeSource> parse_time_source(std::string_view name);

struct StageEstimate {
  double forward_s = 0;       // one micro-batch: compute + tp communication
  double backward_s = 0;      // incl. recompute forward
  double p2p_s = 0;           // one micro-batch: send activation forward + gradient backward
  double dp_sync_s = 0;       // exposed gradient synchronization per iteration
  double optimizer_s = 0;     // optimizer step per iteration
  // Of forward_s and backward_s, what the embedding (first stage) or the
  // output layer and loss (last stage) take: interleaved, that work sits in
  // one chunk, the first stage's first or the last stage's last, and the
  // rest of the stage's time is shared by its chunks by their layers
  // (`layers`, cut as the plan cuts them: StagePlan::chunk). The report's
  // schedule (report/timeline.hpp) reads them.
  double edge_forward_s = 0;
  double edge_backward_s = 0;
  int layers = 0;
  MemoryBreakdown memory;
  double capacity_bytes = 0;  // device memory
  TimeSource time_source = TimeSource::analytic;  // the least measured of its layers and edges
  // Of its transformer layers alone: a profile of layers (no embedding or
  // output-layer rows) leaves a stage holding either end analytic by
  // time_source, its layers corrected; reports say both.
  TimeSource layers_source = TimeSource::analytic;
  double time_s() const { return forward_s + backward_s; }
  // What paces the 1F1B steady state: compute plus the stage's own sends
  // (CostModel::iteration_time_1f1b).
  double pace_s() const { return time_s() + p2p_s; }
  double edge_s() const { return edge_forward_s + edge_backward_s; }
  // Once per iteration after the last backward: exposed sync and step.
  double tail_s() const { return dp_sync_s + optimizer_s; }
  bool fits() const { return memory.total() <= capacity_bytes; }
};

struct PredictedPerformance {
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;             // model FLOPs (no recompute) / peak of all GPUs used
  double hfu = 0;             // hardware FLOPs (with recompute) / peak
  double model_tflops_per_gpu = 0;
  double bubble_s = 0;
  std::vector<double> stage_time_s;      // forward + backward of one micro-batch
  std::vector<double> stage_memory_GiB;  // per GPU: the most one of the stage's GPUs holds
  bool fits = false;
  // The least measured of the stages' compute times: analytic without
  // profiles; with them, whether the plan was scored on measurements alone.
  TimeSource time_source = TimeSource::analytic;
};

struct SearchStats {
  std::string strategy;
  std::int64_t evaluated = 0;
  std::int64_t pruned = 0;
  std::int64_t cache_hits = 0;
  std::int64_t cache_misses = 0;
  double wall_s = 0;
  int ranks = 1;
  int threads = 1;
  // A proven lower bound on the iteration time of any plan in the space the
  // search covers exactly (autohaap: every skeleton's best split and
  // recompute, before cp and vpp are refined), and the relative gap
  // (best - bound) / best of the search's best plan: 0 when the search ran
  // to the end (bound = best), up to 1 when it stopped early with nothing
  // proven (bound 0: initialization stopped, or a strategy without bounds).
  double bound_s = 0;
  double gap = 1;
};

// The specs a plan was made for, as its file carries them, so that the file
// alone re-reads, re-scores and draws the plan wherever it is (measured
// profiles are not carried: pass --profiles again).
struct PlanSpecs {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
};

struct Plan {
  std::string model;          // model name
  std::string cluster;        // cluster name
  int global_batch = 0;
  int micro_batch_size = 0;   // B: sequences per micro-batch per pipeline
  int num_micro_batches = 0;  // m = global_batch / B
  // Model chunks per pipeline stage (Megatron's virtual pipeline size):
  // with vpp > 1 each stage's layers are split into vpp chunks (its
  // StagePlan::chunks), and the model runs chunk 0 of every stage in stage
  // order, then chunk 1, … (the interleaved 1F1B schedule, Narayanan et al.
  // 2021, Sec. 2.2.2).
  int vpp = 1;
  int zero = 0;
  std::vector<StagePlan> stages;
  PredictedPerformance predicted;
  SearchStats search;
  // Plan files only (binary archives leave it out: every rank has the
  // problem). Unset in plans built in code and in older plan files.
  std::optional<PlanSpecs> specs;

  int num_gpus() const {
    int n = 0;
    for (const auto& s : stages) n += s.gpus;
    return n;
  }
  // Layers per (stage, chunk) of the plan's vpp: StagePlan::chunk of each.
  std::vector<std::vector<int>> chunk_cut() const {
    std::vector<std::vector<int>> cut;
    for (const auto& s : stages) {
      cut.emplace_back();
      for (int c = 0; c < vpp; ++c) cut.back().push_back(s.chunk(vpp, c));
    }
    return cut;
  }
};

}  // namespace autohaap
