// ModelSpec: the network to train. Two transformer families with published
// shapes (GPT: learned positions + GeLU MLP; Llama: RoPE + SwiGLU + GQA) and
// a generic layer-list form for any sequential network.
#pragma once

#include <string>
#include <vector>

namespace autohaap {

enum class ModelFamily { gpt, llama, generic };

// One layer of a generic sequential model, per sequence of the model's
// seq_len. The cost model treats such a layer as one GEMM-like op of
// `forward_gflop` (backward = 2x forward) and keeps `activation_MB` per
// sequence for the backward pass; `output_MB` is what crosses a pipeline
// boundary after this layer. Generic layers are not tensor-parallel (tp = 1).
struct GenericLayer {
  std::string name;
  double params = 0;            // parameter count
  double forward_gflop = 0;     // per sequence
  double activation_MB = 0;     // stored for backward, per sequence
  double output_MB = 0;         // layer output, per sequence
};

struct ModelSpec {
  std::string name;
  ModelFamily family = ModelFamily::gpt;
  int layers = 0;
  int hidden = 0;
  int ffn_hidden = 0;
  int heads = 0;
  int kv_heads = 0;             // == heads without grouped-query attention
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = false;
  // Attention that never materializes the s x s score matrix (FlashAttention):
  // removes the 5·a·s/h activation term of Korthikanti et al. 2022.
  bool flash_attention = false;
  // Dropout after attention and MLP (and on the attention probabilities
  // without flash attention): its masks are stored for the backward pass
  // and its passes read and write the activations. GPT-3 and Megatron-LM's
  // defaults use it; Llama, MPT and BLOOM train without.
  bool dropout = false;
  std::vector<GenericLayer> generic_layers;  // family == generic only; size == layers
  // A LayerNorm right after the word embedding (BLOOM's
  // word_embeddings_layernorm, Megatron-DeepSpeed's --embed-layernorm): its
  // input is stored for the backward on the first stage, outside any
  // recomputed block.
  bool embedding_norm = false;

  int head_dim() const { return heads > 0 ? hidden / heads : 0; }
};

const char* to_string(ModelFamily family);

}  // namespace autohaap
