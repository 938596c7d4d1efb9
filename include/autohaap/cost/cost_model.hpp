// CostModel: the estimator. Given a Problem (model, cluster, training,
// optional measured profiles) it predicts, for any stage of any plan, the
// per-micro-batch forward/backward time, the pipeline and data-parallel
// communication, and the per-GPU memory; and for a whole plan the 1F1B
// iteration time, throughput, MFU and HFU.
//
// Execution settings: what a plan fixes for itself — its ZeRO stage and its
// global batch (Plan::zero, Plan::global_batch) — is read from the plan by
// every method that takes one (stage, estimate, hardware_flops_per_iteration),
// never from the training settings; a plan scored with a Problem whose
// TrainingSpec says otherwise is scored as the plan says. The methods without
// a plan (per layer, stage_memory by shape) are the search's questions and
// use the training settings' ZeRO stage, which every plan the search builds
// carries.
//
// Holds a reference to the Problem, which must outlive the CostModel; a
// temporary Problem is refused at compile time.
//
// Pure: no I/O, no threads, no MPI. Every method is const and thread-safe.
// Cost: O(layers in the stage) per stage estimate (O(1) for transformer
// families, whose layers are identical), O(stages) per plan. Layers priced
// one by one (a layer list, or layers timed apart by profiles) are each
// priced once per stage shape and micro-batch, then read from a table that
// the copies of a model share (a mutex guards it; a reader holds it for a
// lookup only).
#pragma once

#include <memory>
#include <vector>

#include "autohaap/cost/communication.hpp"
#include "autohaap/cost/cost_parameters.hpp"
#include "autohaap/cost/profile_correction.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// What a stage's per-layer cost depends on besides the layer itself.
struct StageShape {
  int group = 0;        // node group (device type, links)
  int tp = 1;
  int dp = 1;
  Recompute recompute = Recompute::none;
  int cp = 1;           // context-parallel GPUs per sequence
  int replicas() const { return dp * cp; }  // GPUs holding the same weights (the gradient reduction)
};

// Forward / backward time of one piece of work, one micro-batch, one GPU.
struct Timing {
  double forward_s = 0;
  double backward_s = 0;  // includes the recompute forward
  TimeSource source = TimeSource::measured;  // the least measured of its ops (no ops: measured)
  double total() const { return forward_s + backward_s; }
};

// What a stage spends once per iteration, after its last backward
// (StageEstimate::tail_s).
struct StageTail {
  double dp_sync_s = 0;    // exposed gradient sync (and tied-embedding all-reduce)
  double optimizer_s = 0;  // optimizer step
};

// Per-GPU memory that one layer adds to a stage.
struct LayerMemory {
  double static_bytes = 0;       // weights + gradients + optimizer states
  double activation_bytes = 0;   // per micro-batch in flight
  double working_bytes = 0;      // transient: recompute / backward working set of one layer
};

class CostModel {
 public:
  explicit CostModel(const Problem& problem, CostParameters parameters = {});
  // The model would keep a reference to a Problem about to be destroyed.
  explicit CostModel(const Problem&& problem, CostParameters parameters = {}) = delete;

  const Problem& problem() const { return problem_; }
  const CostParameters& parameters() const { return parameters_; }
  // What the problem's profiles say about the configurations they did not
  // measure: per (device, op), measured / analytic at the measured points
  // (empty without profiles). Fitted once, here.
  const ProfileCorrection& profile_correction() const { return correction_; }

  // --- per layer -------------------------------------------------------
  // One layer on one GPU of a stage with this shape; `micro_batch` is B,
  // the sequences of one pipeline micro-batch (each replica gets B / dp).
  Timing layer_timing(const StageShape& shape, int micro_batch, int layer) const;
  LayerMemory layer_memory(const StageShape& shape, int micro_batch, int layer) const;
  // Embedding (first stage) and final norm + LM head + loss (last stage).
  Timing edge_timing(const StageShape& shape, int micro_batch, bool first, bool last) const;
  LayerMemory edge_memory(const StageShape& shape, int micro_batch, bool first, bool last) const;

  // --- per stage ---------------------------------------------------------
  // Activation sets a stage holds at once, in micro-batches of its whole
  // layer range. 1F1B: min(p - i, m) for stage i of p (Narayanan et al.
  // 2021, Sec. 2.2). Interleaved (vpp > 1): Megatron-LM's schedule runs
  // (p - i - 1)·2 + (vpp - 1)·p warm-up forwards of one chunk (1/vpp of the
  // layers) before its first backward (megatron/core/pipeline_parallel/
  // schedules.py, forward_backward_pipelining_with_interleaving), so stage 0
  // holds p·(1 + (p - 1)/(p·vpp)) micro-batches (Korthikanti et al. 2022,
  // Sec. 4.2.3).
  static double in_flight(int stage_index, int num_stages, int num_micro_batches, int vpp = 1);
  // Full estimate of stage i of `plan` (placement decides the links). A
  // stage of replica sets (StagePlan::replicas) is as slow as its slowest
  // set and as full as its fullest one (cost_model.cpp says how).
  StageEstimate stage(const Plan& plan, int stage_index) const;
  // The estimate of each replica set of stage i, in the plan's order: each
  // on its own device with its own share of the micro-batch, the gradient
  // sync over all the stage's replicas. A one-device stage: stage() alone.
  std::vector<StageEstimate> replica_set_estimates(const Plan& plan, int stage_index) const;
  // Which of a stage's set estimates paces it: the one slowest through a
  // micro-batch with its pipeline sends (the first of equals). Not empty.
  static std::size_t pacing_set(const std::vector<StageEstimate>& sets);
  // Memory only, without a Plan: for memory-aware pruning. ZeRO stage:
  // the training settings' (what the search plans with), or `zero`.
  MemoryBreakdown stage_memory(const StageShape& shape, int micro_batch, int layer_begin, int layer_end,
                               int stage_index, int num_stages, int num_micro_batches, int vpp = 1) const;
  MemoryBreakdown stage_memory(const StageShape& shape, int zero, int micro_batch, int layer_begin, int layer_end,
                               int stage_index, int num_stages, int num_micro_batches, int vpp) const;
  double capacity_bytes(int group) const;
  // Whether stage_memory grows as a range takes more layers at either end,
  // for stage `stage_index` of `num_stages`: always, but for a layer list's
  // stage that sends under DeepSpeed, which holds its last layer's output
  // per micro-batch in flight (a narrow output after a wide one makes the
  // longer range the leaner).
  bool memory_grows_with_range(int stage_index, int num_stages) const;
  // The least tail (StageEstimate::tail_s) stage i of `plan`, a one-device
  // stage, can have holding `layers` layers of a transformer family (whose
  // layers hold alike parameters): its gradient sync and optimizer step as
  // stage() prices them, with the backward taken to hide all of the sync
  // that overlap_grad_reduce can hide. Non-decreasing in `layers` and
  // independent of the split and recompute: what a bound on every split of
  // a skeleton asks (LoadBalancer::tail_lower_bound).
  double stage_tail_floor(const Plan& plan, int stage_index, int layers) const;
  // One micro-batch of B sequences across the pipeline boundary from
  // one-device stage a, whose last layer is `last_layer_of_a`, to stage b:
  // the activation forward, or its gradient back (the same time). A stage's
  // p2p_s counts it once per boundary it has and chunk it runs. The same
  // for every layer of a transformer family, so independent of the split:
  // what a bound on every split of a skeleton asks (stage_speeds).
  double boundary_send_s(const StagePlan& a, const StagePlan& b, int last_layer_of_a, int micro_batch) const;
  // The least boundary_send_s between one-device stage a of a transformer
  // family and any one-device stage of another node group, a receiving
  // (`a_receives`: the boundary before a) or sending: what a bound asks
  // where the neighbour is not known yet (the walk's prefixes, every
  // arrangement of a group order's middle).
  double boundary_send_floor_s(const StagePlan& a, bool a_receives, int micro_batch) const;

  // The least time one GPU of group `group` could take for a whole
  // iteration's work on its own: the forward and backward of every layer,
  // the embedding and the head for the training's global batch, without
  // recompute, each op at the floor a measured profile point must exceed
  // too (its FLOPs at the fastest matrix peak the training's precision
  // allows on the device, a causal attention core's at half). No estimate prices an op below it, so no plan on the
  // GPUs of groups G finishes an iteration in less than
  // 1 / Σ_{g in G} (gpus_g / iteration_floor_s(g)).
  double iteration_floor_s(int group) const;

  // --- per plan ------------------------------------------------------------
  PredictedPerformance estimate(const Plan& plan) const;
  // 1F1B with unequal stages (DESIGN.md "Iteration time"), interleaved
  // over vpp chunks per stage.
  static double iteration_time_1f1b(const std::vector<StageEstimate>& stages, int num_micro_batches, int vpp = 1);

  // FLOPs of one iteration of `global_batch` sequences (without: the
  // training settings'): model FLOPs (forward + backward, no recompute);
  // and of a plan's iteration, hardware FLOPs (with the recompute forward of
  // each stage's mode).
  double model_flops_per_iteration(int global_batch) const;
  double model_flops_per_iteration() const { return model_flops_per_iteration(problem_.training.global_batch); }
  double hardware_flops_per_iteration(const Plan& plan) const;

 private:
  ProfileCorrection fit_profile_correction() const;
  // Stage i of `plan` run as the one-device stage `s` with micro-batches of
  // B sequences; the gradient sync over `dp_link` where given, else over
  // the link s's own placement implies.
  StageEstimate stage_part(const Plan& plan, int stage_index, const StagePlan& s, int B, const Link* dp_link) const;
  // The link a one-device stage's gradient reduction runs over.
  Link stage_dp_link(const StagePlan& s) const;
  // Stage i's tail holding `params` parameters a tp rank (ZeRO stage
  // `zero`), its last backward `backward_s` long, its gradients reduced
  // over `dp_link`: one formula for stage() and stage_tail_floor.
  StageTail stage_tail(const Plan& plan, int stage_index, const StagePlan& s, int zero, double params,
                       double backward_s, const Link& dp_link) const;
  // layer_timing of every layer at this shape and B, computed on the first
  // question: a stage of n layers priced one by one is otherwise n layer
  // pricings per estimate, and a search asks for stages · layers² of them
  // (a 1,024-layer list: 6.6 minutes on one thread).
  struct LayerTimeTable;
  std::shared_ptr<const std::vector<Timing>> layer_timings(const StageShape& shape, int micro_batch) const;
  // The model as a stage of tensor-parallel degree `tp` holds its
  // embedding and output layer: under Megatron-LM and Megatron-DeepSpeed
  // the vocabulary padded to a multiple of 128·tp (their
  // --make-vocab-size-divisible-by, default 128, times tp:
  // _vocab_size_with_padding), so that every tp rank holds an equal shard
  // of whole 128-row blocks; PyTorch (fsdp) keeps the model's own. GPT-3's
  // 50,257 are 51,200 at tp 8. The layers are the model's.
  const ModelSpec& edge_model(int tp) const;

  const Problem& problem_;
  CostParameters parameters_;
  ProfileCorrection correction_;
  // Every layer costs the same: a transformer (not a layer list) priced
  // without profiles, which could time layers apart.
  bool identical_layers_ = false;
  std::shared_ptr<LayerTimeTable> layer_times_;  // shared by copies: the same problem
  std::vector<ModelSpec> edge_models_;           // edge_model(tp) at [tp], from 1 to the largest tp allowed
};

}  // namespace autohaap
