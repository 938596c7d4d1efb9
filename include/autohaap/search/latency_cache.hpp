// LatencyCache: memoized cost-model answers shared by every search thread,
// so a skeleton or a tuning move recomputes only what it has not seen.
//
// Two tables:
//  - layer entries: time and memory of one layer (or the embedding / LM-head
//    edge) on one GPU of a stage shape, keyed by (group, tp, dp, B,
//    recompute, layer kind or generic layer index, edge flags);
//  - stage entries: a whole stage's forward/backward, pipeline send/recv,
//    data-parallel sync, optimizer step and memory, keyed by the stage's
//    shape and placement, its layer range, its position in the pipeline,
//    its neighbours' placement and the micro-batch count. Moving one layer
//    between two stages changes two keys; every other stage is a hit.
// Entries are plain structs (their cereal form is in
// io/search_serialization.hpp), so a distributed driver can ship them:
// delta_since(mark) returns the entries this process added after a mark,
// import() takes a peer's; a hit on an imported entry counts as a peer
// hit, not a hit. Keys do not name the model or devices:
// one cache serves one Problem (a persistent cache must be stored with a
// fingerprint of the Problem).
//
// Thread safety: every method may be called from any thread at once, except
// delta_since / snapshot, which must not run concurrently with inserts
// (call them between search phases). Cost: one hash lookup per query, in
// the thread's own memo first (get); a delta scans the table,
// O(entries log entries).
//
// Memory: at most max_entries entries, layer and stage together (about
// 250 bytes each; the default, 2,000,000, about 500 MB). Past it a miss is
// computed and returned but not stored, and imports stop; nothing is
// evicted. A stored entry is only ever a memo of a deterministic
// computation, so a full cache changes the time a search takes, never its
// answer. Why a cap: a search's hit rate comes from stages that repeat
// across skeletons; a 1,024-layer model on 32 GPUs missed 8.8 million
// times (each skeleton's stages at every length) and held 2.2 GB.
#pragma once

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "autohaap/search/parallel.hpp"

namespace autohaap {

struct LayerKey {
  int group = 0;
  int tp = 1;
  int dp = 1;
  int micro_batch = 1;
  int recompute = 0;  // Recompute as int
  int layer = -1;     // -1: the (identical) transformer layer; >= 0: generic layer index
  int first = 0;      // 1: embedding edge of the first stage
  int last = 0;       // 1: head edge of the last stage (first = last = 0: a layer)

  auto operator<=>(const LayerKey&) const = default;
};

struct LayerEntry {
  double forward_s = 0;
  double backward_s = 0;
  double static_bytes = 0;
  double activation_bytes = 0;
  double working_bytes = 0;
};

struct StageKey {
  // the stage
  int group = 0, first_gpu = 0, gpus = 0, tp = 1, dp = 1;
  int micro_batch = 1, recompute = 0;
  int layer_begin = 0, layer_end = 0;
  int stage_index = 0, num_stages = 1, num_micro_batches = 1;
  // its neighbours' placement (group = -1: none); they decide the p2p links
  int prev_group = -1, prev_first_gpu = 0, prev_gpus = 0, prev_tp = 0, prev_dp = 0;
  int next_group = -1, next_first_gpu = 0, next_gpus = 0, next_tp = 0, next_dp = 0;
  // Interleaving: chunks per stage, and for the first and last stage under
  // vpp > 1 or with tied embeddings the other end of the pipeline (chunk k
  // of the last stage feeds chunk k + 1 of the first; the two ends
  // all-reduce the tied matrix's gradient; group = -1: none). They change
  // the sends, the micro-batches in flight and the sync.
  int vpp = 1;
  int wrap_group = -1, wrap_first_gpu = 0, wrap_gpus = 0, wrap_tp = 0, wrap_dp = 0;

  auto operator<=>(const StageKey&) const = default;
};

struct StageEntry {
  double forward_s = 0;
  double backward_s = 0;
  double p2p_s = 0;
  double dp_sync_s = 0;
  double optimizer_s = 0;
  double memory_bytes = 0;    // per GPU, total
  double capacity_bytes = 0;  // device memory

  double time_s() const { return forward_s + backward_s; }
  // As StageEstimate's (plan.hpp): compute plus sends; sync plus step.
  double pace_s() const { return time_s() + p2p_s; }
  double tail_s() const { return dp_sync_s + optimizer_s; }
  bool fits() const { return memory_bytes <= capacity_bytes; }
};

// Entries in key order: what one process sends its peers.
struct CacheDelta {
  std::vector<std::pair<LayerKey, LayerEntry>> layers;
  std::vector<std::pair<StageKey, StageEntry>> stages;

  bool empty() const { return layers.empty() && stages.empty(); }
};

struct CacheCounters {
  std::int64_t hits = 0;       // hits on entries computed here
  std::int64_t peer_hits = 0;  // hits on imported entries
  std::int64_t misses = 0;     // lookups that had to compute
  std::int64_t entries = 0;    // layer + stage entries held
};

class LatencyCache {
 public:
  static constexpr std::size_t kDefaultMaxEntries = 2'000'000;
  explicit LatencyCache(std::size_t max_entries = kDefaultMaxEntries) : max_entries_(max_entries) {}

  // The entry for `key`; on a miss, compute() -> Entry is called and stored.
  // Two threads missing the same key may both compute; one value is kept
  // (the cost model is deterministic, so they are equal).
  template <class Compute>
  LayerEntry layer(const LayerKey& key, Compute&& compute) {
    return get(layers_, key, compute);
  }
  template <class Compute>
  StageEntry stage(const StageKey& key, Compute&& compute) {
    return get(stages_, key, compute);
  }

  // Marks "now": entries added later belong to the next delta.
  std::uint64_t mark() const { return sequence_.load(std::memory_order_acquire); }
  // Entries computed here (not imported) since `mark`, in key order.
  CacheDelta delta_since(std::uint64_t mark) const;
  // Every entry, in key order (for a persistent cache).
  CacheDelta snapshot() const;
  // Adds entries not yet present; they never appear in this process's
  // deltas. from_peer: hits on them count as peer hits; otherwise (loaded
  // from disk) as ordinary hits.
  void import(const CacheDelta& delta, bool from_peer = true);

  CacheCounters counters() const;
  // Hits/misses since construction minus these (for per-phase reports).
  void reset_counters();

 private:
  enum class Origin : std::uint8_t { computed, peer, loaded };
  template <class Entry>
  struct Stored {
    Entry entry;
    std::uint64_t sequence = 0;  // order of computation; meaningful for `computed` only
    Origin origin = Origin::computed;
  };
  struct Hash {
    std::size_t operator()(const LayerKey& k) const;
    std::size_t operator()(const StageKey& k) const;
  };
  template <class Key, class Entry>
  using Table = parallel::ConcurrentMap<Key, Stored<Entry>, Hash>;

  // Each thread's memo in front of the tables: the last entry it saw at
  // each of kFrontSlots hash positions. A search thread asks for the same
  // stage entries again and again, and a lookup in a table of millions of
  // entries is two dependent loads from main memory and a bucket lock.
  // The slot also keeps what a full cache computed without storing it.
  // Llama 3 70B on eight node groups of 64 GPUs, 2 threads: 88% of lookups
  // answered here, misses 38.6 -> 13.4 million, 199 -> 180 s of CPU; on
  // six groups 14.4 -> 10.4 s. A slot answers only for the cache that
  // filled it (id_); entries never change once computed, so a slot is
  // never stale. Memory: about 210 bytes a stage slot, 7 MB a thread.
  static constexpr std::size_t kFrontSlots = 32768;
  template <class Key, class Entry>
  struct FrontSlot {
    std::uint64_t owner = 0;  // id_ of the cache that filled it; 0: empty
    std::size_t hash = 0;
    Key key{};
    Entry entry{};
    Origin origin = Origin::computed;
  };
  template <class Key, class Entry>
  static FrontSlot<Key, Entry>& front_slot(std::size_t hash) {
    thread_local std::vector<FrontSlot<Key, Entry>> slots(kFrontSlots);
    return slots[hash & (kFrontSlots - 1)];
  }

  template <class Key, class Entry, class Compute>
  Entry get(Table<Key, Entry>& table, const Key& key, Compute& compute) {
    const std::size_t hash = Hash{}(key);
    FrontSlot<Key, Entry>& slot = front_slot<Key, Entry>(hash);
    if (slot.owner == id_ && slot.hash == hash && slot.key == key) {
      (slot.origin == Origin::peer ? peer_hits_ : hits_).fetch_add(1, std::memory_order_relaxed);
      return slot.entry;
    }
    auto remember = [&](const Entry& entry, Origin origin) {
      slot = FrontSlot<Key, Entry>{id_, hash, key, entry, origin};
      return entry;
    };
    if (auto found = table.find(key)) {
      (found->origin == Origin::peer ? peer_hits_ : hits_).fetch_add(1, std::memory_order_relaxed);
      return remember(found->entry, found->origin);
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (full()) return remember(compute(), Origin::computed);
    Stored<Entry> stored{compute(), sequence_.fetch_add(1, std::memory_order_acq_rel), Origin::computed};
    table.insert(key, stored);
    return remember(stored.entry, Origin::computed);
  }
  // Threads that check at once may each add one entry past the cap.
  bool full() const { return layers_.size() + stages_.size() >= max_entries_; }

  inline static std::atomic<std::uint64_t> next_id_{1};
  const std::uint64_t id_ = next_id_.fetch_add(1, std::memory_order_relaxed);
  std::size_t max_entries_;
  Table<LayerKey, LayerEntry> layers_;
  Table<StageKey, StageEntry> stages_;
  std::atomic<std::uint64_t> sequence_{0};
  std::atomic<std::int64_t> hits_{0}, peer_hits_{0}, misses_{0};
};

}  // namespace autohaap
