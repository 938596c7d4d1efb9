// Search serialization: the cereal form of the search's plain structs that
// leave the process — latency-cache entries and deltas (the persistent
// cache file, checkpoints, MPI exchanges), prune reports (checkpoints) and
// skeletons — kept out of the search headers so that the search builds
// without cereal. Included only by the code that writes or ships them
// (src/batch/cache_file.cpp, dist/checkpoint.hpp, src/dist, their tests).
//
// Non-member serialize() functions, found by cereal through argument-
// dependent lookup; the field order is the wire and file format: changing
// it changes the cache file and checkpoint versions (cache_file.cpp,
// checkpoint.cpp). Numbers are stored as their bits (binary archives), so
// a value read back equals the one written. Stateless; thread-safe.
#pragma once

#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include "autohaap/search/init_progress.hpp"
#include "autohaap/search/init_round.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_space.hpp"

namespace autohaap {

template <class Archive>
void serialize(Archive& ar, LayerKey& k) {
  ar(k.group, k.tp, k.dp, k.micro_batch, k.recompute, k.layer, k.first, k.last);
}

template <class Archive>
void serialize(Archive& ar, LayerEntry& e) {
  ar(e.forward_s, e.backward_s, e.static_bytes, e.activation_bytes, e.working_bytes);
}

template <class Archive>
void serialize(Archive& ar, StageKey& k) {
  ar(k.group, k.first_gpu, k.gpus, k.tp, k.dp, k.micro_batch, k.recompute, k.layer_begin, k.layer_end,
     k.stage_index, k.num_stages, k.num_micro_batches, k.prev_group, k.prev_first_gpu, k.prev_gpus, k.prev_tp,
     k.prev_dp, k.next_group, k.next_first_gpu, k.next_gpus, k.next_tp, k.next_dp, k.vpp, k.wrap_group,
     k.wrap_first_gpu, k.wrap_gpus, k.wrap_tp, k.wrap_dp);
}

template <class Archive>
void serialize(Archive& ar, StageEntry& e) {
  ar(e.forward_s, e.backward_s, e.p2p_s, e.dp_sync_s, e.optimizer_s, e.memory_bytes, e.capacity_bytes);
}

template <class Archive>
void serialize(Archive& ar, CacheDelta& d) {
  ar(d.layers, d.stages);
}

template <class Archive>
void serialize(Archive& ar, PruneReport& r) {
  ar(r.considered, r.kept, r.removed);
}

template <class Archive>
void serialize(Archive& ar, StageSlot& s) {
  ar(s.group, s.first_gpu, s.gpus, s.tp, s.dp);
}

template <class Archive>
void serialize(Archive& ar, Skeleton& s) {
  ar(s.id, s.micro_batch, s.stages, s.lower_bound_s, s.work);
}

// Plans serialize through io/plan_serialization.hpp, which the code that
// writes this must include.
template <class Archive>
void serialize(Archive& ar, InitProgress& p) {
  ar(p.next_task, p.tasks, p.kept, p.probes, p.threshold_s, p.prune, p.cut_at, p.dropped_bound_s, p.limit_cutoff_s);
}

template <class Archive>
void serialize(Archive& ar, InitBlock& b) {
  ar(b.index, b.kept, b.prune, b.plans, b.dropped_bound_s, b.walk_s);
}

template <class Archive>
void serialize(Archive& ar, InitRound& r) {
  ar(r.blocks, r.stopped, r.cancelled, r.overflow, r.peak_kept, r.failure_code, r.file, r.key, r.value, r.allowed, r.bounds);
}

}  // namespace autohaap
