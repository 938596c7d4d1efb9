#include "autohaap/cost/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "autohaap/cost/communication.hpp"
#include "autohaap/cost/layer_work.hpp"

namespace autohaap {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Bytes per parameter kept by mixed-precision training (Rajbhandari et al.
// 2020, "ZeRO", Sec. 3.1: 2 + 2 + K with K = 12 for Adam: fp32 master
// weights, momentum and variance). Pure fp32 training keeps no master copy.
struct StateBytes {
  double weights, gradients, optimizer;
};

StateBytes state_bytes(const TrainingSpec& t) {
  const bool fp32 = t.precision == Precision::fp32;
  const double w = fp32 ? 4 : 2;
  const double moments = t.optimizer == Optimizer::adam ? 8 : 4;  // Adam: m and v; SGD: momentum
  return {w, w, moments + (fp32 ? 0 : 4)};
}

// Optimizer step: a streaming pass over the shard this GPU owns. Adam reads
// the gradient, reads and writes master weights, m and v, and writes the
// 16-bit weights: 2 + 8 + 8 + 8 + 2 = 28 bytes per parameter; SGD with
// momentum 20.
double optimizer_bytes_per_param(const TrainingSpec& t) { return t.optimizer == Optimizer::adam ? 28 : 20; }

bool crosses_node(int first_gpu, int gpus, int gpus_per_node) {
  return first_gpu / gpus_per_node != (first_gpu + gpus - 1) / gpus_per_node;
}

}  // namespace

CostModel::CostModel(const Problem& problem, CostParameters parameters)
    : problem_(problem), parameters_(parameters) {}

int CostModel::in_flight(int stage_index, int num_stages, int num_micro_batches) {
  return std::max(1, std::min(num_stages - stage_index, num_micro_batches));
}

double CostModel::capacity_bytes(int group) const {
  return problem_.cluster.groups.at(group).device.memory_GiB * kGiB;
}

// --------------------------------------------------------------------------
// Time of work on one GPU.

namespace {

double peak_flops(const DeviceSpec& d, Precision p) {
  return (p == Precision::fp32 ? d.peak_fp32_tflops : d.peak_tflops) * 1e12;
}

// Roofline (Williams et al. 2009): an op is bound by compute or by memory
// traffic, each at its achievable fraction of peak.
double roofline_s(const DeviceSpec& d, Precision p, const OpWork& op) {
  double t = 0;
  if (op.flops > 0) {
    const double eff = op.gemm_flops > 0 ? gemm_efficiency(d, op.gemm_flops / 1e9) : 1.0;
    t = op.flops / (peak_flops(d, p) * eff);
  }
  if (op.bytes > 0) t = std::max(t, op.bytes / (d.hbm_GBps * 1e9 * d.memory_efficiency));
  return t;
}

struct WorkTime {
  double forward = 0, backward = 0, selective_replay = 0;
};

}  // namespace

// Forward/backward time of one layer's (or edge's) ops, each taken from the
// profile table when measured, else from the roofline; backward = 2x forward
// (two GEMMs per forward GEMM: input and weight gradients) unless measured.
static WorkTime work_time(const Problem& pb, const DeviceSpec& d, const LayerWork& w, const BatchShape& x,
                          int layer) {
  WorkTime out;
  ProfileKey key{d.name, "", x.tp, static_cast<int>(std::lround(x.sequences)), x.seq_len, layer};
  const bool profiled = !pb.profiles.empty();
  if (profiled) {
    key.op = "layer";
    if (auto f = pb.profiles.lookup(key)) {
      out.forward = *f;
      key.op = "layer_backward";
      auto b = pb.profiles.lookup(key);
      out.backward = b ? *b : 2 * *f;
      out.selective_replay = w.selective_op >= 0 ? out.forward * 0.1 : 0.0;
      return out;
    }
  }
  for (int i = 0; i < LayerWork::kOps; ++i) {
    const OpWork& op = w.ops[i];
    if (op.flops <= 0 && op.bytes <= 0) continue;
    double f = -1, b = -1;
    if (profiled) {
      key.op = op.name;
      if (auto v = pb.profiles.lookup(key)) f = *v;
      key.op = std::string(op.name) + "_backward";
      if (auto v = pb.profiles.lookup(key)) b = *v;
    }
    if (f < 0) f = roofline_s(d, pb.training.precision, op);
    if (b < 0) b = 2 * f;
    out.forward += f;
    out.backward += b;
    if (i == w.selective_op) out.selective_replay = f;
  }
  return out;
}

namespace {

BatchShape batch_shape(const Problem& pb, const StageShape& s, int micro_batch) {
  BatchShape x;
  x.sequences = static_cast<double>(micro_batch) / s.dp;
  x.seq_len = pb.seq_len();
  x.tp = s.tp;
  x.element_bytes = bytes_per_element(pb.training.precision);
  x.sequence_parallel = pb.training.sequence_parallel && s.tp > 1;
  return x;
}

}  // namespace

// Links, each at its achievable bandwidth.
static Link tp_link(const NodeGroup& g, const CostParameters& c) {
  return {g.intra_node_GBps * c.nvlink_efficiency, g.intra_node_latency_us};
}
static Link inter_node_link(const NodeGroup& g, const CostParameters& c) {
  return {g.inter_node_GBps * c.network_efficiency, g.inter_node_latency_us};
}

Timing CostModel::layer_timing(const StageShape& shape, int micro_batch, int layer) const {
  const NodeGroup& g = problem_.cluster.groups.at(shape.group);
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const WorkTime w = work_time(problem_, g.device, layer_forward_work(problem_.model, layer, x), x, layer);

  // Tensor parallelism: two all-reduces of the b·s·h layer activations in the
  // forward (after attention and after the MLP) and two in the backward
  // (Shoeybi et al. 2019, Megatron-LM, Fig. 4); with sequence parallelism the
  // same volume moves as all-gather + reduce-scatter (Korthikanti et al. 2022).
  double tp_comm = 0;
  if (shape.tp > 1) {
    const double bytes = layer_output_bytes(problem_.model, layer, x.sequences, x.seq_len, x.element_bytes);
    tp_comm = 2 * ring_allreduce_s(bytes, shape.tp, tp_link(g, parameters_));
  }
  const double overhead = parameters_.per_layer_overhead_s;
  Timing t;
  t.forward_s = w.forward + tp_comm + overhead;
  t.backward_s = w.backward + tp_comm + overhead;
  if (shape.recompute == Recompute::full) t.backward_s += t.forward_s;              // replay the whole forward
  if (shape.recompute == Recompute::selective) t.backward_s += w.selective_replay;  // replay the attention core
  return t;
}

Timing CostModel::edge_timing(const StageShape& shape, int micro_batch, bool first, bool last) const {
  const NodeGroup& g = problem_.cluster.groups.at(shape.group);
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  Timing t;
  if (first) {
    const WorkTime w = work_time(problem_, g.device, embedding_forward_work(problem_.model, x), x, -1);
    t.forward_s += w.forward;
    t.backward_s += w.backward;
  }
  if (last) {
    const WorkTime w = work_time(problem_, g.device, head_forward_work(problem_.model, x), x, -1);
    t.forward_s += w.forward;
    t.backward_s += w.backward;
  }
  return t;
}

LayerMemory CostModel::layer_memory(const StageShape& shape, int micro_batch, int layer) const {
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const TrainingSpec& tr = problem_.training;
  const StateBytes sb = state_bytes(tr);
  const double params = layer_params(problem_.model, layer) / shape.tp;
  const double dp = shape.dp;
  LayerMemory m;
  m.static_bytes = params * (sb.weights / (tr.zero >= 3 ? dp : 1.0) + sb.gradients / (tr.zero >= 2 ? dp : 1.0) +
                             sb.optimizer / (tr.zero >= 1 ? dp : 1.0));
  m.activation_bytes = layer_activation_bytes(problem_.model, layer, x, shape.recompute);
  m.working_bytes = layer_working_bytes(problem_.model, layer, x, shape.recompute);
  return m;
}

LayerMemory CostModel::edge_memory(const StageShape& shape, int micro_batch, bool first, bool last) const {
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const TrainingSpec& tr = problem_.training;
  const StateBytes sb = state_bytes(tr);
  double params = 0;
  if (first) params += embedding_params(problem_.model);
  if (last) params += head_params(problem_.model, first);
  params /= shape.tp;
  const double dp = shape.dp;
  LayerMemory m;
  m.static_bytes = params * (sb.weights / (tr.zero >= 3 ? dp : 1.0) + sb.gradients / (tr.zero >= 2 ? dp : 1.0) +
                             sb.optimizer / (tr.zero >= 1 ? dp : 1.0));
  // The last stage runs each micro-batch's loss and backward back to back:
  // one set of logits at a time.
  m.working_bytes = last ? logits_bytes(problem_.model, x) : 0.0;
  return m;
}

MemoryBreakdown CostModel::stage_memory(const StageShape& shape, int micro_batch, int layer_begin, int layer_end,
                                        int stage_index, int num_stages, int num_micro_batches) const {
  const TrainingSpec& tr = problem_.training;
  const StateBytes sb = state_bytes(tr);
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const bool first = stage_index == 0, last = stage_index == num_stages - 1;

  double params = 0, activations = 0, working = 0;
  for (int l = layer_begin; l < layer_end; ++l) {
    params += layer_params(problem_.model, l);
    activations += layer_activation_bytes(problem_.model, l, x, shape.recompute);
    working = std::max(working, layer_working_bytes(problem_.model, l, x, shape.recompute));
  }
  if (first) params += embedding_params(problem_.model);
  if (last) params += head_params(problem_.model, first);
  params /= shape.tp;

  const double dp = shape.dp;
  MemoryBreakdown m;
  m.weights = params * sb.weights / (tr.zero >= 3 ? dp : 1.0);
  m.gradients = params * sb.gradients / (tr.zero >= 2 ? dp : 1.0);
  m.optimizer = params * sb.optimizer / (tr.zero >= 1 ? dp : 1.0);
  m.activations = activations * in_flight(stage_index, num_stages, num_micro_batches) + working;
  m.logits = last ? logits_bytes(problem_.model, x) : 0.0;
  m.headroom = tr.headroom_GiB * kGiB;
  return m;
}

// --------------------------------------------------------------------------
// Whole stages and plans.

namespace {

StageShape shape_of(const StagePlan& s) { return {s.group, s.tp, s.dp, s.recompute}; }

}  // namespace

// Link between the GPUs of two consecutive stages: inside one node
// (NVLink/PCIe), between nodes of one group (its NICs), or across the
// inter-group fabric.
static Link pipeline_link(const ClusterSpec& c, const StagePlan& a, const StagePlan& b, const CostParameters& p) {
  if (a.group != b.group) {
    return {c.inter_group_GBps * p.network_efficiency, c.inter_group_latency_us};
  }
  const NodeGroup& g = c.groups.at(a.group);
  const int gpn = g.gpus_per_node;
  const bool same_node = !crosses_node(a.first_gpu, a.gpus, gpn) && !crosses_node(b.first_gpu, b.gpus, gpn) &&
                         a.first_gpu / gpn == b.first_gpu / gpn;
  return same_node ? tp_link(g, p) : inter_node_link(g, p);
}

StageEstimate CostModel::stage(const Plan& plan, int i) const {
  const StagePlan& s = plan.stages.at(i);
  const int p = static_cast<int>(plan.stages.size());
  const NodeGroup& g = problem_.cluster.groups.at(s.group);
  const StageShape shape = shape_of(s);
  const int B = plan.micro_batch_size;
  const bool first = i == 0, last = i == p - 1;
  const TrainingSpec& tr = problem_.training;

  StageEstimate e;
  double params = 0;
  for (int l = s.layer_begin; l < s.layer_end; ++l) {
    const Timing t = layer_timing(shape, B, l);
    e.forward_s += t.forward_s;
    e.backward_s += t.backward_s;
    params += layer_params(problem_.model, l);
  }
  const Timing edge = edge_timing(shape, B, first, last);
  e.forward_s += edge.forward_s;
  e.backward_s += edge.backward_s;
  if (first) params += embedding_params(problem_.model);
  if (last) params += head_params(problem_.model, first);
  params /= s.tp;

  // Pipeline transfers of one micro-batch: the activation to the next stage
  // and the gradient to the previous one. When neighbours have different
  // GPU counts, the smaller side moves the larger share per GPU.
  const int seq = problem_.seq_len(), eb = bytes_per_element(tr.precision);
  auto boundary_s = [&](const StagePlan& a, const StagePlan& b, int last_layer_of_a) {
    const double bytes = layer_output_bytes(problem_.model, last_layer_of_a, B, seq, eb) / std::min(a.gpus, b.gpus);
    return point_to_point_s(bytes, pipeline_link(problem_.cluster, a, b, parameters_));
  };
  if (!last) e.p2p_s += boundary_s(s, plan.stages[i + 1], s.layer_end - 1);
  if (!first) e.p2p_s += boundary_s(plan.stages[i - 1], s, s.layer_begin - 1);

  // Data parallelism over the link the replicas share: NVLink when the whole
  // stage sits in one node, else the NICs.
  const Link dp_link = crosses_node(s.first_gpu, s.gpus, g.gpus_per_node) ? inter_node_link(g, parameters_)
                                                                          : tp_link(g, parameters_);
  const double grad_bytes = params * eb;
  if (tr.zero >= 3) {
    // ZeRO-3 (Rajbhandari et al. 2020, Sec. 7.2.2): every micro-batch
    // all-gathers the weights for the forward and again for the backward and
    // reduce-scatters the gradients: 1.5x the all-reduce volume, partly hidden
    // by prefetching.
    const double gather = ring_allgather_s(grad_bytes, s.dp, dp_link);
    const double scatter = ring_reduce_scatter_s(grad_bytes, s.dp, dp_link);
    const double x = parameters_.zero3_exposed_fraction;
    auto overlap = [x](double compute, double comm) {
      return std::max(compute, comm) + x * std::min(compute, comm);
    };
    e.forward_s = overlap(e.forward_s, gather);
    e.backward_s = overlap(e.backward_s, gather + scatter);
  } else {
    // All-reduce of the gradients (ZeRO-1/2: reduce-scatter + all-gather,
    // the same volume) once per iteration.
    e.dp_sync_s = (1.0 - parameters_.dp_overlap) * ring_allreduce_s(grad_bytes, s.dp, dp_link);
  }
  const double owned = params / (tr.zero >= 1 ? s.dp : 1);
  e.optimizer_s = owned * optimizer_bytes_per_param(tr) / (g.device.hbm_GBps * 1e9 * g.device.memory_efficiency);

  e.memory = stage_memory(shape, B, s.layer_begin, s.layer_end, i, p, plan.num_micro_batches);
  e.capacity_bytes = capacity_bytes(s.group);
  return e;
}

double CostModel::iteration_time_1f1b(const std::vector<StageEstimate>& stages, int m) {
  // 1F1B with unequal stages (Narayanan et al. 2021, Sec. 2.2, generalized):
  // the first micro-batch's forward and the last one's backward each cross
  // every stage once (fill and drain), and the m − 1 others are paced by the
  // slowest stage, including its own sends. Then the slowest stage's
  // exposed gradient sync and optimizer step.
  double sum = 0, pace = 0, p2p = 0, tail = 0;
  for (const StageEstimate& s : stages) {
    sum += s.time_s();
    pace = std::max(pace, s.time_s() + s.p2p_s);
    p2p += s.p2p_s;
    tail = std::max(tail, s.dp_sync_s + s.optimizer_s);
  }
  return sum + (m - 1) * pace + p2p + tail;
}

double CostModel::model_flops_per_iteration() const {
  // Forward + backward = 3 x forward (Narayanan et al. 2021, Sec. 5.1);
  // no recompute: model FLOPs as in MFU (Chowdhery et al. 2022, PaLM, App. B).
  const ModelSpec& m = problem_.model;
  const double batch = problem_.training.global_batch;
  const int s = problem_.seq_len();
  double f = head_forward_flops(m, batch, s);
  for (int l = 0; l < m.layers; ++l) f += layer_forward_flops(m, l, batch, s);
  return 3 * f;
}

double CostModel::hardware_flops_per_iteration(const Plan& plan) const {
  const ModelSpec& m = problem_.model;
  const double batch = plan.global_batch;
  const int s = problem_.seq_len();
  double f = 3 * head_forward_flops(m, batch, s);
  for (const StagePlan& st : plan.stages) {
    for (int l = st.layer_begin; l < st.layer_end; ++l) {
      const LayerWork w = layer_forward_work(m, l, BatchShape{batch, s, 1, 2, false});
      double replay = 0;
      if (st.recompute == Recompute::full) replay = w.total_flops();
      if (st.recompute == Recompute::selective && w.selective_op >= 0) replay = w.ops[w.selective_op].flops;
      f += 3 * w.total_flops() + replay;
    }
  }
  return f;
}

PredictedPerformance CostModel::estimate(const Plan& plan) const {
  PredictedPerformance out;
  std::vector<StageEstimate> stages;
  stages.reserve(plan.stages.size());
  out.fits = true;
  double peak = 0, max_time = 0, sum_time = 0;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    stages.push_back(stage(plan, i));
    const StageEstimate& e = stages.back();
    out.stage_time_s.push_back(e.time_s());
    out.stage_memory_GiB.push_back(e.memory.total() / kGiB);
    out.fits = out.fits && e.fits();
    max_time = std::max(max_time, e.time_s());
    sum_time += e.time_s();
    const StagePlan& s = plan.stages[i];
    peak += s.gpus * peak_flops(problem_.cluster.groups.at(s.group).device, problem_.training.precision);
  }
  out.iteration_time_s = iteration_time_1f1b(stages, plan.num_micro_batches);
  out.bubble_s = sum_time - max_time;
  const double tokens = static_cast<double>(plan.global_batch) * problem_.seq_len();
  out.tokens_per_s = tokens / out.iteration_time_s;
  const double model_flops = model_flops_per_iteration() * plan.global_batch / problem_.training.global_batch;
  out.mfu = model_flops / (out.iteration_time_s * peak);
  out.hfu = hardware_flops_per_iteration(plan) / (out.iteration_time_s * peak);
  out.model_tflops_per_gpu = model_flops / out.iteration_time_s / plan.num_gpus() / 1e12;
  return out;
}

}  // namespace autohaap
