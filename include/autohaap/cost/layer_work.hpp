// Layer work: FLOPs, bytes moved, parameters and stored activations of one
// layer of a model — the hardware-independent half of the cost model.
//
// Pure functions of the ModelSpec and a batch shape; O(1) per call for the
// transformer families, O(1) per generic layer.
//
// Sources:
//  - GEMM FLOPs per transformer layer: Narayanan et al. 2021, "Efficient
//    Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
//    Sec. 5.1 / Appendix: forward 24·b·s·h² + 4·b·s²·h for a GPT layer
//    (ffn = 4h); backward twice the forward. We keep the terms separate so
//    GQA (k/v projections of kv_heads·d columns) and SwiGLU (3 matrices of
//    h x ffn) follow from the same derivation.
//  - Activation memory: Korthikanti et al. 2022, "Reducing Activation
//    Recomputation in Large Transformer Models", Sec. 4 (Eq. 1-2, Table 2):
//    s·b·h·(34 + 5·a·s/h) bytes per layer at 16-bit without parallelism,
//    /t with tensor + sequence parallelism; 34·s·b·h/t with selective
//    recompute; 2·s·b·h with full recompute.
#pragma once

#include <array>

#include "autohaap/specs/model.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// One operator of a layer's forward pass on one GPU.
struct OpWork {
  const char* name = "";   // profile-table op name
  double flops = 0;        // floating point operations
  double bytes = 0;        // HBM bytes read + written
  double gemm_flops = 0;   // size of one GEMM of this op (sets its efficiency); 0 = not a GEMM
  // Work of the backward pass over the forward's. A GEMM's backward is two
  // GEMMs of the same size (input and weight gradients): 2. Fused (flash)
  // attention's backward: kFusedAttentionBackwardRatio. Element-wise
  // kernels read the output gradient and the saved input and write the
  // input gradient: about twice the forward's bytes.
  double backward_ratio = 2.0;
  bool fused_attention = false;  // priced at the device's attention-kernel efficiency
  // Fused attention run in blocks shorter than the sequence (context
  // parallelism's ring steps): the kernel's efficiency at the block length
  // over its efficiency at the whole sequence; 1 otherwise.
  double attention_block_efficiency = 1.0;
  bool fp8_gemm = false;         // a linear layer's GEMM, run in FP8 (BatchShape::fp8)
  // A GEMM tensor cores cannot run (attention_on_tensor_cores): priced at
  // the device's fp32 CUDA-core peak.
  bool cuda_cores = false;
};

// Forward work of one layer on one GPU, split into the ops a measured
// profile may override (ProfileTable op names).
struct LayerWork {
  static constexpr int kOps = 5;
  std::array<OpWork, kOps> ops;  // attn_qkv attn_core attn_out mlp elementwise (generic: ops[0] only)
  // Portion of the forward that selective recompute replays (the attention
  // core: softmax, dropout and the two batched GEMMs around them).
  int selective_op = 1;
  // Under op-level selective checkpointing (BatchShape::eager_modules)
  // the fraction of each op's forward that the backward replays instead
  // (every op's forward work scaled by it; selective_op is then unused).
  std::array<double, kOps> op_level_replay{};
  bool op_level = false;
  double total_flops() const {
    double f = 0;
    for (const auto& o : ops) f += o.flops;
    return f;
  }
};

// The batch a layer processes: `sequences` per replica, each seq_len long,
// split over `tp` GPUs, and over `cp` GPUs along the sequence.
// Fused (flash) attention's backward recomputes the scores: 5 matrix
// products against the forward's 2 (Dao 2023, "FlashAttention-2",
// Sec. 3.2).
inline constexpr double kFusedAttentionBackwardRatio = 2.5;
// The sequence length a device's fused-attention figures hold at
// (DeviceSpec::attention_*_efficiency; io/catalog.cpp): the middle of the
// 2k-16k tokens they were measured over. A kernel over another length runs
// at its own share of them (layer_work.cpp, L / (L + 300)).
inline constexpr double kAttentionFigureTokens = 4096;
// The head dimension a fused attention kernel runs a head of `head_dim`
// at: FlashAttention-2 pads it to a multiple of 8 and runs the kernel
// compiled for the next multiple of 32 (256 above 192; flash_api.cpp,
// round_multiple), so a narrow head costs what the padded one does (head
// dimension 1: the kernel of 32, 32 times its FLOPs). The device figures
// hold at 128, one of the compiled sizes. Past 256 (only SDPA's
// memory-efficient kernel, under fsdp, runs those) the head itself.
int fused_attention_head_dim(int head_dim);

struct BatchShape {
  double sequences = 1;
  int seq_len = 0;
  int tp = 1;
  int element_bytes = 2;
  bool sequence_parallel = true;
  // Context parallelism (Megatron-Core / Transformer Engine ring attention,
  // Liu et al. 2023, "Ring Attention"): each GPU holds seq_len / cp tokens
  // of every sequence; its queries attend to all keys as the key/value
  // blocks travel round the cp ring. Causal work is balanced by giving each
  // GPU two mirrored chunks, so every GPU does 1/cp of the attention.
  int cp = 1;
  // FP8 linear layers (Transformer Engine): the QKV, output-projection and
  // MLP GEMMs run in FP8; the inputs those layers save for the backward are
  // kept as their FP8 casts; the casts and their transposes are extra
  // memory-bound work. Set only where the stage's device has FP8.
  bool fp8 = false;
  // The runtime has a fused attention kernel on the stage's device
  // (fused_attention_kernel, specs/parallel_rules.hpp): without one a
  // flash-attention model keeps and computes standard attention's s x s
  // scores there (Megatron-LM on a V100).
  bool fused_attention_kernel = true;
  // The layer is PyTorch's eager modules as FSDP trainers write them
  // (torchtitan, Hugging Face models under llm-foundry), not Megatron-LM's
  // fused kernels (false). Three things follow, each measured on an H200
  // (tests/data/device/h200/training_memory.csv, memory_sweep.py):
  //  - selective recompute is PyTorch's op-level selective activation
  //    checkpointing (torchtitan's op policy, torch.utils.checkpoint
  //    create_selective_checkpoint_contexts): a layer keeps its input, the
  //    attention kernel's output and the output of every other bias-free
  //    matrix product in call order, and replays the rest from them
  //    (layer_work.cpp, op_level_saved_bytes). Megatron-LM's keeps
  //    everything but the attention core (Korthikanti et al. 2022, Sec. 5);
  //  - SwiGLU keeps silu's output beside its two inputs (Megatron's fused
  //    kernel recomputes it in the backward);
  //  - grouped-query attention repeats the key/value heads to the query
  //    heads before the attention kernel, which keeps the repeated copies.
  bool eager_modules = false;
};

// Tensor-core GEMM kernels read their operands in 16-byte vectors, so each
// row must start on a 16-byte boundary. Standard attention's batched GEMMs
// (Q·K^T over head_dim, P·V into head_dim) get that only when head_dim
// elements fill whole 16-byte vectors (a multiple of 8 at 16 bits); else
// cuBLAS runs them on CUDA cores, at the fp32 rate PyTorch's 16-bit GEMMs
// accumulate in (NVIDIA Deep Learning Performance Guide, "Matrix
// Multiplication Background", Tensor Core Requirements: 16-byte alignment).
// Measured: BLOOM's 2022 shape sweeps on A100 ran the head_dim-108 shapes
// (hidden 13824, 128 heads) 23-28% slower than the same runs at 96 heads
// (head_dim 144) (tests/data/measured_runs.csv, bloom_prequel_0223_nheads
// and 0226_nheads: bloom-pq-054, 086, 089, 091).
bool attention_on_tensor_cores(const ModelSpec& model, const BatchShape& shape);

// Whether the layer runs fused (flash) attention: the model asks for it,
// the runtime has the kernel on the device (BatchShape::
// fused_attention_kernel) and the inputs are 16-bit (FlashAttention's
// kernels take fp16/bf16; fp32 and tf32 training run standard attention,
// the s x s scores through HBM).
// FlashAttention pads other head dimensions to a multiple of 8 itself.
bool fused_attention_possible(const ModelSpec& model, const BatchShape& shape);

// Parameters of transformer/generic layer `layer` (0-based).
double layer_params(const ModelSpec& model, int layer);
// Elements of the largest weight tensor of layer `layer` (whole layer, no
// tp): the fused QKV or the (fused) MLP input projection; a generic layer
// counts as one tensor.
double largest_param_tensor(const ModelSpec& model, int layer);
// Input embedding (token + learned positions for GPT).
double embedding_params(const ModelSpec& model);
// Final norm + output projection (a copy of the input embedding when tied:
// Megatron-LM keeps it on the last stage and all-reduces its gradient).
double head_params(const ModelSpec& model, bool shares_stage_with_embedding);
// All parameters counted once (tied embeddings counted once).
double total_params(const ModelSpec& model);

// Forward FLOPs of one layer for `sequences` sequences, whole layer (no tp).
double layer_forward_flops(const ModelSpec& model, int layer, double sequences, int seq_len);
// Forward FLOPs of the output projection (logits) for `sequences` sequences.
double head_forward_flops(const ModelSpec& model, double sequences, int seq_len);

LayerWork layer_forward_work(const ModelSpec& model, int layer, const BatchShape& shape);
LayerWork head_forward_work(const ModelSpec& model, const BatchShape& shape);
LayerWork embedding_forward_work(const ModelSpec& model, const BatchShape& shape);

// Activation bytes the embedding stores for its backward pass, per GPU, for
// one micro-batch: its dropout mask and the embedding norm's input, kept in
// every recompute mode (they sit outside the recomputed layers).
double embedding_activation_bytes(const ModelSpec& model, const BatchShape& shape);
// Activation bytes one layer stores for its backward pass, per GPU, for one
// micro-batch of `shape.sequences` sequences.
double layer_activation_bytes(const ModelSpec& model, int layer, const BatchShape& shape, Recompute recompute);
// Transient bytes while one layer runs its backward (with full recompute the
// replayed layer's whole activation set lives for that one layer), and of
// a listed (generic) layer at least its output while it makes it.
double layer_working_bytes(const ModelSpec& model, int layer, const BatchShape& shape, Recompute recompute);
// Bytes of one key/value block a GPU passes round the context-parallel
// ring: K and V of its seq_len / cp tokens, its tp share of the kv heads.
double context_parallel_kv_bytes(const ModelSpec& model, int layer, const BatchShape& shape);
// Bytes of the layer output (what crosses a pipeline boundary), whole
// micro-batch of `sequences`, not split by tp.
double layer_output_bytes(const ModelSpec& model, int layer, double sequences, int seq_len, int element_bytes);
// Logits and loss buffers on the last stage, per GPU, at their peak: the
// 16-bit logits, plus `loss_bytes_per_logit` the loss holds beside them
// (its fp32 tensors: loss_bytes_per_logit in cost_model.cpp), plus
// `held_outputs` more 16-bit logits a runtime keeps alive from
// micro-batches whose loss already ran (DeepSpeed's pipeline engine: see
// logits_held_by_runtime in cost_model.cpp).
double logits_bytes(const ModelSpec& model, const BatchShape& shape, double loss_bytes_per_logit = 4.0,
                    int held_outputs = 0);

}  // namespace autohaap
