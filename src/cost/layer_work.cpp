#include "autohaap/cost/layer_work.hpp"

#include <algorithm>

namespace autohaap {
namespace {

bool is_generic(const ModelSpec& m) { return m.family == ModelFamily::generic; }

// Dimension of the key (and value) projection: kv_heads heads of head_dim.
double kv_dim(const ModelSpec& m) { return static_cast<double>(m.kv_heads) * m.head_dim(); }

// Number of ffn_hidden x hidden matrices in the MLP: GeLU MLP has 2, SwiGLU 3
// (gate, up, down; Shazeer 2020, "GLU Variants Improve Transformer").
int mlp_matrices(const ModelSpec& m) { return m.family == ModelFamily::llama ? 3 : 2; }

// Op-level selective activation checkpointing, as PyTorch FSDP trainers run
// it (torchtitan's op policy: torch.utils.checkpoint with a policy that
// saves the outputs of aten.mm, counting the layer's products in call order
// and skipping every second one, and of the fused attention kernels; the
// layer input is the checkpoint's own). In the order a layer calls its
// products, Llama (separate bias-free projections): wq, wk, wv, [attention],
// wo, w1, w3, w2, so wq, wv, w1 and w2 are kept and wk, wo and w3 replayed.
// GPT's linears carry biases: PyTorch runs them as aten.addmm, which the
// policy does not keep, so only the input and the attention output are
// (measured on an H200: 4.0 bytes a token and hidden unit for a GPT layer,
// 15.5 for Llama 3 8B's, tests/data/device/h200/training_memory.csv).
// Norms, activations and products that are not kept are replayed in the
// backward from what is; math (unfused) attention is not on the list and is
// replayed whole. Bytes of 16-bit elements per layer, this GPU's share: the
// layer input and a row-parallel product's output are whole unless
// sequence-parallel; column-parallel outputs and the attention output are
// 1/tp.
double op_level_saved_bytes(const ModelSpec& m, const BatchShape& x, bool flash) {
  const double t = x.tp, s = static_cast<double>(x.seq_len) / x.cp, b = x.sequences;
  const double h = m.hidden, f = m.ffn_hidden, kv = kv_dim(m);
  const double sbh = s * b * h, whole = x.sequence_parallel ? t : 1.0;
  double bytes = 2 * sbh / whole;  // the layer input
  if (flash) bytes += 2 * sbh / t + 4.0 * b * (m.heads / t) * s;  // attention output, fp32 log-sum-exp
  if (m.family == ModelFamily::llama)
    bytes += 2 * sbh / t + 2 * s * b * kv / t + 2 * s * b * f / t + 2 * sbh / whole;  // wq, wv, w1, w2
  return bytes * x.element_bytes / 2.0;
}

}  // namespace

bool attention_on_tensor_cores(const ModelSpec& m, const BatchShape& x) {
  return (static_cast<long long>(m.head_dim()) * x.element_bytes) % 16 == 0;
}

int fused_attention_head_dim(int head_dim) {
  auto round_up = [](int x, int multiple) { return (x + multiple - 1) / multiple * multiple; };
  const int padded = round_up(head_dim, 8);
  return padded <= 192 ? round_up(padded, 32) : std::max(256, padded);
}

bool fused_attention_possible(const ModelSpec& m, const BatchShape& x) {
  return m.flash_attention && x.element_bytes == 2 && x.fused_attention_kernel;
}

double layer_params(const ModelSpec& m, int layer) {
  if (is_generic(m)) return m.generic_layers.at(layer).params;
  const double h = m.hidden, f = m.ffn_hidden;
  // Attention: Q and O are h x h, K and V are h x kv_dim.
  double attention = 2 * h * h + 2 * h * kv_dim(m);
  double mlp = mlp_matrices(m) * h * f;
  double norms;
  if (m.family == ModelFamily::gpt) {
    attention += h + 2 * kv_dim(m) + h;  // biases of Q, K, V and O
    mlp += f + h;                         // biases of the two linears
    norms = 2 * 2 * h;                    // two LayerNorms, weight + bias
  } else {
    norms = 2 * h;                        // two RMSNorms, weight only
  }
  return attention + mlp + norms;
}

double largest_param_tensor(const ModelSpec& m, int layer) {
  if (is_generic(m)) return m.generic_layers.at(layer).params;
  const double h = m.hidden, f = m.ffn_hidden;
  // Megatron-LM fuses Q, K and V into one h x (h + 2 kv_dim) weight and,
  // for SwiGLU, the gate and up projections into one 2f x h weight.
  const double qkv = h * (h + 2 * kv_dim(m));
  const double mlp_in = (m.family == ModelFamily::llama ? 2 : 1) * h * f;
  return std::max(qkv, mlp_in);
}

double embedding_params(const ModelSpec& m) {
  if (is_generic(m)) return 0;
  double p = static_cast<double>(m.vocab) * m.hidden;
  if (m.family == ModelFamily::gpt) p += static_cast<double>(m.seq_len) * m.hidden;  // learned positions
  if (m.embedding_norm) p += 2.0 * m.hidden;                                          // LayerNorm weight + bias
  return p;
}

double head_params(const ModelSpec& m, bool shares_stage_with_embedding) {
  if (is_generic(m)) return 0;
  const double final_norm = m.family == ModelFamily::gpt ? 2.0 * m.hidden : 1.0 * m.hidden;
  const bool needs_own_matrix = !m.tied_embeddings || !shares_stage_with_embedding;
  return final_norm + (needs_own_matrix ? static_cast<double>(m.vocab) * m.hidden : 0.0);
}

double total_params(const ModelSpec& m) {
  double p = embedding_params(m) + head_params(m, /*shares_stage_with_embedding=*/true);
  for (int l = 0; l < m.layers; ++l) p += layer_params(m, l);
  return p;
}

double layer_forward_flops(const ModelSpec& m, int layer, double sequences, int seq_len) {
  BatchShape shape{sequences, seq_len, 1, 2, false};
  return layer_forward_work(m, layer, shape).total_flops();
}

double head_forward_flops(const ModelSpec& m, double sequences, int seq_len) {
  if (is_generic(m)) return 0;
  // Logits: a (b·s x h) by (h x V) GEMM.
  return 2.0 * sequences * seq_len * m.hidden * m.vocab;
}

LayerWork layer_forward_work(const ModelSpec& m, int layer, const BatchShape& x) {
  LayerWork w;
  const double b = x.sequences, s = x.seq_len, t = x.tp, e = x.element_bytes;
  if (is_generic(m)) {
    const GenericLayer& g = m.generic_layers.at(layer);
    const double flops = g.forward_gflop * 1e9 * b / t;
    // Bytes: read the weights once and the activations in and out.
    const double bytes = g.params * e / t + (g.output_MB * 2) * 1e6 * b / t;
    w.ops[0] = {"layer", flops, bytes, flops};
    w.selective_op = -1;
    return w;
  }
  const double h = m.hidden, f = m.ffn_hidden, a = m.heads, kv = kv_dim(m);
  // This GPU's tokens: seq_len / cp of each of its b sequences.
  const double cp = x.cp, tokens = b * s / cp;
  const bool flash = fused_attention_possible(m, x);
  // GEMM (M x K) by (K x N): 2·M·K·N FLOPs, e·(MK + KN + MN) bytes.
  auto gemm = [&](const char* name, double M, double K, double N) {
    const double flops = 2 * M * K * N;
    OpWork op{name, flops, e * (M * K + K * N + M * N), flops};
    op.fp8_gemm = x.fp8;
    return op;
  };
  w.ops[0] = gemm("attn_qkv", tokens, h, (h + 2 * kv) / t);
  // Scores Q·K^T and context P·V: a/t heads per GPU, each (s x d)(d x s) and
  // (s x s)(s x d): 4·b·s²·h/t FLOPs (Narayanan et al. 2021); with cp this
  // GPU's s/cp queries meet all s keys: 1/cp of it. One batched GEMM per
  // head group; efficiency set by the whole batch.
  {
    const double flops = 4 * b * s * s * h / (t * cp);
    double bytes = e * (3 * tokens * h / t + b * s * kv * 2 / t);
    if (!flash) bytes += e * 2 * b * (a / t) * (s / cp) * s;  // the s x s scores go through HBM
    w.ops[1] = {"attn_core", flops, bytes, flops};
    w.ops[1].cuda_cores = !flash && !attention_on_tensor_cores(m, x);
    if (flash) {
      w.ops[1].backward_ratio = kFusedAttentionBackwardRatio;
      w.ops[1].fused_attention = true;
      // FlashAttention-2's throughput rises with the sequence a kernel
      // sees, about as L / (L + 300) (Dao 2023, Fig. 4: causal, head dim
      // 128, 512 -> 16k tokens: 0.6, 0.8, 0.9, 0.95 of the 16k figure at
      // 512, 1k, 2k, 4k; the H200 measurement of tests/data/device/h200,
      // attention.csv, flash and cuDNN alike: 0.80 and 0.76 of the 8k
      // figure at 1k, L / (L + 310) and L / (L + 360)): each CTA's fixed
      // work (loading its query tile, the final rescale and write) is
      // spread over fewer key blocks when L is short. The device figures
      // are those of kAttentionFigureTokens; a kernel sees s / cp tokens
      // (a ring step of cp runs it on blocks of s / cp).
      auto throughput = [](double tokens) { return tokens / (tokens + 300.0); };
      w.ops[1].attention_block_efficiency = throughput(s / cp) / throughput(kAttentionFigureTokens) *
                                            m.head_dim() / fused_attention_head_dim(m.head_dim());
    }
  }
  w.ops[2] = gemm("attn_out", tokens, h / t, h);
  {
    OpWork up = gemm("mlp", tokens, h, (mlp_matrices(m) - 1) * f / t);
    OpWork down = gemm("mlp", tokens, f / t, h);
    // The up and down GEMMs have the same FLOPs; efficiency from one GEMM of f.
    w.ops[3] = {"mlp", up.flops + down.flops, up.bytes + down.bytes, down.flops};
    w.ops[3].fp8_gemm = x.fp8;
  }
  {
    // Memory-bound elementwise work, bytes read + written: two norms (2 each),
    // two residual adds (3 each), the activation function over ffn (GeLU: 2;
    // SwiGLU: silu + product, 3 over f), softmax over the scores (2 per
    // element, skipped with fused flash attention), the dropouts (3 each).
    const double hidden_split = x.sequence_parallel ? t : 1.0;
    double elems = tokens * h * (2 * 2 + 2 * 3) / hidden_split;
    elems += tokens * f / t * (m.family == ModelFamily::llama ? 3 * 2 : 2);
    if (!flash) elems += 2 * b * (a / t) * (s / cp) * s * (m.dropout ? 2 : 1);
    if (m.dropout) elems += 2 * 3 * tokens * h / hidden_split;
    double bytes = elems * e;
    // FP8 casts (Transformer Engine): the inputs of the output projection
    // and of the second MLP GEMM are cast from 16 bits (read 2, write 1 byte
    // per element); the QKV and first MLP inputs are cast inside the fused
    // norm kernels. The backward's cast-transposes of the output gradients
    // are covered by the element-wise backward ratio.
    if (x.fp8) bytes += 3 * tokens * (h + f) / t;
    w.ops[4] = {"elementwise", 0, bytes, 0};
  }
  if (x.eager_modules) {
    // What op-level selective checkpointing replays (op_level_saved_bytes):
    // Llama's wk of the QKV products, w3 of the MLP's three; every product
    // of GPT's (biased: none kept); the output projection and the
    // element-wise work in both; the attention core unless a fused kernel
    // kept its output.
    w.op_level = true;
    const bool llama = m.family == ModelFamily::llama;
    w.op_level_replay = {llama ? kv / (h + 2 * kv) : 1.0, flash ? 0.0 : 1.0, 1.0, llama ? 1.0 / 3 : 1.0, 1.0};
  }
  return w;
}

LayerWork head_forward_work(const ModelSpec& m, const BatchShape& x) {
  LayerWork w;
  w.selective_op = -1;
  if (is_generic(m)) return w;
  const double tokens = x.sequences * x.seq_len / x.cp, t = x.tp, e = x.element_bytes;
  const double h = m.hidden, v = m.vocab;  // h·v overflows an int for real shapes (18432 x 256000)
  const double flops = 2 * tokens * h * v / t;
  w.ops[0] = {"lm_head", flops, e * (tokens * h + h * v / t + tokens * v / t), flops};
  // Final norm, and the fp32 softmax cross-entropy over the vocabulary shard.
  w.ops[4] = {"elementwise", 0, e * 2 * tokens * m.hidden + 4.0 * 3 * tokens * m.vocab / t, 0};
  return w;
}

LayerWork embedding_forward_work(const ModelSpec& m, const BatchShape& x) {
  LayerWork w;
  w.selective_op = -1;
  if (is_generic(m)) return w;
  // A gather of b·s rows of h, plus learned positions (GPT), dropout and
  // the embedding norm (read and write).
  const double tokens = x.sequences * x.seq_len / x.cp;
  const double passes = 2 + (m.family == ModelFamily::gpt ? 1 : 0) + (m.dropout ? 1 : 0) + (m.embedding_norm ? 2 : 0);
  w.ops[4] = {"embedding", 0, x.element_bytes * passes * tokens * m.hidden, 0};
  return w;
}

double embedding_activation_bytes(const ModelSpec& m, const BatchShape& x) {
  if (is_generic(m)) return 0;
  // What the embedding's backward keeps of each micro-batch: its dropout
  // mask (1 byte an element) and the embedding norm's input (in the
  // training's element type, as a layer norm's input in Korthikanti et al.
  // 2022, Sec. 4.1). The embedding's output is the first layer's input,
  // counted there; the gather itself keeps only the token ids. Megatron-LM
  // scatters the embedding output over tp before its dropout under
  // sequence parallelism.
  const double per_element = (m.dropout ? 1.0 : 0.0) + (m.embedding_norm ? x.element_bytes : 0);
  const double elements = x.sequences * x.seq_len / x.cp * m.hidden / (x.sequence_parallel ? x.tp : 1);
  return per_element * elements;
}

double layer_activation_bytes(const ModelSpec& m, int layer, const BatchShape& x, Recompute recompute) {
  const double b = x.sequences, t = x.tp;
  const double s = static_cast<double>(x.seq_len) / x.cp;  // this GPU's tokens of a sequence
  if (is_generic(m)) {
    const GenericLayer& g = m.generic_layers.at(layer);
    if (recompute == Recompute::full) return g.output_MB * 1e6 * b;
    return g.activation_MB * 1e6 * b;
  }
  const double h = m.hidden, f = m.ffn_hidden, a = m.heads;
  const double sbh = s * b * h;
  // Korthikanti et al. 2022 Sec. 4.1 derive 34·s·b·h + 5·a·s²·b for a GPT
  // layer at 16-bit (ffn = 4h, with dropout); the same accounting in terms of
  // ffn, kv heads and dropout so it holds for Llama:
  //  attention: norm input 2, QKV input 2, Q 2 and K,V 2·kv/h each, output
  //  projection input 2, dropout mask 1;  MLP: norm input 2, input 2,
  //  activation inputs 2·f/h per stored ffn tensor (GeLU: 2 tensors,
  //  SwiGLU: 3), dropout mask 1;  s x s: scores 2, dropout mask 1, dropout
  //  output 2 per a·s²·b (no dropout: scores only; flash attention: none).
  //  With FP8 linear layers the four GEMM inputs (QKV, projection, MLP
  //  input, second MLP GEMM's input) are saved as 1-byte casts.
  //  With cp, s is this GPU's s/cp tokens; its scores are (s/cp) x s.
  //  PyTorch's eager modules (BatchShape::eager_modules) keep two more
  //  tensors in a Llama layer: silu's output (2·f/h), and K and V repeated
  //  to all heads (2 each in place of 2·kv/h). Measured on an H200, Llama 3
  //  8B's layer as torchtitan writes it keeps 44.0 bytes a token and hidden
  //  unit (this accounting: 34 + 7 + 3 = 44) and a GPT layer with dropout
  //  34.0 (tests/data/device/h200/training_memory.csv).
  const bool dropout = m.dropout;
  const bool llama = m.family == ModelFamily::llama;
  const double kv_ratio = x.eager_modules && llama ? 1.0 : kv_dim(m) / h;
  const double linear_input = x.fp8 ? 1 : 2;
  const double attn = 2 + linear_input + 2 + 2 * 2 * kv_ratio + linear_input + (dropout ? 1 : 0);
  // ffn-wide tensors kept besides the second GEMM's input: GeLU's input;
  // SwiGLU's two inputs, and silu's output in eager PyTorch.
  const double ffn_kept = llama ? (x.eager_modules ? 3 : 2) : 1;
  const double mlp = 2 + linear_input + 2 * ffn_kept * f / h + linear_input * f / h + (dropout ? 1 : 0);
  const double linear_part = (attn + mlp) * sbh;                    // 34·sbh for GPT
  const bool flash = fused_attention_possible(m, x);
  const double score_part = flash ? 0.0 : (dropout ? 5.0 : 2.0) * a * s * x.seq_len * b;
  const double element_scale = x.element_bytes / 2.0;               // the formula counts 16-bit elements
  // Without sequence parallelism the norm inputs, the inputs of the first
  // linear of each block and the dropout masks are replicated across tp
  // (Korthikanti Eq. 2: s·b·h·(10 + 24/t + 5·a·s/(h·t))); with it every
  // part is split over tp (Eq. 3: s·b·h·(34/t + 5·a·s/(h·t))).
  const double replicated = x.sequence_parallel ? 0.0 : (2 * 2 + linear_input * 2 + (dropout ? 2 : 0)) * sbh;
  auto kept = [&](double scores) { return (replicated + (linear_part - replicated + scores) / t) * element_scale; };
  switch (recompute) {
    case Recompute::full:
      // Only the layer input is kept (Korthikanti Table 2: 2·s·b·h).
      return 2 * sbh * element_scale;
    case Recompute::selective:
      if (x.eager_modules) return op_level_saved_bytes(m, x, flash);
      // The attention core is replayed: its s x s part is not stored, and
      // the rest is kept as without recompute (Korthikanti Table 2:
      // 34·s·b·h/t with sequence parallelism, s·b·h·(10 + 24/t) without).
      return kept(0.0);
    case Recompute::none:
      break;
  }
  return kept(score_part);
}

double layer_working_bytes(const ModelSpec& m, int layer, const BatchShape& x, Recompute recompute) {
  // A listed layer's output exists while the layer makes it, whatever it
  // keeps for its backward (activation_MB, which its author may count
  // apart from it): a layer with a 100 GB output on a 40 GB GPU was said to
  // fit, priced in time (its HBM traffic and sends) and not in memory.
  if (is_generic(m)) {
    const double output = layer_output_bytes(m, layer, x.sequences, x.seq_len, x.element_bytes);
    const double replayed = recompute == Recompute::full ? layer_activation_bytes(m, layer, x, Recompute::none) : 0.0;
    return std::max(output, replayed);
  }
  if (recompute == Recompute::none) return 0;
  if (recompute == Recompute::full) return layer_activation_bytes(m, layer, x, Recompute::none);
  // Selective: the replayed attention core of one layer.
  return layer_activation_bytes(m, layer, x, Recompute::none) -
         layer_activation_bytes(m, layer, x, Recompute::selective);
}

double context_parallel_kv_bytes(const ModelSpec& m, int layer, const BatchShape& x) {
  if (is_generic(m) || x.cp <= 1) return 0;
  (void)layer;  // transformer layers are identical
  return 2.0 * x.element_bytes * x.sequences * (static_cast<double>(x.seq_len) / x.cp) * kv_dim(m) / x.tp;
}

double layer_output_bytes(const ModelSpec& m, int layer, double sequences, int seq_len, int element_bytes) {
  if (is_generic(m)) return m.generic_layers.at(layer).output_MB * 1e6 * sequences;
  return static_cast<double>(element_bytes) * sequences * seq_len * m.hidden;
}

double logits_bytes(const ModelSpec& m, const BatchShape& x, double loss_bytes_per_logit, int held_outputs) {
  if (is_generic(m)) return 0;
  const double per_element = x.element_bytes * (1.0 + held_outputs) + loss_bytes_per_logit;
  return per_element * x.sequences * x.seq_len / x.cp * m.vocab / x.tp;
}

}  // namespace autohaap
