// TrainingSpec: how the model is trained — batch, precision, optimizer,
// ZeRO stage, and which micro-batch sizes and recompute modes the search may
// choose from.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autohaap {

enum class Precision { bf16, fp16, fp32 };
enum class Optimizer { adam, sgd };
enum class Recompute { none, selective, full };

struct TrainingSpec {
  int global_batch = 512;       // sequences per iteration
  int seq_len = 0;              // 0: the model's seq_len
  Precision precision = Precision::bf16;
  Optimizer optimizer = Optimizer::adam;
  // 0: plain data parallel; 1: optimizer states sharded over dp (Megatron's
  // distributed optimizer); 2: + gradients; 3: + weights (ZeRO-3/FSDP).
  int zero = 1;
  std::vector<int> micro_batch_sizes = {1, 2, 4, 8};     // B per pipeline, searched
  std::vector<Recompute> recompute_modes = {Recompute::none, Recompute::selective, Recompute::full};
  double headroom_GiB = 2.0;    // reserved per GPU: CUDA context, allocator fragmentation, buffers
  bool sequence_parallel = true;  // Megatron sequence parallelism with tp > 1
};

const char* to_string(Precision p);
const char* to_string(Optimizer o);
const char* to_string(Recompute r);
// The inverse of to_string: a Recompute for "none", "selective" or "full".
std::optional<Recompute> parse_recompute(std::string_view name);

// Bytes of one parameter / activation element at this precision.
int bytes_per_element(Precision p);

}  // namespace autohaap
