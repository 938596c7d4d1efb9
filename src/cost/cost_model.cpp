#include "autohaap/cost/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "autohaap/cost/communication.hpp"
#include "autohaap/cost/layer_work.hpp"
#include "autohaap/error.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/units.hpp"

namespace autohaap {
namespace {

// Bytes per parameter kept by mixed-precision training (Rajbhandari et al.
// 2020, "ZeRO", Sec. 3.1: 2 + 2 + K with K = 12 for Adam: fp32 master
// weights, momentum and variance). The gradient buffer is in the gradient
// element type: fp32 for bf16 training in Megatron-LM ("18 bytes per
// parameter without the distributed optimizer, 6 + 12/d with it",
// Megatron-LM docs/source/distrib_optimizer.md). Pure fp32 training keeps
// no master copy. ZeRO stage z shards the optimizer states (z >= 1), the
// gradients (z >= 2) and the weights (z >= 3) over the dp replicas.
//
// DeepSpeed's optimizers keep the 16-bit gradient autograd writes into each
// parameter's .grad beside their own fp32 gradients: the whole fp32 buffer
// with the bf16 optimizer (DeepSpeed runtime/bf16_optimizer.py), the owned
// fp32 partition with the ZeRO-1/2 fp16 optimizer (runtime/zero/
// stage_1_and_2.py, single_partition_of_fp32_groups), a full fp32 copy
// without ZeRO (runtime/fp16/fused_optimizer.py). Megatron-LM accumulates
// straight into its fp32 main_grad buffer (gradient-accumulation fusion).
struct StateBytes {
  double weights, gradients, optimizer;  // per parameter of the stage, after sharding
};

StateBytes state_bytes(const TrainingSpec& t, int zero, int dp) {
  const bool fp32 = full_precision(t.precision);
  const double w = fp32 ? 4 : 2;
  const double moments = optimizer_moment_bytes(t.optimizer);
  const double g = bytes_per_element(grad_precision(t));
  auto shard = [&](int stage) { return zero >= stage ? static_cast<double>(dp) : 1.0; };
  StateBytes b{w / shard(3), g / shard(2), (moments + (fp32 ? 0 : 4)) / shard(1)};
  if (t.runtime == Runtime::deepspeed && !fp32) {
    const bool bf16_optimizer = grad_precision(t) == Precision::fp32;
    b.gradients = w / shard(2) + (bf16_optimizer ? 4 / shard(2) : 4 / shard(1));
  }
  return b;
}

double static_bytes_per_param(const StateBytes& b) { return b.weights + b.gradients + b.optimizer; }

// DeepSpeed's reduce_bucket_size default, elements: the gradients its ZeRO
// optimizers reduce at once.
constexpr double kDeepSpeedReduceBucket = 5e8;

// Optimizer step: a streaming pass over the shard this GPU owns. It reads
// the gradient (g bytes, its element size), reads and writes the fp32
// master weights (8) and the moments (2 x their bytes), and writes the
// 16-bit weights (2): Adam g + 26, 8-bit Adam g + 14, SGD with momentum
// g + 18 bytes per parameter.
double optimizer_bytes_per_param(const TrainingSpec& t) {
  return bytes_per_element(grad_precision(t)) + 8 + 2 * optimizer_moment_bytes(t.optimizer) + 2;
}

// The step over `params` parameters on one GPU of `device`, at its
// achievable memory bandwidth.
double optimizer_step_s(double params, const TrainingSpec& t, const DeviceSpec& device) {
  return params * optimizer_bytes_per_param(t) / (device.hbm_GBps * 1e9 * device.memory_efficiency);
}

// Accumulating each micro-batch's gradients into the buffer the step reads,
// as a pass of its own over the stage's gradients, where the runtime does
// not fuse it into the weight-gradient GEMM. DeepSpeed's ZeRO-0/1 engines let
// autograd add every micro-batch's gradient into the parameter's .grad in
// place (PyTorch's AccumulateGrad: read both, write one, 3 x 2 bytes a
// parameter in 16 bits, 3 x 4 in fp32); its bf16 optimizer upcasts each
// micro-batch's bf16 .grad to a temporary and adds it into its fp32 buffer
// (runtime/bf16_optimizer.py, update_hp_grads: read 2, write and read the
// temporary 4 + 4, read and write the buffer 4 + 4 = 18 bytes). Megatron-LM
// accumulates inside the weight-gradient GEMM (gradient-accumulation fusion)
// and FSDP into the 1/dp shard left after each reduce-scatter; DeepSpeed's
// ZeRO-2/3 reduce every micro-batch into their shard. None of those makes a
// pass over the stage's whole gradient.
double gradient_accumulation_s(double params, const TrainingSpec& t, int zero, const DeviceSpec& device) {
  if (t.runtime != Runtime::deepspeed || zero >= 2) return 0;
  const double bytes = full_precision(t.precision)               ? 12.0
                       : grad_precision(t) == Precision::fp32 ? 18.0
                                                              : 6.0;
  return params * bytes / (device.hbm_GBps * 1e9 * device.memory_efficiency);
}

// Earlier micro-batches' 16-bit logits the runtime still holds on the last
// stage while the next loss runs. DeepSpeed's pipeline engine (which
// Megatron-DeepSpeed runs every model through, pp = 1 included, unless
// --no-pipeline-parallel) stores each forward's output in a pipe buffer and
// frees it after the backward on every stage but the last, whose backward
// returns first (deepspeed/runtime/pipe/engine.py, _exec_backward_pass); the
// last stage has 2 buffers (schedule.py, num_pipe_buffers: max(2, ...)), so
// while one micro-batch's loss runs, its logits and the previous one's stay.
// Megatron-LM's last stage returns the loss, not the logits; FSDP has no
// pipeline buffers.
int logits_held_by_runtime(const TrainingSpec& t) { return t.runtime == Runtime::deepspeed ? 2 : 0; }

// Bytes a logit's loss holds beside the 16-bit logit at its peak, per
// element of s·b·v/t.
// - A fused loss writes the gradient into the logits in place: 0.
// - Megatron-LM's vocab-parallel cross-entropy (DeepSpeed runs the same)
//   takes an fp32 copy, computes its exp and softmax in place and keeps it
//   for the gradient (Korthikanti et al. 2022, Sec. 4.3: 4·s·b·v/t): 4.
//   The forward holds the logits and the copy, the backward the fp32
//   gradient and its 16-bit cast.
// - PyTorch's cross_entropy on the fp32 upcast, as FSDP trainers call it
//   (torchtitan's loss: cross_entropy(pred.float(), labels)): log_softmax
//   writes a new fp32 tensor and keeps it for the backward, whose
//   nll_loss gradient and input gradient are two more fp32 tensors of the
//   same size. Forward peak: logits 2 + copy 4 + log-probabilities 4 = 10;
//   backward: 3 x 4 = 12, i.e. 10 beside the 16-bit logits.
double loss_bytes_per_logit(const TrainingSpec& t) {
  if (t.fused_cross_entropy) return 0.0;
  return t.runtime == Runtime::fsdp ? 10.0 : 4.0;
}

// Whether the layers are PyTorch's eager modules (BatchShape::eager_modules:
// what they keep, and `selective` as op-level checkpointing): under the
// FSDP trainers, which run them.
bool eager_modules(const TrainingSpec& t) { return t.runtime == Runtime::fsdp; }

bool crosses_node(int first_gpu, int gpus, int gpus_per_node) {
  return first_gpu / gpus_per_node != (first_gpu + gpus - 1) / gpus_per_node;
}

// The most of the GPUs [first_gpu, first_gpu + gpus) that one node holds: a
// range that starts or ends inside a node holds less of it (a stage of 8
// GPUs from GPU 4 on nodes of 8 has 4 on each of two nodes, and its dp
// ring leaves each node, where one aligned on a node never does).
int most_gpus_on_one_node(int first_gpu, int gpus, int gpus_per_node) {
  const int first_node = first_gpu / gpus_per_node, last_node = (first_gpu + gpus - 1) / gpus_per_node;
  if (first_node == last_node) return gpus;
  if (last_node - first_node >= 2) return gpus_per_node;  // a whole node between
  return std::max((first_node + 1) * gpus_per_node - first_gpu, first_gpu + gpus - last_node * gpus_per_node);
}

// The replicas of a data-parallel ring that share one node, for a stage (or
// one group's replica sets) on GPUs [first_gpu, first_gpu + gpus) with
// `replicas` replicas of tp GPUs each.
int replicas_per_node(int first_gpu, int gpus, int tp, int replicas, int gpus_per_node) {
  return std::max(1, std::min(replicas, most_gpus_on_one_node(first_gpu, gpus, gpus_per_node) / tp));
}

}  // namespace

// The per-layer times of layers priced one by one, by what a layer's time
// depends on: its stage's group, tp, dp, cp and recompute, and B.
struct CostModel::LayerTimeTable {
  using Key = std::tuple<int, int, int, int, int, int>;
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const std::vector<Timing>>> times;
};

CostModel::CostModel(const Problem& problem, CostParameters parameters)
    : problem_(problem), parameters_(parameters), layer_times_(std::make_shared<LayerTimeTable>()) {
  if (!problem_.profiles.empty()) correction_ = fit_profile_correction();
  identical_layers_ = problem_.model.family != ModelFamily::generic && problem_.profiles.empty();
  // Every tp a stage may take divides the heads and stays inside a node.
  const ModelSpec& m = problem_.model;
  int largest_tp = 1;
  for (const NodeGroup& g : problem_.cluster.groups) largest_tp = std::max(largest_tp, g.gpus_per_node);
  if (m.family != ModelFamily::generic) largest_tp = std::min(largest_tp, std::max(1, m.heads));
  const bool pads = problem_.training.runtime != Runtime::fsdp && m.family != ModelFamily::generic;
  edge_models_.reserve(static_cast<std::size_t>(largest_tp) + 1);
  edge_models_.push_back(m);  // [0]: unused
  for (int tp = 1; tp <= largest_tp; ++tp) {
    ModelSpec padded = m;
    if (pads) {
      const long long multiple = 128LL * tp;
      padded.vocab = static_cast<int>(std::min<long long>((m.vocab + multiple - 1) / multiple * multiple,
                                                          std::numeric_limits<int>::max()));
    }
    edge_models_.push_back(std::move(padded));
  }
}

const ModelSpec& CostModel::edge_model(int tp) const {
  return tp >= 1 && tp < static_cast<int>(edge_models_.size()) ? edge_models_[static_cast<std::size_t>(tp)]
                                                                 : problem_.model;
}

std::shared_ptr<const std::vector<Timing>> CostModel::layer_timings(const StageShape& shape, int micro_batch) const {
  const LayerTimeTable::Key key{shape.group, shape.tp, shape.dp, shape.cp, static_cast<int>(shape.recompute),
                                micro_batch};
  {
    const std::lock_guard<std::mutex> lock(layer_times_->mutex);
    if (const auto found = layer_times_->times.find(key); found != layer_times_->times.end()) return found->second;
  }
  // Computed outside the lock; two threads asking at once compute the same
  // values, and the first to insert wins.
  auto times = std::make_shared<std::vector<Timing>>();
  times->reserve(problem_.model.layers);
  for (int l = 0; l < problem_.model.layers; ++l) times->push_back(layer_timing(shape, micro_batch, l));
  const std::lock_guard<std::mutex> lock(layer_times_->mutex);
  return layer_times_->times.emplace(key, std::move(times)).first->second;
}

double CostModel::in_flight(int stage_index, int num_stages, int num_micro_batches, int vpp) {
  if (vpp <= 1) return std::max(1, std::min(num_stages - stage_index, num_micro_batches));
  const double chunks = std::min<double>((num_stages - stage_index - 1) * 2.0 + (vpp - 1.0) * num_stages + 1,
                                         static_cast<double>(num_micro_batches) * vpp);
  return chunks / vpp;
}

double CostModel::capacity_bytes(int group) const {
  return problem_.cluster.groups.at(group).device.memory_GiB * kGiB;
}

// --------------------------------------------------------------------------
// Time of work on one GPU.

namespace {

// The peak a matrix product runs at: FP8 for the linear layers of fp8
// training (OpWork::fp8_gemm is set only where the device has FP8), TF32
// tensor cores for tf32 (the FP32 cores where the device has none), the
// CUDA cores for fp32, the 16-bit tensor cores otherwise.
double matmul_peak_tflops(const DeviceSpec& d, Precision p, const OpWork& op) {
  if (op.fp8_gemm) return d.peak_fp8_tflops;
  if (op.cuda_cores) return d.peak_fp32_tflops;
  switch (p) {
    case Precision::fp32: return d.peak_fp32_tflops;
    case Precision::tf32: return d.peak_tf32_tflops > 0 ? d.peak_tf32_tflops : d.peak_fp32_tflops;
    default: return d.peak_tflops;
  }
}

// The fastest matrix peak the training's precision lets `op` run at: the
// one it is priced at, and for fp8 training the FP8 peak for every op (a
// Transformer Engine run may keep more in FP8 than the model prices), for
// fp32 the TF32 one too (PyTorch may allow TF32 matmuls). Not FP8 for a
// 16-bit training: a point that needs it was measured under another
// precision, and fitted it would predict an MFU far above 1.
double floor_peak_tflops(const DeviceSpec& d, Precision p, const OpWork& op) {
  const double priced = matmul_peak_tflops(d, p, op);
  if (p == Precision::fp8) return std::max(priced, d.peak_fp8_tflops);
  if (p == Precision::fp32) return std::max(priced, d.peak_tf32_tflops);
  return priced;
}

// The least time `op` can take on `d`: its FLOPs at the fastest matrix peak
// the training's precision allows it (floor_peak_tflops), the attention
// core's at half (a causal kernel skips the masked half). Bytes are left
// out: what a kernel reads depends on fusion the model file may not
// describe (FlashAttention or not), and a floor must never refuse a real
// measurement. A point below it claims more than the hardware can do.
double peak_floor_s(const DeviceSpec& d, const TrainingSpec& training, const OpWork& op, bool backward) {
  const double scale = backward ? op.backward_ratio : 1.0;
  const bool attention_core = op.fused_attention || std::string_view(op.name) == "attn_core";
  const double flops = op.flops * scale * (attention_core ? 0.5 : 1.0);
  const double peak = floor_peak_tflops(d, training.precision, op);
  return flops > 0 && peak > 0 ? flops / (peak * 1e12) : 0.0;
}

// The floor of a layer's (or edge's) pass: its ops' peak_floor_s.
double work_floor_s(const DeviceSpec& d, const TrainingSpec& training, const LayerWork& w, bool backward) {
  double floor_s = 0;
  for (const OpWork& op : w.ops) floor_s += peak_floor_s(d, training, op, backward);
  return floor_s;
}

// Milliseconds as a user wrote them, to four significant digits.
std::string format_ms(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4g", seconds * 1e3);
  return text;
}

// The peak MFU and HFU are measured against: the 16-bit tensor-core peak
// for fp8 training too (the convention of NeMo's and Megatron-LM's
// published MFU), the matrix peak in effect for fp32 and tf32.
double mfu_peak_flops(const DeviceSpec& d, Precision p) { return matmul_peak_tflops(d, p, OpWork{}) * 1e12; }

// Roofline (Williams et al. 2009): an op is bound by compute or by memory
// traffic, each at its achievable fraction of peak. The backward pass does
// `op.backward_ratio` times the forward's work at the same efficiency,
// except fused attention, whose backward kernel has its own.
// Fused attention on a causal model skips the score blocks above the
// diagonal: it executes half the FLOPs that the dense count 4·b·s²·h
// (which MFU keeps, as Megatron does) charges (Dao 2023, FlashAttention-2,
// Sec. 4.1 counts causal FLOPs the same way).
double roofline_s(const DeviceSpec& d, const TrainingSpec& training, const OpWork& op, bool backward) {
  const double scale = backward ? op.backward_ratio : 1.0;
  double t = 0;
  if (op.flops > 0) {
    const double peak = matmul_peak_tflops(d, training.precision, op);
    double eff, flops = op.flops * scale;
    if (op.fused_attention) {
      eff = attention_efficiency(d, training, backward) * op.attention_block_efficiency;
      flops *= 0.5;
    } else {
      eff = op.gemm_flops > 0 ? gemm_efficiency_at(d, op.gemm_flops / 1e9, peak) : 1.0;
    }
    t = flops / (peak * 1e12 * eff);
  }
  if (op.bytes > 0) t = std::max(t, op.bytes * scale / (d.hbm_GBps * 1e9 * d.memory_efficiency));
  return t;
}

struct WorkTime {
  double forward = 0, backward = 0, selective_replay = 0;
  double attention_forward = 0, attention_backward = 0;  // the attention core's share (hides cp's ring)
  bool whole_layer_measured = false;  // a profiled whole layer: includes its tp communication
  // A whole layer the profile measured elsewhere: its measured / analytic
  // factors, applied to the analytic layer with its tp communication.
  double layer_factor_forward = 1, layer_factor_backward = 1;
  TimeSource source = TimeSource::measured;
};

TimeSource worse(TimeSource a, TimeSource b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }

// Profiles as the cost model reads them: the measured table and what it
// says about the points it did not measure.
struct Measurements {
  const ProfileTable& table;
  const ProfileCorrection& correction;
};

}  // namespace

// Forward/backward time of one layer's (or edge's) ops. Each is taken from
// the profile table where measured; else from the roofline, scaled by the
// profile's correction factor for that device and op where it has one
// (cost/profile_correction.hpp). An unmeasured backward of a measured
// forward is the op's backward_ratio times it (layer_work.hpp). A whole
// measured `layer` (transformer layers only) replaces the parts; its
// unmeasured backward is its forward times the layer's analytic ratio.
static WorkTime work_time(const Measurements& ms, const TrainingSpec& training, const DeviceSpec& d, const LayerWork& w,
                          const BatchShape& x, int layer, bool is_layer) {
  WorkTime out;
  ProfileKey key{d.name, "", x.tp, static_cast<int>(std::lround(x.sequences)), x.seq_len, layer};
  // Profiles time whole sequences: a context-parallel GPU's share of one
  // is not what they measured (their factors still apply).
  const bool profiled = !ms.table.empty() && x.cp == 1;
  if (is_layer && profiled) {
    key.op = "layer";
    if (auto f = ms.table.lookup(key)) {
      out.forward = *f;
      key.op = "layer_backward";
      auto b = ms.table.lookup(key);
      if (b) {
        out.backward = *b;
      } else {
        // Unmeasured: the layer's own analytic backward / forward ratio
        // (its attention backward costs more than twice its forward), never
        // below the backward's floor (what a measured one must clear too).
        double forward = 0, backward = 0;
        for (const OpWork& op : w.ops) {
          if (op.flops <= 0 && op.bytes <= 0) continue;
          forward += roofline_s(d, training, op, false);
          backward += roofline_s(d, training, op, true);
        }
        out.backward = std::max(forward > 0 ? *f * backward / forward : 2 * *f, work_floor_s(d, training, w, true));
      }
      out.selective_replay = w.selective_op >= 0 ? out.forward * 0.1 : 0.0;
      out.whole_layer_measured = true;
      return out;
    }
  }
  bool layer_corrected = false;
  if (is_layer && !ms.correction.empty()) {
    if (auto f = ms.correction.factor(d.name, "layer")) {
      layer_corrected = true;
      out.layer_factor_forward = *f;
      out.layer_factor_backward = ms.correction.factor(d.name, "layer_backward").value_or(*f);
    }
  }
  // Per-op factors apply where the whole layer has none.
  const bool correcting = !ms.correction.empty() && !layer_corrected;
  for (int i = 0; i < LayerWork::kOps; ++i) {
    const OpWork& op = w.ops[i];
    if (op.flops <= 0 && op.bytes <= 0) continue;
    double f = -1, b = -1;
    TimeSource source = TimeSource::measured;
    if (profiled) {
      key.op = op.name;
      if (auto v = ms.table.lookup(key)) f = *v;
      key.op = std::string(op.name) + "_backward";
      if (auto v = ms.table.lookup(key)) b = *v;
    }
    // The roofline of one pass, times the profile's factor for this op
    // where it has one; the whole layer's factor is applied by the caller.
    auto unmeasured = [&](bool backward) {
      std::optional<double> c;
      if (correcting) c = ms.correction.factor(d.name, backward ? std::string(op.name) + "_backward" : op.name);
      source = worse(source, layer_corrected || c ? TimeSource::corrected : TimeSource::analytic);
      return roofline_s(d, training, op, backward) * c.value_or(1.0);
    };
    if (b < 0 && f >= 0) b = op.backward_ratio * f;
    if (b < 0) b = unmeasured(true);
    if (f < 0) f = unmeasured(false);
    out.source = worse(out.source, source);
    out.forward += f;
    out.backward += b;
    if (w.op_level)
      out.selective_replay += w.op_level_replay[i] * f;
    else if (i == w.selective_op)
      out.selective_replay = f;
    if (i == 1) {
      out.attention_forward = f;
      out.attention_backward = b;
    }
  }
  return out;
}

namespace {

// Parameters a tp rank of stage (first, last) holds, its layers holding
// `layers_params`: those, the embedding on the first stage and the head on
// the last (tied to the embedding where a one-stage plan holds both), over
// tp. One count for stage_part and stage_tail_floor.
double rank_params(const ModelSpec& m, double layers_params, bool first, bool last, int tp) {
  double params = layers_params;
  if (first) params += embedding_params(m);
  if (last) params += head_params(m, first);
  return params / tp;
}

BatchShape batch_shape(const Problem& pb, const StageShape& s, int micro_batch) {
  BatchShape x;
  x.sequences = static_cast<double>(micro_batch) / s.dp;
  x.seq_len = pb.seq_len();
  x.tp = s.tp;
  x.cp = s.cp;
  x.element_bytes = bytes_per_element(pb.training.precision);
  x.sequence_parallel = pb.training.sequence_parallel && s.tp > 1;
  // A device without FP8 runs an fp8 plan's GEMMs in 16 bits.
  const DeviceSpec& device = pb.cluster.groups.at(s.group).device;
  x.fp8 = gemms_in_fp8(pb.training.precision, device);
  x.eager_modules = eager_modules(pb.training);
  x.fused_attention_kernel = fused_attention_kernel(device.architecture, pb.training.runtime, pb.model.head_dim());
  return x;
}

}  // namespace

// Links, each at its achievable bandwidth.
static Link tp_link(const NodeGroup& g, const CostParameters& c) {
  return {g.intra_node_GBps * c.nvlink_efficiency, g.intra_node_latency_us};
}
// One GPU's share of its node's NICs, for a point-to-point send between
// nodes (pipeline stages).
static Link inter_node_link(const NodeGroup& g, const CostParameters& c) {
  return {g.inter_node_GBps * c.network_efficiency, g.inter_node_latency_us};
}

// The link of a collective among `members` GPUs, `per_node` of them in each
// node, while every GPU of those nodes runs the same collective in its own
// group (the tp ranks of a stage each reduce over their own dp group).
// Inside one node: NVLink/PCIe. Across nodes NCCL runs rings (and trees)
// whose traffic leaves each node through the NIC nearest the GPU that
// sends it (NCCL's topology search; NVIDIA DGX A100/H100 user guides): the
// node's gpus_per_node / per_node concurrent rings share its NICs, each
// NIC at its achievable rate, so a ring runs at
//   min(intra-node link, NIC rate x NICs / rings).
// With one NIC per GPU (the default) that is per_node times a GPU's own NIC
// share, as rail-optimized nodes give it.
static Link collective_link(const NodeGroup& g, int members, int per_node, const CostParameters& c) {
  const Link intra = tp_link(g, c);
  if (members <= per_node) return intra;
  const Link share = inter_node_link(g, c);  // a GPU's share of its node's NICs
  const int nics = g.nics();
  const double rings = static_cast<double>(g.gpus_per_node) / std::clamp(per_node, 1, g.gpus_per_node);
  // A measured bus bandwidth (NodeGroup::inter_node_busbw_GBps) is what one
  // communicator's ring reached, and that ring left each node through one
  // NIC: BigScience's Jean Zay A100 measurement (32 GPUs on 4 nodes of 4
  // Omni-Path 100 Gb/s NICs, 4 GB all-reduces; experiments/bandwidth/
  // all_reduce_bench-a100-n4.txt) logs both of NCCL's ring channels on
  // NIC 3 of every node and a median busbw of 40.5 Gb/s, 40% of that NIC
  // ("NCCL does not fully use OPA", README there). Each NIC then runs at
  // that rate, and concurrent rings share the node's NICs: BLOOM's stages of
  // tp 8 (eight dp rings a node on four NICs, 2.5 GB/s each) synchronised
  // at half the rate of those of tp 4 or 2 (one ring a NIC or fewer, the
  // measured 5.06 GB/s); with every ring at the measured rate the 21-run
  // 176B sweep (bloom_prequel_0225) came out fast at tp 8 and small pp,
  // slow at large pp (tests/data/measured_runs.csv, MeasuredRuns).
  const double measured =
      g.inter_node_busbw_GBps > 0 ? g.inter_node_busbw_GBps : std::numeric_limits<double>::infinity();
  const double nic_GBps = std::min(share.GBps * g.gpus_per_node / nics, measured);
  return {std::min({intra.GBps, nic_GBps * nics / rings, measured}), share.latency_us};
}

// The context-parallel ring of a stage: ranks are ordered tp fastest, then
// cp (Megatron-Core's order tp-cp-dp-pp), so replica k's ring holds GPUs
// [k·tp·cp, (k+1)·tp·cp) of the stage. A ring of cp·tp <= GPUs per node
// stays inside a node when it divides the node (the stage starts on a
// node, or inside one it fits in, as the search lays stages out); one that
// does not divide it (tp 1 x cp 4 on nodes of 6 GPUs) puts some replica's
// ring across two nodes, and every replica's ring steps wait for the
// slowest: that one, with the most of its members one node holds. A larger
// ring crosses nodes with gpus_per_node / tp of its members in each.
static Link cp_link(const NodeGroup& g, const StageShape& s, const CostParameters& c) {
  const int ring = s.tp * s.cp, node = g.gpus_per_node;
  if (ring <= node && ring * s.dp > node && node % ring != 0) {
    // The pattern of ring starts against node boundaries repeats within
    // `node` rings.
    for (int k = 0; k < std::min(s.dp, node); ++k)
      if (crosses_node(k * ring, ring, node))
        return collective_link(g, s.cp, std::max(1, most_gpus_on_one_node(k * ring, ring, node) / s.tp), c);
  }
  return collective_link(g, s.cp, std::max(1, std::min(s.cp, node / s.tp)), c);
}

// Tensor parallelism: two all-reduces of the b·s·h layer activations in the
// forward (after attention and after the MLP) and two in the backward
// (Shoeybi et al. 2019, Megatron-LM, Fig. 4); with sequence parallelism the
// same volume moves as all-gather + reduce-scatter (Korthikanti et al. 2022).
// Per pass (forward or backward) of one layer.
static double tensor_parallel_s(const Problem& pb, const NodeGroup& g, const CostParameters& c,
                                const StageShape& shape, const BatchShape& x, int layer) {
  if (shape.tp <= 1) return 0;
  const double bytes = layer_output_bytes(pb.model, layer, x.sequences, x.seq_len, x.element_bytes) / x.cp;
  const double fixed = pb.training.runtime == Runtime::deepspeed ? c.deepspeed_tp_allreduce_s * std::log2(shape.tp) : 0.0;
  return 2 * (ring_allreduce_s(bytes, shape.tp, tp_link(g, c)) + fixed);
}

Timing CostModel::layer_timing(const StageShape& shape, int micro_batch, int layer) const {
  const NodeGroup& g = problem_.cluster.groups.at(shape.group);
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const WorkTime w = work_time(Measurements{problem_.profiles, correction_}, problem_.training, g.device,
                               layer_forward_work(problem_.model, layer, x), x, layer, /*is_layer=*/true);

  // A measured whole layer at tp > 1 already contains its tp all-reduces.
  const double tp_comm = w.whole_layer_measured ? 0.0 : tensor_parallel_s(problem_, g, parameters_, shape, x, layer);
  // Context parallelism: cp - 1 ring steps each pass a K,V block to the next
  // GPU in the forward, and K,V plus their gradients in the backward; each
  // step's transfer overlaps that step's attention (Transformer Engine's
  // ring attention, Megatron-Core context_parallel.md), so only what the
  // attention cannot hide is exposed.
  double cp_forward = 0, cp_backward = 0;
  if (shape.cp > 1) {
    const Link ring = cp_link(g, shape, parameters_);
    const double block = context_parallel_kv_bytes(problem_.model, layer, x);
    cp_forward = std::max(0.0, (shape.cp - 1) * point_to_point_s(block, ring) - w.attention_forward);
    cp_backward = std::max(0.0, (shape.cp - 1) * point_to_point_s(2 * block, ring) - w.attention_backward);
  }
  const double overhead = parameters_.per_layer_overhead_s;
  Timing t;
  t.forward_s = (w.forward + tp_comm) * w.layer_factor_forward + cp_forward + overhead;
  t.backward_s = (w.backward + tp_comm) * w.layer_factor_backward + cp_backward + overhead;
  t.source = w.source;
  if (shape.recompute == Recompute::full) t.backward_s += t.forward_s;              // replay the whole forward
  if (shape.recompute == Recompute::selective) t.backward_s += w.selective_replay;  // replay the attention core
  return t;
}

Timing CostModel::edge_timing(const StageShape& shape, int micro_batch, bool first, bool last) const {
  const NodeGroup& g = problem_.cluster.groups.at(shape.group);
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  Timing t;  // no edge: nothing unmeasured
  if (first) {
    const WorkTime w = work_time(Measurements{problem_.profiles, correction_}, problem_.training, g.device,
                                 embedding_forward_work(edge_model(shape.tp), x), x, -1, /*is_layer=*/false);
    t.forward_s += w.forward;
    t.backward_s += w.backward;
    t.source = worse(t.source, w.source);
  }
  if (last) {
    const WorkTime w = work_time(Measurements{problem_.profiles, correction_}, problem_.training, g.device,
                                 head_forward_work(edge_model(shape.tp), x), x, -1, /*is_layer=*/false);
    t.forward_s += w.forward;
    t.backward_s += w.backward;
    t.source = worse(t.source, w.source);
  }
  return t;
}

// Each measured point against the analytic time of the same op, shape and
// device (with a whole layer's tp communication, which its measurement
// contains). Points of devices outside the cluster, of another sequence
// length or of layers the model does not have cannot be compared and are
// left out.
ProfileCorrection CostModel::fit_profile_correction() const {
  static const ProfileTable kNoProfiles;
  static const ProfileCorrection kNoCorrection;
  const Measurements analytic{kNoProfiles, kNoCorrection};
  ProfileCorrection out;
  for (const auto& [key, measured] : problem_.profiles.entries()) {
    if (key.seq_len != problem_.seq_len() || key.layer >= problem_.model.layers) continue;
    int group = -1;
    for (std::size_t i = 0; i < problem_.cluster.groups.size() && group < 0; ++i)
      if (problem_.cluster.groups[i].device.name == key.device) group = static_cast<int>(i);
    if (group < 0) continue;
    const NodeGroup& g = problem_.cluster.groups[group];
    const StageShape shape{group, key.tp, 1, Recompute::none, 1};
    const BatchShape x = batch_shape(problem_, shape, key.micro_batch);
    const int layer = std::max(0, key.layer);
    const auto [op, backward] = split_backward(key.op);
    const LayerWork layer_work = layer_forward_work(problem_.model, layer, x);
    double analytic_s = -1;
    // A point faster than the device's peaks is a units slip or a broken
    // timer, never a measurement: fitted, it would scale every unmeasured
    // time below what the hardware allows (MFU above 1). A whole layer's
    // floor is its ops'; a part's, that of the op it is priced as.
    double floor_s = 0;
    if (op == "optimizer") {
      // The whole model's step on one GPU of a tp group, without ZeRO.
      analytic_s = optimizer_step_s(total_params(problem_.model) / key.tp, problem_.training, g.device);
    } else if (op == "layer") {
      floor_s = work_floor_s(g.device, problem_.training, layer_work, backward);
      const WorkTime w = work_time(analytic, problem_.training, g.device, layer_work, x, layer, /*is_layer=*/true);
      analytic_s = (backward ? w.backward : w.forward) + tensor_parallel_s(problem_, g, parameters_, shape, x, layer);
    } else {
      for (const LayerWork& w :
           {layer_work, embedding_forward_work(edge_model(shape.tp), x), head_forward_work(edge_model(shape.tp), x)})
        for (const OpWork& o : w.ops)
          if (analytic_s < 0 && op == o.name && (o.flops > 0 || o.bytes > 0)) {
            analytic_s = roofline_s(g.device, problem_.training, o, backward);
            floor_s = peak_floor_s(g.device, problem_.training, o, backward);
          }
    }
    if (measured < floor_s) {
      throw InputError("", "latency_ms",
                       format_ms(measured) + " (" + key.device + ", " + key.op + ", tp " + std::to_string(key.tp) +
                           ", micro_batch " + std::to_string(key.micro_batch) + ", seq_len " +
                           std::to_string(key.seq_len) + ")",
                       "at least " + format_ms(floor_s) + " ms: this work of " + problem_.model.name +
                           " at the fastest matrix peak " + to_string(problem_.training.precision) +
                           " training allows on " + key.device);
    }
    if (analytic_s > 0) out.add_point(key.device, key.op, measured, analytic_s);
  }
  out.finish();
  return out;
}

LayerMemory CostModel::layer_memory(const StageShape& shape, int micro_batch, int layer) const {
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const TrainingSpec& tr = problem_.training;
  const double params = layer_params(problem_.model, layer) / shape.tp;
  LayerMemory m;
  m.static_bytes = params * static_bytes_per_param(state_bytes(tr, tr.zero, shape.replicas()));
  m.activation_bytes = layer_activation_bytes(problem_.model, layer, x, shape.recompute);
  m.working_bytes = layer_working_bytes(problem_.model, layer, x, shape.recompute);
  return m;
}

LayerMemory CostModel::edge_memory(const StageShape& shape, int micro_batch, bool first, bool last) const {
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const TrainingSpec& tr = problem_.training;
  const ModelSpec& edges = edge_model(shape.tp);
  double params = 0;
  if (first) params += embedding_params(edges);
  if (last) params += head_params(edges, first);
  params /= shape.tp;
  LayerMemory m;
  m.static_bytes = params * static_bytes_per_param(state_bytes(tr, tr.zero, shape.replicas()));
  if (first) m.activation_bytes = embedding_activation_bytes(edges, x);
  // The last stage runs each micro-batch's loss and backward back to back:
  // one set of logits at a time.
  m.working_bytes = last ? logits_bytes(edges, x, loss_bytes_per_logit(tr), logits_held_by_runtime(tr)) : 0.0;
  return m;
}

bool CostModel::memory_grows_with_range(int stage_index, int num_stages) const {
  return problem_.model.family != ModelFamily::generic || problem_.training.runtime != Runtime::deepspeed ||
         stage_index == num_stages - 1;
}

MemoryBreakdown CostModel::stage_memory(const StageShape& shape, int micro_batch, int layer_begin, int layer_end,
                                        int stage_index, int num_stages, int num_micro_batches, int vpp) const {
  return stage_memory(shape, problem_.training.zero, micro_batch, layer_begin, layer_end, stage_index, num_stages,
                      num_micro_batches, vpp);
}

MemoryBreakdown CostModel::stage_memory(const StageShape& shape, int zero, int micro_batch, int layer_begin,
                                        int layer_end, int stage_index, int num_stages, int num_micro_batches,
                                        int vpp) const {
  const TrainingSpec& tr = problem_.training;
  const StateBytes sb = state_bytes(tr, zero, shape.replicas());
  const BatchShape x = batch_shape(problem_, shape, micro_batch);
  const bool first = stage_index == 0, last = stage_index == num_stages - 1;

  // Each weight's gradient of a micro-batch is computed whole and then added
  // into the buffer the step reads: under DeepSpeed every weight's
  // (autograd's AccumulateGrad into .grad), under Megatron-LM only the
  // weights outside its fused linears, whose weight-gradient GEMMs
  // accumulate in place (gradient-accumulation fusion): the word embedding,
  // through its main_grad hook. The largest such tensor is a transient.
  const bool autograd_accumulates = tr.runtime == Runtime::deepspeed;
  double params = 0, activations = 0, working = 0, largest_layer = 0, largest_accumulated = 0;
  // A transformer's layers hold the same memory: one layer's figures times
  // the count (the memory pruner asks this for every stage it tries).
  const bool same_layers = problem_.model.family != ModelFamily::generic;
  const int priced_end = same_layers ? std::min(layer_end, layer_begin + 1) : layer_end;
  const double n = same_layers ? layer_end - layer_begin : 1;  // layers each priced layer stands for
  for (int l = layer_begin; l < priced_end; ++l) {
    params += n * layer_params(problem_.model, l);
    largest_layer = std::max(largest_layer, layer_params(problem_.model, l));
    if (autograd_accumulates)
      largest_accumulated = std::max(largest_accumulated, largest_param_tensor(problem_.model, l));
    activations += n * layer_activation_bytes(problem_.model, l, x, shape.recompute);
    working = std::max(working, layer_working_bytes(problem_.model, l, x, shape.recompute));
  }
  // The word embedding (first stage) and the final norm and output layer
  // (last stage): under ZeRO-3/FSDP a unit of their own, beside the layers
  // (torchtitan shards each block, then the root module that holds them).
  double edge_unit = 0;
  if (first) edge_unit += embedding_params(edge_model(shape.tp));
  if (last) edge_unit += head_params(edge_model(shape.tp), first);
  params += edge_unit;
  if (first) activations += embedding_activation_bytes(problem_.model, x);
  // DeepSpeed's pipeline engine keeps each in-flight micro-batch's stage
  // output in a pipe buffer until that micro-batch's backward starts from it
  // (deepspeed/runtime/pipe/engine.py: _exec_forward_pass stores
  // pipe_buffers['outputs'][buffer_id], _exec_backward_pass frees it), so a
  // stage holds one more b·s·h tensor per micro-batch than the layers'
  // checkpoints. The last stage's output is its logits, held as above
  // (logits_held_by_runtime). Megatron-LM frees the output's data once sent
  // and keeps only its autograd node (deallocate_output_tensor,
  // megatron/core/pipeline_parallel/schedules.py); FSDP has no pipeline.
  if (tr.runtime == Runtime::deepspeed && !last && layer_end > layer_begin)
    activations += layer_output_bytes(problem_.model, layer_end - 1, x.sequences, x.seq_len / x.cp, x.element_bytes);
  // The word embedding and the output layer (its tied copy or its own) are
  // each one vocab x h tensor.
  if ((first || last) && problem_.model.family != ModelFamily::generic)
    largest_accumulated =
        std::max(largest_accumulated, static_cast<double>(edge_model(shape.tp).vocab) * problem_.model.hidden);
  params /= shape.tp;
  largest_layer /= shape.tp;
  edge_unit /= shape.tp;
  largest_accumulated /= shape.tp;

  const double dp = shape.replicas();
  MemoryBreakdown m;
  // FP8 training adds no persistent weight copies here: the FP8 casts of
  // the weights live for one layer's GEMMs (or replace the 16-bit weights
  // with --fp8-param-gather). Measured: NeMo's 20B model at tp 2, dp 32
  // ran in 80 GB, which 2 more bytes per parameter would exceed
  // (tests/data/measured_runs.csv, nemo2407-h100-002).
  m.weights = params * sb.weights;
  m.gradients = params * sb.gradients;
  m.optimizer = params * sb.optimizer;
  if (zero >= 3 && dp > 1) {
    // ZeRO-3/FSDP gathers a unit's full weights for its pass and prefetches
    // the next one; the gathered unit's gradient exists unsharded until its
    // reduce-scatter (PyTorch FSDP, Zhao et al. 2023, Sec. 3.2: at most two
    // gathered units at a time). Units are the layers and, on the first and
    // last stages, the embedding and output layer (edge_unit: a vocab x h
    // matrix, larger than a Llama layer, gathered while the layers' next
    // one is prefetched; 2.5 GB more for Llama 3 8B, which brings
    // torchtitan's two measured peaks from 2-3% under to within 1%).
    // DeepSpeed caps what is live at once (stage3_max_live_parameters,
    // default 1e9 elements; reduce buckets of 5e8), which bounds the very
    // wide units.
    constexpr double kMaxLiveParams = 1e9;
    const StateBytes whole = state_bytes(tr, zero, 1);
    const double gathered = edge_unit > 0 ? edge_unit + largest_layer : 2 * largest_layer;
    working += std::min(gathered, kMaxLiveParams) * whole.weights +
               std::min(std::max(edge_unit, largest_layer), kDeepSpeedReduceBucket) * whole.gradients;
  }
  // The transient of the largest accumulated gradient (above), and
  // DeepSpeed's bf16 optimizer's: it adds each bf16 .grad into its fp32
  // buffer through an fp32 copy, one parameter at a time, right after each
  // micro-batch's backward (runtime/bf16_optimizer.py, update_hp_grads:
  // hp_grad.add_(lp.grad.to(float32))). Both happen while the other
  // micro-batches' activations are held and after the backward's working
  // set is freed, so the peak has the larger of the two. ZeRO-3 reduces
  // each layer's gradient as above instead.
  if (zero <= 2) {
    const bool bf16_optimizer = tr.runtime == Runtime::deepspeed && !full_precision(tr.precision) &&
                                grad_precision(tr) == Precision::fp32;
    working = std::max(working, (bf16_optimizer ? 4.0 : x.element_bytes) * largest_accumulated);
  }
  const double micro_batches_in_flight = in_flight(stage_index, num_stages, num_micro_batches, vpp);
  m.activations = activations * micro_batches_in_flight + working;
  m.logits =
      last ? logits_bytes(edge_model(shape.tp), x, loss_bytes_per_logit(tr), logits_held_by_runtime(tr)) : 0.0;
  // One communicator for each kind of group the GPU is in with others:
  // tensor-parallel, data-parallel, pipeline neighbours.
  const int communicators = (shape.tp > 1) + (shape.cp > 1) + (shape.replicas() > 1) + (num_stages > 1);
  m.runtime = (parameters_.cuda_context_GiB + communicators * parameters_.nccl_GiB_per_communicator) * kGiB;
  // DeepSpeed's ZeRO-1/2 optimizer reduces gradients through one bucket of
  // 16-bit elements, allocated once.
  if (tr.runtime == Runtime::deepspeed && (zero == 1 || zero == 2) && dp > 1)
    m.runtime += kDeepSpeedReduceBucket * 2;
  // Checkpoints of several micro-batches held across the others' passes
  // fragment the pool (CostParameters::checkpointed_fragmentation); one
  // micro-batch at a time frees them all before the next one starts.
  const double activation_fragmentation = shape.recompute == Recompute::full && micro_batches_in_flight > 1
                                              ? parameters_.checkpointed_fragmentation
                                              : parameters_.allocator_fragmentation;
  m.allocator = activation_fragmentation * m.activations + parameters_.allocator_fragmentation * m.logits;
  if (tr.runtime == Runtime::deepspeed)
    m.allocator += parameters_.deepspeed_state_fragmentation * (m.weights + m.gradients + m.optimizer);
  m.headroom = tr.headroom_GiB * kGiB;
  return m;
}

// --------------------------------------------------------------------------
// Whole stages and plans.

namespace {

StageShape shape_of(const StagePlan& s) { return {s.group, s.tp, s.dp, s.recompute, s.cp}; }

}  // namespace

// Link between the GPUs of two consecutive stages: inside one node
// (NVLink/PCIe), between nodes of one group (its NICs), or across the
// inter-group fabric.
static Link inter_group_link(const ClusterSpec& c, const CostParameters& p) {
  return {c.inter_group_GBps * p.network_efficiency, c.inter_group_latency_us};
}

// The groups a stage's GPUs are in: its own, or each replica set's.
static bool one_group(const StagePlan& s, int group) {
  if (!s.has_replica_sets()) return s.group == group;
  for (const ReplicaSet& r : s.replicas)
    if (r.group != group) return false;
  return true;
}

static Link pipeline_link(const ClusterSpec& c, const StagePlan& a, const StagePlan& b, const CostParameters& p) {
  // The two halves of one group in the search's split cluster
  // (NodeGroup::half_of) are distinct nodes of that group: its link between
  // nodes, as the group itself prices two stages there; the halves of a
  // merged group are distinct parts: the fabric between groups, as below.
  if (a.group != b.group && !a.has_replica_sets() && !b.has_replica_sets()) {
    const NodeGroup& ga = c.groups.at(a.group);
    const NodeGroup& gb = c.groups.at(b.group);
    if (ga.half_of >= 0 && ga.half_of == gb.half_of)
      return c.groups.at(ga.half_of).parts > 1 ? inter_group_link(c, p) : inter_node_link(ga, p);
  }
  if (!one_group(a, b.group) || !one_group(b, a.group)) return inter_group_link(c, p);
  const NodeGroup& g = c.groups.at(a.group);
  // Two parts of a merged group are two groups of the cluster the plan is
  // for (NodeGroup::parts): the fabric between them, as above.
  if (g.parts > 1 && !a.has_replica_sets() && !b.has_replica_sets() &&
      a.first_gpu / g.part_gpus() != b.first_gpu / g.part_gpus())
    return inter_group_link(c, p);
  // A stage of replica sets takes its micro-batch in pieces from (or sends
  // them to) GPUs of several sets: counted between nodes, the slower link
  // of a group, rather than tracing which piece stays inside a node.
  if (a.has_replica_sets() || b.has_replica_sets()) return inter_node_link(g, p);
  const int gpn = g.gpus_per_node;
  const bool same_node = !crosses_node(a.first_gpu, a.gpus, gpn) && !crosses_node(b.first_gpu, b.gpus, gpn) &&
                         a.first_gpu / gpn == b.first_gpu / gpn;
  return same_node ? tp_link(g, p) : inter_node_link(g, p);
}

// The link a stage of replica sets reduces its gradients over. All its
// replicas, whatever their set, hold the same layers and reduce together,
// so the ring passes through every set and runs at the slowest link it
// crosses: the inter-group fabric when the sets sit in different groups,
// each group's link between nodes where the stage's GPUs in that group
// span nodes, else the intra-node link.
static Link replica_sets_dp_link(const ClusterSpec& c, const StagePlan& s, const CostParameters& p) {
  const int replicas = s.dp * s.cp;
  std::vector<Link> links;
  for (const ReplicaSet& r : s.replicas) {
    if (r.group != s.replicas.front().group) links.push_back(inter_group_link(c, p));
    const NodeGroup& g = c.groups.at(r.group);
    int begin = r.first_gpu, end = r.first_gpu + r.gpus;
    for (const ReplicaSet& o : s.replicas) {
      if (o.group != r.group) continue;
      begin = std::min(begin, o.first_gpu);
      end = std::max(end, o.first_gpu + o.gpus);
    }
    const int dp_per_node = replicas_per_node(begin, end - begin, s.tp, replicas, g.gpus_per_node);
    links.push_back(crosses_node(begin, end - begin, g.gpus_per_node) ? collective_link(g, replicas, dp_per_node, p)
                                                                      : tp_link(g, p));
  }
  return *std::min_element(links.begin(), links.end(), [](const Link& a, const Link& b) { return a.GBps < b.GBps; });
}

std::vector<StageEstimate> CostModel::replica_set_estimates(const Plan& plan, int i) const {
  const StagePlan& s = plan.stages.at(i);
  if (!s.has_replica_sets()) return {stage_part(plan, i, s, plan.micro_batch_size, nullptr)};
  // Each set is estimated as a one-device stage of the stage's dp replicas
  // on its own device, whose micro-batch gives every replica this set's
  // per-replica share q = sequences / (its replicas): B' = q·dp. So every
  // per-GPU cost is the set's: compute and activations of q sequences per
  // GPU, pipeline sends of its share (split over its replicas as a
  // one-device stage's are), the optimizer step at its device's bandwidth,
  // and what spans all replicas spans them all: the gradient sync over the
  // dp·cp replicas (on the slowest link of the stage, above) and the ZeRO
  // shards. One cost model, asked once per set.
  const Link dp_link = replica_sets_dp_link(problem_.cluster, s, parameters_);
  std::vector<StageEstimate> out;
  for (std::size_t k = 0; k < s.replicas.size(); ++k) {
    const ReplicaSet& r = s.replicas[k];
    StagePlan part = s;
    part.replicas.clear();
    part.group = r.group;
    part.device = r.device;
    part.first_gpu = r.first_gpu;
    part.gpus = r.gpus;
    const int share = r.sequences / s.set_replicas(k);
    out.push_back(stage_part(plan, i, part, share * s.dp, &dp_link));
  }
  return out;
}

std::size_t CostModel::pacing_set(const std::vector<StageEstimate>& sets) {
  return static_cast<std::size_t>(
      std::max_element(sets.begin(), sets.end(),
                       [](const StageEstimate& a, const StageEstimate& b) { return a.pace_s() < b.pace_s(); }) -
      sets.begin());
}

namespace {

// A stage of its replica sets' estimates (one for a one-device stage).
// A stage of replica sets finishes a micro-batch when its slowest set does
// (each set's pipeline sends included): its times are that set's. Its
// gradients are final when that set's backward ends, so the sync's
// exposure is measured against that backward (the slowest set's estimate
// already does). The optimizer steps run in parallel: the slowest.
// Memory: the set nearest its device's capacity, so the stage fits
// exactly when every set does.
StageEstimate stage_of_sets(const std::vector<StageEstimate>& sets) {
  if (sets.size() == 1) return sets.front();
  auto load = [](const StageEstimate& e) { return e.memory.total() / e.capacity_bytes; };
  StageEstimate e = sets[CostModel::pacing_set(sets)];
  const StageEstimate& fullest = *std::max_element(
      sets.begin(), sets.end(), [&](const StageEstimate& a, const StageEstimate& b) { return load(a) < load(b); });
  e.memory = fullest.memory;
  e.capacity_bytes = fullest.capacity_bytes;
  for (const StageEstimate& x : sets) {
    e.optimizer_s = std::max(e.optimizer_s, x.optimizer_s);
    e.time_source = worse(e.time_source, x.time_source);
    e.layers_source = worse(e.layers_source, x.layers_source);
  }
  return e;
}

}  // namespace

double CostModel::boundary_send_s(const StagePlan& a, const StagePlan& b, int last_layer_of_a, int B) const {
  // The activation to the next stage (or its gradient back), between the
  // replicas of the two stages (the side with fewer replicas moves the
  // larger share; each cp rank sends its share of the sequence). With
  // scatter/gather each tp rank sends 1/tp and the receiving stage
  // all-gathers over its intra-node link; otherwise every tp rank sends the
  // whole replica tensor (TrainingSpec::pipeline_p2p).
  const TrainingSpec& tr = problem_.training;
  const int seq = problem_.seq_len(), eb = bytes_per_element(tr.precision);
  const bool scatter = pipeline_p2p(tr) == PipelineP2P::scatter_gather;
  const double replica =
      layer_output_bytes(problem_.model, last_layer_of_a, B, seq, eb) / std::min(a.dp, b.dp) / std::min(a.cp, b.cp);
  const int split = scatter ? std::min(a.tp, b.tp) : 1;
  double t = point_to_point_s(replica / split, pipeline_link(problem_.cluster, a, b, parameters_));
  if (scatter && b.tp > 1) t += ring_allgather_s(replica, b.tp, tp_link(problem_.cluster.groups.at(b.group), parameters_));
  return t;
}

double CostModel::boundary_send_floor_s(const StagePlan& a, bool a_receives, int B) const {
  // boundary_send_s with every factor of the unknown side at its least:
  // min(a.dp, b.dp) <= a.dp and likewise cp, a split of at most a.tp, and
  // the faster of the links two groups can have (pipeline_link: the fabric
  // between groups, or between the nodes of one group split in halves).
  // The all-gather after a scatter runs on the receiver: counted only
  // where that is a.
  const TrainingSpec& tr = problem_.training;
  const bool scatter = pipeline_p2p(tr) == PipelineP2P::scatter_gather;
  const double replica =
      layer_output_bytes(problem_.model, 0, B, problem_.seq_len(), bytes_per_element(tr.precision)) / a.dp / a.cp;
  const double sent = replica / (scatter ? a.tp : 1);
  const NodeGroup& g = problem_.cluster.groups.at(a.group);
  double t = point_to_point_s(sent, inter_group_link(problem_.cluster, parameters_));
  if (g.half_of >= 0) t = std::min(t, point_to_point_s(sent, inter_node_link(g, parameters_)));
  if (a_receives && scatter && a.tp > 1) t += ring_allgather_s(replica, a.tp, tp_link(g, parameters_));
  return t;
}

StageEstimate CostModel::stage(const Plan& plan, int i) const {
  // A one-device stage (the search's every estimate) is priced directly,
  // without the list of sets.
  const StagePlan& s = plan.stages.at(i);
  if (!s.has_replica_sets()) return stage_part(plan, i, s, plan.micro_batch_size, nullptr);
  return stage_of_sets(replica_set_estimates(plan, i));
}

StageEstimate CostModel::stage_part(const Plan& plan, int i, const StagePlan& s, int B, const Link* dp_link_of_sets) const {
  const int p = static_cast<int>(plan.stages.size());
  const NodeGroup& g = problem_.cluster.groups.at(s.group);
  const StageShape shape = shape_of(s);
  const bool first = i == 0, last = i == p - 1;
  const TrainingSpec& tr = problem_.training;
  const int zero = plan.zero;  // the plan's execution settings, not the training's

  StageEstimate e;
  TimeSource source = TimeSource::measured;
  double params = 0;
  if (identical_layers_ && s.num_layers() > 0) {
    // Transformer layers are alike and, without profiles, so are their
    // times: one layer priced, times the count (a plan's estimate is
    // otherwise O(layers) layer pricings; refinement makes thousands).
    const Timing t = layer_timing(shape, B, s.layer_begin);
    e.forward_s = t.forward_s * s.num_layers();
    e.backward_s = t.backward_s * s.num_layers();
    source = worse(source, t.source);
    params = layer_params(problem_.model, s.layer_begin) * s.num_layers();
  } else if (s.num_layers() > 0) {
    const std::shared_ptr<const std::vector<Timing>> times = layer_timings(shape, B);
    for (int l = s.layer_begin; l < s.layer_end; ++l) {
      const Timing& t = (*times)[l];
      e.forward_s += t.forward_s;
      e.backward_s += t.backward_s;
      source = worse(source, t.source);
      params += layer_params(problem_.model, l);
    }
  }
  const Timing edge = edge_timing(shape, B, first, last);
  e.forward_s += edge.forward_s;
  e.backward_s += edge.backward_s;
  e.edge_forward_s = edge.forward_s;
  e.edge_backward_s = edge.backward_s;
  e.layers = s.num_layers();
  e.layers_source = source;
  e.time_source = worse(source, edge.source);
  params = rank_params(edge_model(s.tp), params, first, last, s.tp);
  e.backward_s += gradient_accumulation_s(params, tr, zero, g.device);

  // Pipeline transfers of one micro-batch each way (boundary_send_s).
  // Interleaved (vpp > 1): every micro-batch crosses each boundary once per
  // chunk, and chunk k of the last stage feeds chunk k + 1 of the first.
  const int v = plan.vpp;
  auto stage_at = [&](int j) -> const StagePlan& { return j == i ? s : plan.stages[j]; };
  auto boundary_s = [&](const StagePlan& a, const StagePlan& b, int last_layer_of_a) {
    return boundary_send_s(a, b, last_layer_of_a, B);
  };
  if (!last) e.p2p_s += v * boundary_s(s, plan.stages[i + 1], s.layer_end - 1);
  if (!first) e.p2p_s += v * boundary_s(plan.stages[i - 1], s, s.layer_begin - 1);
  if (v > 1 && (first || last)) e.p2p_s += (v - 1) * boundary_s(stage_at(p - 1), stage_at(0), s.layer_end - 1);
  // Megatron-LM overlaps the interleaved schedule's sends and receives with
  // the other chunks' compute (--overlap-p2p-communication, on unless
  // disabled; NeMo "Communication Overlap": pipeline overlap applies to the
  // interleaved schedule only): what compute cannot hide stays exposed.
  if (v > 1 && tr.runtime == Runtime::megatron) e.p2p_s = std::max(0.0, e.p2p_s - e.time_s());

  const Link dp_link = dp_link_of_sets ? *dp_link_of_sets : stage_dp_link(s);
  if (zero >= 3) {
    // ZeRO-3 (Rajbhandari et al. 2020, Sec. 7.2.2): every micro-batch
    // all-gathers the weights for the forward and again for the backward and
    // reduce-scatters the gradients, partly hidden by prefetching.
    const int replicas = s.dp * s.cp;
    const double gather = ring_allgather_s(params * bytes_per_element(tr.precision), replicas, dp_link);
    const double scatter_grads = ring_reduce_scatter_s(params * bytes_per_element(grad_precision(tr)), replicas, dp_link);
    const double x = parameters_.zero3_exposed_fraction;
    auto overlap = [x](double compute, double comm) {
      return std::max(compute, comm) + x * std::min(compute, comm);
    };
    e.forward_s = overlap(e.forward_s, gather);
    e.backward_s = overlap(e.backward_s, gather + scatter_grads);
  }
  const StageTail tail = stage_tail(plan, i, s, zero, params, e.backward_s, dp_link);
  e.dp_sync_s = tail.dp_sync_s;
  e.optimizer_s = tail.optimizer_s;

  e.memory = stage_memory(shape, zero, B, s.layer_begin, s.layer_end, i, p, plan.num_micro_batches, plan.vpp);
  e.capacity_bytes = capacity_bytes(s.group);
  return e;
}

Link CostModel::stage_dp_link(const StagePlan& s) const {
  // Data parallelism: each tp rank's gradient reduction spans its dp·cp
  // replicas (cp ranks hold the same weights), gpus_per_node / tp of them
  // per node (ranks are ordered tp fastest, then cp, then dp), fewer where
  // the stage starts or ends inside a node.
  const NodeGroup& g = problem_.cluster.groups.at(s.group);
  const int replicas = s.dp * s.cp;
  const int dp_per_node = replicas_per_node(s.first_gpu, s.gpus, s.tp, replicas, g.gpus_per_node);
  return crosses_node(s.first_gpu, s.gpus, g.gpus_per_node) ? collective_link(g, replicas, dp_per_node, parameters_)
                                                             : tp_link(g, parameters_);
}

StageTail CostModel::stage_tail(const Plan& plan, int i, const StagePlan& s, int zero, double params,
                                double backward_s, const Link& dp_link) const {
  const TrainingSpec& tr = problem_.training;
  const int p = static_cast<int>(plan.stages.size());
  const bool first = i == 0, last = i == p - 1;
  const int replicas = s.dp * s.cp;
  StageTail t;
  if (zero < 3) {
    // Once per iteration: without ZeRO an all-reduce of the gradients in
    // their element type; with a sharded optimizer (ZeRO-1/2, Megatron's
    // distributed optimizer) a reduce-scatter of the gradients and, after
    // the step, an all-gather of the updated 16-bit weights (Megatron-LM
    // docs/source/distrib_optimizer.md), i.e. 6 bytes a parameter against
    // the 8 of an fp32 all-reduce. Overlapped with the backward pass, only
    // what the last micro-batch's backward cannot hide stays exposed
    // (gradients are final only then). ZeRO-3 reduces its gradients with
    // every micro-batch's backward (stage_part), not here.
    const double grad_bytes = params * bytes_per_element(grad_precision(tr));
    const double weight_bytes = params * bytes_per_element(tr.precision);
    const double sync = zero >= 1 ? ring_reduce_scatter_s(grad_bytes, replicas, dp_link) +
                                        ring_allgather_s(weight_bytes, replicas, dp_link)
                                  : nccl_allreduce_s(grad_bytes, replicas, dp_link);
    const double reduce = (1.0 - parameters_.dp_overlap) * sync;
    t.dp_sync_s = tr.overlap_grad_reduce ? std::max(0.0, reduce - backward_s) : reduce;
  }
  // Tied embeddings split by the pipeline: the first stage's word embedding
  // and the last stage's output layer are one matrix held twice, so after
  // the backward each tp rank all-reduces its vocab·h/tp gradient with its
  // peer on the other end before the step (Megatron-LM's embedding group,
  // core/distributed/finalize_model_grads.py _allreduce_word_embedding_grads;
  // DeepSpeed's tied modules, PipelineEngine._exec_reduce_tied_grads): a
  // two-rank all-reduce over the link between the two stages, not hidden.
  if (p > 1 && (first || last) && problem_.model.tied_embeddings && problem_.model.family != ModelFamily::generic) {
    const double tied_bytes = static_cast<double>(edge_model(s.tp).vocab) * problem_.model.hidden / s.tp *
                              bytes_per_element(grad_precision(tr));
    t.dp_sync_s += ring_allreduce_s(
        tied_bytes, 2, pipeline_link(problem_.cluster, plan.stages.front(), plan.stages.back(), parameters_));
  }
  const DeviceSpec& device = problem_.cluster.groups.at(s.group).device;
  const double owned = params / (zero >= 1 ? replicas : 1);
  t.optimizer_s = optimizer_step_s(owned, tr, device);
  // A profile's measured step, where it has one, sets the rate of this device.
  if (!correction_.empty()) t.optimizer_s *= correction_.factor(device.name, "optimizer").value_or(1.0);
  return t;
}

double CostModel::stage_tail_floor(const Plan& plan, int i, int layers) const {
  const StagePlan& s = plan.stages.at(i);
  const int p = static_cast<int>(plan.stages.size());
  const bool first = i == 0, last = i == p - 1;
  const double layers_params = layer_params(problem_.model, s.layer_begin) * layers;
  const double params = rank_params(edge_model(s.tp), layers_params, first, last, s.tp);
  // An infinite backward hides all the sync overlap_grad_reduce can hide.
  const StageTail t = stage_tail(plan, i, s, plan.zero, params, std::numeric_limits<double>::infinity(),
                                 stage_dp_link(s));
  return t.dp_sync_s + t.optimizer_s;
}

double CostModel::iteration_floor_s(int group) const {
  // One sequence's work, each op at its floor, times the global batch: every
  // op's FLOPs are linear in the sequences it holds, and a tp or cp split
  // divides them without adding any.
  const StageShape one_gpu{group, 1, 1, Recompute::none, 1};
  const BatchShape x = batch_shape(problem_, one_gpu, 1);
  const DeviceSpec& d = problem_.cluster.groups.at(group).device;
  double floor_s = 0;
  auto add = [&](const LayerWork& w) {
    floor_s += work_floor_s(d, problem_.training, w, false) + work_floor_s(d, problem_.training, w, true);
  };
  add(embedding_forward_work(problem_.model, x));
  for (int l = 0; l < problem_.model.layers; ++l) add(layer_forward_work(problem_.model, l, x));
  add(head_forward_work(problem_.model, x));
  return floor_s * problem_.training.global_batch;
}

double CostModel::iteration_time_1f1b(const std::vector<StageEstimate>& stages, int m, int vpp) {
  // 1F1B with unequal stages (Narayanan et al. 2021, Sec. 2.2, generalized):
  // the first micro-batch's forward and the last one's backward each cross
  // every stage once (fill and drain), and the m − 1 others are paced by the
  // slowest stage, including its own sends. Then the slowest stage's
  // exposed gradient sync and optimizer step:
  //   T = (m − 1)·pace + Σ (t_i + p2p_i) + tail.
  // Interleaved over v chunks, fill and drain cross each stage in chunks of
  // 1/v of its work, so all but the pacing stage's share of them shrinks
  // v-fold: T = m·pace + (Σ (t_i + p2p_i) − pace)/v + tail, which for equal
  // stages is Megatron's (m + (p − 1)/v)·t (Sec. 2.2.2, bubble (p − 1)/(v·m)).
  double sum = 0, pace = 0, tail = 0;
  for (const StageEstimate& s : stages) {
    sum += s.pace_s();
    pace = std::max(pace, s.pace_s());
    tail = std::max(tail, s.tail_s());
  }
  return m * pace + (sum - pace) / std::max(1, vpp) + tail;
}

double CostModel::model_flops_per_iteration(int global_batch) const {
  // Forward + backward = 3 x forward (Narayanan et al. 2021, Sec. 5.1);
  // no recompute: model FLOPs as in MFU (Chowdhery et al. 2022, PaLM, App. B).
  const ModelSpec& m = problem_.model;
  const double batch = global_batch;
  const int s = problem_.seq_len();
  double f = head_forward_flops(m, batch, s);
  // A transformer's layers do the same work (layer_work.hpp: the layer
  // index matters to generic layer lists only): priced once, added layer
  // by layer as before. Refining plans estimates thousands of them, and
  // pricing every layer of every one was a sixth of a search's time.
  const bool alike = m.family != ModelFamily::generic;
  const double one = alike && m.layers > 0 ? layer_forward_flops(m, 0, batch, s) : 0.0;
  for (int l = 0; l < m.layers; ++l) f += alike ? one : layer_forward_flops(m, l, batch, s);
  return 3 * f;
}

double CostModel::hardware_flops_per_iteration(const Plan& plan) const {
  const ModelSpec& m = problem_.model;
  const double batch = plan.global_batch;
  const int s = problem_.seq_len();
  double f = 3 * head_forward_flops(m, batch, s);
  BatchShape x{batch, s, 1, 2, false};
  x.eager_modules = eager_modules(problem_.training);
  // The FLOPs the GPUs execute: a fused kernel on a causal model computes
  // half the score matrix (roofline_s prices it so), where model FLOPs
  // keep the whole, as Megatron-LM counts them. Counting the whole here
  // too had HFU above 1 at long sequences (Llama-sized layers at 512k
  // tokens under cp 8 on H100s with FlashAttention-3-like figures: 1.13).
  auto executed = [](const OpWork& op) { return op.fused_attention ? 0.5 * op.flops : op.flops; };
  auto layer_flops = [&](const LayerWork& w, Recompute recompute) {
    double once = 0, replay = 0;
    for (const OpWork& op : w.ops) once += executed(op);
    if (recompute == Recompute::full) replay = once;
    if (recompute == Recompute::selective && w.op_level)
      for (int i = 0; i < LayerWork::kOps; ++i) replay += w.op_level_replay[i] * executed(w.ops[i]);
    else if (recompute == Recompute::selective && w.selective_op >= 0)
      replay = executed(w.ops[w.selective_op]);
    return 3 * once + replay;
  };
  // As model_flops_per_iteration: a transformer's layers priced once.
  const bool alike = m.family != ModelFamily::generic;
  const LayerWork any_layer = alike && m.layers > 0 ? layer_forward_work(m, 0, x) : LayerWork{};
  for (const StagePlan& st : plan.stages) {
    const double each = alike ? layer_flops(any_layer, st.recompute) : 0.0;
    for (int l = st.layer_begin; l < st.layer_end; ++l)
      f += alike ? each : layer_flops(layer_forward_work(m, l, x), st.recompute);
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
    const std::vector<StageEstimate> sets = replica_set_estimates(plan, i);
    stages.push_back(stage_of_sets(sets));
    const StageEstimate& e = stages.back();
    out.stage_time_s.push_back(e.time_s());
    // The most any of the stage's GPUs holds: a stage of replica sets is
    // estimated by its set nearest capacity (stage_of_sets), which need not
    // hold the most GiB (an A100 set above a V100 one that is nearer its 32).
    double most = 0;
    for (const StageEstimate& set : sets) most = std::max(most, set.memory.total());
    out.stage_memory_GiB.push_back(most / kGiB);
    out.fits = out.fits && e.fits();
    out.time_source = i == 0 ? e.time_source : worse(out.time_source, e.time_source);
    max_time = std::max(max_time, e.time_s());
    sum_time += e.time_s();
    const StagePlan& s = plan.stages[i];
    auto peak_of = [&](int group) { return mfu_peak_flops(problem_.cluster.groups.at(group).device, problem_.training.precision); };
    if (!s.has_replica_sets()) peak += s.gpus * peak_of(s.group);
    for (const ReplicaSet& r : s.replicas) peak += r.gpus * peak_of(r.group);
  }
  out.iteration_time_s = iteration_time_1f1b(stages, plan.num_micro_batches, plan.vpp);
  out.bubble_s = (sum_time - max_time) / plan.vpp;
  const double tokens = static_cast<double>(plan.global_batch) * problem_.seq_len();
  out.tokens_per_s = tokens / out.iteration_time_s;
  const double model_flops = model_flops_per_iteration(plan.global_batch);
  out.mfu = model_flops / (out.iteration_time_s * peak);
  out.hfu = hardware_flops_per_iteration(plan) / (out.iteration_time_s * peak);
  out.model_tflops_per_gpu = model_flops / out.iteration_time_s / plan.num_gpus() / 1e12;
  return out;
}

}  // namespace autohaap
