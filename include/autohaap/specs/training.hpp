// TrainingSpec: how the model is trained — batch, precision, optimizer,
// ZeRO stage, and which micro-batch sizes and recompute modes the search may
// choose from.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autohaap {

// Training precision. bf16/fp16: mixed precision with fp32 master weights.
// fp32: full precision on the CUDA cores; tf32: full precision with the
// matrix products on the tensor cores in TF32 (PyTorch's allow_tf32,
// NVIDIA 2020 A100 whitepaper). fp8: bf16 mixed precision whose linear
// layers run their GEMMs in FP8 (NVIDIA Transformer Engine, Micikevicius
// et al. 2022, "FP8 Formats for Deep Learning"); attention, the LM head and
// element-wise work stay 16-bit.
enum class Precision { bf16, fp16, fp32, tf32, fp8 };
// adam8bit: Adam with its two moments stored in 8 bits, block-wise
// quantized (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
// Quantization"; bitsandbytes, Megatron-DeepSpeed's --use-bnb-optimizer).
enum class Optimizer { adam, sgd, adam8bit };
enum class Recompute { none, selective, full };
// The training framework, for what it allocates and sends beyond the
// model's tensors (cost/cost_model.cpp: gradient buffers, buckets, the
// pipeline send mode it uses unless pipeline_p2p says otherwise).
// megatron: Megatron-LM / NeMo (Megatron-Core); deepspeed: DeepSpeed and
// Megatron-DeepSpeed; fsdp: PyTorch FSDP (MosaicML llm-foundry, torchtitan).
enum class Runtime { megatron, deepspeed, fsdp };
// How a pipeline stage sends its boundary activation to the next one.
// scatter_gather: each tensor-parallel rank sends 1/tp of it and the
// receivers all-gather over NVLink (Megatron-LM, Narayanan et al. 2021,
// Sec. 4.1; DeepSpeed's pipeline engine likewise partitions what it sends
// over the tensor-parallel group: activations always, gradients since
// v0.5.4 of September 2021, deepspeed/runtime/pipe/engine.py
// is_pipe_partitioned / is_grad_partitioned); full: every tensor-parallel
// rank sends the whole tensor (a pipeline without that partitioning).
enum class PipelineP2P { scatter_gather, full };
// The fused attention kernel a model with flash attention runs (it sets
// the kernel's efficiency, DeviceSpec and attention_efficiency):
// flash2: FlashAttention-2 (flash-attn 2.x, PyTorch SDPA's flash backend);
// flash3: FlashAttention-3 or cuDNN's fused attention, the Hopper kernels
// (Shah et al. 2024), which Transformer Engine prefers on Hopper; a device
// without them runs FlashAttention-2; triton: the 2022 FlashAttention
// kernel in Triton that llm-foundry's MPT ran (attn_impl: triton, the one
// that took an ALiBi bias before flash-attn 2.4).
enum class AttentionKernel { flash2, flash3, triton };

struct TrainingSpec {
  int global_batch = 512;       // sequences per iteration
  int seq_len = 0;              // 0: the model's seq_len
  Precision precision = Precision::bf16;
  Optimizer optimizer = Optimizer::adam;
  // 0: plain data parallel; 1: optimizer states sharded over dp (Megatron's
  // distributed optimizer); 2: + gradients; 3: + weights (ZeRO-3/FSDP).
  int zero = 1;
  std::vector<int> micro_batch_sizes = {1, 2, 4, 8};     // B per pipeline, searched
  // false: micro_batch_sizes are B, the sequences of one pipeline
  // micro-batch, split over a stage's dp replicas (so dp <= the largest).
  // true: they are sequences per data-parallel replica, Megatron's
  // --micro-batch-size b, and the search tries B = b * dp for every dp a
  // stage layout of the cluster offers (search_space.hpp,
  // searched_micro_batches), as a fleet of thousands of GPUs needs.
  bool micro_batch_per_replica = false;
  std::vector<Recompute> recompute_modes = {Recompute::none, Recompute::selective, Recompute::full};
  // Safety margin kept free per GPU on top of what the cost model counts
  // (which includes the CUDA context, NCCL buffers and fragmentation).
  double headroom_GiB = 1.0;
  bool sequence_parallel = true;  // Megatron sequence parallelism with tp > 1
  // Element type of the gradient buffer and its data-parallel reduction.
  // Unset: fp32 for bf16 training (Megatron-LM forces
  // --accumulate-allreduce-grads-in-fp32 with bf16; DeepSpeed's bf16
  // optimizer keeps fp32 gradients), the training precision otherwise.
  std::optional<Precision> grad_reduce_dtype;
  Runtime runtime = Runtime::megatron;
  // Unset: scatter_gather (what Megatron-LM and DeepSpeed both do).
  std::optional<PipelineP2P> pipeline_p2p;
  // Unset: flash3 under runtime megatron (Transformer Engine picks cuDNN's
  // fused attention on Hopper), flash2 otherwise (attention_kernel_on).
  std::optional<AttentionKernel> attention_kernel;
  // The data-parallel gradient reduction runs during the backward pass
  // (Megatron's --overlap-grad-reduce, PyTorch DDP buckets) instead of
  // after it (Megatron-LM 2021, DeepSpeed's pipeline engine).
  bool overlap_grad_reduce = false;
  // The loss computes its softmax in place on the 16-bit logits
  // (flash-attn's or Liger's fused cross-entropy, as llm-foundry's
  // fused_crossentropy) instead of on an fp32 copy (Megatron-LM's
  // vocab-parallel cross-entropy, PyTorch's under autocast).
  bool fused_cross_entropy = false;
};

const char* to_string(Precision p);
const char* to_string(Optimizer o);
const char* to_string(Recompute r);
const char* to_string(PipelineP2P p);
const char* to_string(AttentionKernel k);
const char* to_string(Runtime r);
// The inverse of to_string: a Recompute for "none", "selective" or "full".
std::optional<Recompute> parse_recompute(std::string_view name);

// Bytes of one parameter / activation element at this precision (fp8
// training keeps its weights and activations in 16 bits; only the GEMM
// operands are cast to 8).
int bytes_per_element(Precision p);
// fp32 and tf32: every tensor in 32 bits, no separate master copy.
bool full_precision(Precision p);
// Bytes of optimizer moments per parameter: Adam's m and v in fp32 (8), in
// 8 bits (2; the per-block fp32 scales, one per 2048 elements, are
// negligible), SGD's momentum (4).
double optimizer_moment_bytes(Optimizer o);
// The gradient element type in effect (TrainingSpec::grad_reduce_dtype).
Precision grad_precision(const TrainingSpec& t);
// The pipeline send mode in effect (TrainingSpec::pipeline_p2p).
PipelineP2P pipeline_p2p(const TrainingSpec& t);

}  // namespace autohaap
