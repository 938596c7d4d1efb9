#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {

std::string interleaving_violation(const ModelSpec& model, int vpp, const std::vector<int>& stage_layers,
                                   int num_micro_batches) {
  if (vpp < 1) return "an integer >= 1";
  if (vpp == 1) return "";
  if (model.family == ModelFamily::generic) return "1 (generic layers are not interleaved)";
  const int stages = static_cast<int>(stage_layers.size());
  if (stages < 2) return "1 with a single stage (interleaving needs at least 2 pipeline stages)";
  for (int layers : stage_layers)
    if (layers < vpp)
      return "at most every stage's layer count (a stage has " + std::to_string(layers) + "): a chunk holds a layer or more";
  if (num_micro_batches % stages != 0)
    return "1 unless the micro-batches (" + std::to_string(num_micro_batches) + ") are a multiple of the " +
           std::to_string(stages) + " stages";
  return "";
}

std::string context_parallel_violation(const ModelSpec& model, int seq_len, int cp) {
  if (cp < 1) return "an integer >= 1";
  if (cp == 1) return "";
  if (model.family == ModelFamily::generic) return "1 (generic layers have no sequence to split)";
  if (seq_len % (2 * cp) != 0)
    return "a cp with 2 x cp dividing the sequence length " + std::to_string(seq_len) +
           " (each GPU takes two mirrored chunks)";
  return "";
}

}  // namespace autohaap
