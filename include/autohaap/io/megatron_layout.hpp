// Megatron-Core pipeline layout: the text of --pipeline-model-parallel-layout,
// written from a plan's layers per stage and read back.
//
// Megatron-Core (0.13+) accepts any split of the layers over pipeline ranks
// and virtual stages as one string (Megatron-LM docs, --help of
// --pipeline-model-parallel-layout; megatron/core/transformer/
// pipeline_parallel_layer_layout.py):
//   - '|' separates virtual pipeline stages, listed in model order: with v
//     chunks per rank over p ranks, segment k belongs to pipeline rank
//     k mod p, chunk k div p (chunk 0 of every rank, then chunk 1, …), so the
//     number of segments is a multiple of p and v = segments / p;
//   - 'E' is the embedding, 't' a transformer (decoder) layer, 'L' the loss
//     (output head); the first symbol of the model is E, the last L, each
//     exactly once; 'm' (multi-token prediction) exists in Megatron but has
//     no counterpart in AutoHAAP's models and is refused here;
//   - 'X*N' repeats the symbol X N times, '(...)*N' repeats a group (which
//     may hold '|'); groups are expanded first, then symbols; groups do not
//     nest;
//   - ',' is cosmetic and ignored; nothing else (not even a space) is
//     allowed.
// One place writes the layout (the Megatron export) and one reads it
// (tests, round trips), so the two cannot drift apart.
//
// Callers: io/megatron_export.cpp, tests. Pure, thread-safe; cost linear in
// the expanded text, which parse_megatron_layout caps (kMaxExpandedLayout).
#pragma once

#include <string>
#include <vector>

namespace autohaap {

// The layout of a cut: cut[i][c] transformer layers in chunk c of pipeline
// stage i (every stage the same number of chunks, its vpp), in
// Megatron-Core's grammar without quotes: E before the first chunk, L after
// the last, a run of N > 1 layers written t*N, and a run of equal segments
// before the last one written (seg|)*K. Example: {{3}, {5}, {5}, {5}, {6}}
// -> "Et*3|(t*5|)*3t*6L". Requires cut non-empty, every stage >= 1 chunk.
std::string format_megatron_layout(const std::vector<std::vector<int>>& cut);
// `stage_layers` split into `vpp` chunks per stage as chunk_layers splits
// them (specs/parallel_rules.hpp).
std::string format_megatron_layout(const std::vector<int>& stage_layers, int vpp);

// A parsed layout: transformer layers per (pipeline rank, chunk).
struct MegatronLayout {
  int vpp = 1;                              // chunks per pipeline rank
  std::vector<std::vector<int>> layers;     // layers[rank][chunk]
  // Layers each pipeline rank holds over all its chunks.
  std::vector<int> stage_layers() const;
};

// Expanded layouts longer than this are refused (a hostile 't*999999999').
inline constexpr std::size_t kMaxExpandedLayout = 1u << 20;

// Reads `text` for a pipeline of `pipeline_size` ranks. Throws InputError
// (key --pipeline-model-parallel-layout, the text, what is allowed) on an
// unknown symbol, an unbalanced or nested group, a repeat without a count,
// a segment count that is not a multiple of pipeline_size, or an embedding
// or loss missing, repeated or out of place.
MegatronLayout parse_megatron_layout(const std::string& text, int pipeline_size);

}  // namespace autohaap
