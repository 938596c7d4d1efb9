#include "autohaap/search/latency_cache.hpp"

#include <algorithm>
#include <initializer_list>

namespace autohaap {
namespace {

// Hash of a few small integers: a multiply-add per field, one strong
// finalizer (splitmix64) at the end, so a key differing in any one field
// lands anywhere. Lookups hash every key once, so this stays cheap.
std::size_t hash_ints(std::initializer_list<int> values) {
  std::uint64_t h = 0;
  for (int v : values) h = h * 0x9e3779b97f4a7c15ULL + static_cast<std::uint32_t>(v) + 1;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return static_cast<std::size_t>(h);
}

template <class Table, class Out, class Keep>
void collect(const Table& table, Out& out, Keep keep) {
  table.visit([&](const auto& key, const auto& stored) {
    if (keep(stored)) out.emplace_back(key, stored.entry);
  });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}

}  // namespace

std::size_t LatencyCache::Hash::operator()(const LayerKey& k) const {
  return hash_ints({k.group, k.tp, k.dp, k.micro_batch, k.recompute, k.layer, k.first, k.last});
}

std::size_t LatencyCache::Hash::operator()(const StageKey& k) const {
  return hash_ints({k.group,          k.first_gpu,      k.gpus,      k.tp,          k.dp,         k.micro_batch,
                    k.recompute,      k.layer_begin,    k.layer_end, k.stage_index, k.num_stages, k.num_micro_batches,
                    k.prev_group,     k.prev_first_gpu, k.prev_gpus, k.prev_tp,     k.prev_dp,    k.next_group,
                    k.next_first_gpu, k.next_gpus,      k.next_tp,   k.next_dp,    k.vpp,        k.wrap_group,
                    k.wrap_first_gpu, k.wrap_gpus,      k.wrap_tp,   k.wrap_dp});
}

CacheDelta LatencyCache::delta_since(std::uint64_t mark) const {
  CacheDelta delta;
  auto added = [mark](const auto& stored) { return stored.origin == Origin::computed && stored.sequence >= mark; };
  collect(layers_, delta.layers, added);
  collect(stages_, delta.stages, added);
  return delta;
}

CacheDelta LatencyCache::snapshot() const {
  CacheDelta all;
  auto any = [](const auto&) { return true; };
  collect(layers_, all.layers, any);
  collect(stages_, all.stages, any);
  return all;
}

void LatencyCache::import(const CacheDelta& delta, bool from_peer) {
  // Imported entries are never echoed back in this process's deltas: every
  // peer already has what it sent, and a loaded file is every rank's.
  const Origin origin = from_peer ? Origin::peer : Origin::loaded;
  for (const auto& [key, entry] : delta.layers) {
    if (full()) return;
    layers_.insert(key, {entry, 0, origin});
  }
  for (const auto& [key, entry] : delta.stages) {
    if (full()) return;
    stages_.insert(key, {entry, 0, origin});
  }
}

CacheCounters LatencyCache::counters() const {
  CacheCounters c;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.peer_hits = peer_hits_.load(std::memory_order_relaxed);
  c.misses = misses_.load(std::memory_order_relaxed);
  c.entries = static_cast<std::int64_t>(layers_.size() + stages_.size());
  return c;
}

void LatencyCache::reset_counters() {
  hits_.store(0);
  peer_hits_.store(0);
  misses_.store(0);
}

}  // namespace autohaap
