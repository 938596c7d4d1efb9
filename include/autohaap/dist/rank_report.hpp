// RankReport: what one rank of a distributed search did — its share, the
// work it searched, how its latency cache served it, and where its time
// went (searching, exchanging, waiting for peers) — so a user can see
// whether the ranks were balanced and whether exchanging paid off
// (`autohaap search --rank-report`).
//
// Plain data, filled by the distributed search (distributed_search.hpp) and
// gathered on rank 0. Cost: the table is O(ranks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autohaap::dist {

struct RankReport {
  int rank = 0;
  int threads = 1;
  // The share first dealt to this rank: chunks and the skeletons in them.
  std::int64_t share_chunks = 0;
  std::int64_t share_skeletons = 0;
  // Chunks this rank searched to the end, and how many of them it took over
  // from a peer that still had work queued (dynamic rebalancing).
  std::int64_t chunks_done = 0;
  std::int64_t chunks_taken = 0;
  // Search phase only (after initialization).
  std::int64_t evaluated = 0;      // plans fully estimated
  std::int64_t pruned = 0;         // skeletons skipped by the bound or with no feasible split
  std::int64_t cache_hits = 0;     // hits on entries this rank computed or restored
  std::int64_t cache_peer_hits = 0;  // hits on entries peers sent
  std::int64_t cache_misses = 0;
  // Exchanges: message bytes this rank sent once (every peer receives them)
  // and the bytes it received from all peers; rounds taken part in.
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  std::int64_t rounds = 0;
  double search_s = 0;    // searching its chunks
  double exchange_s = 0;  // in collectives once every rank had arrived, merging what came back,
                          // and (rank 0) writing checkpoints
  double idle_s = 0;      // waiting for peers to reach an exchange
  double wall_s = 0;      // the whole distributed search on this rank

  double hit_rate() const {
    const double lookups = static_cast<double>(cache_hits + cache_peer_hits + cache_misses);
    return lookups > 0 ? static_cast<double>(cache_hits + cache_peer_hits) / lookups : 0.0;
  }
};

// One line per rank and a total line: share, chunks, evaluated, pruned,
// cache hits (own / peer), hit rate, bytes, search / exchange / idle
// seconds.
std::string format_rank_table(const std::vector<RankReport>& ranks);

}  // namespace autohaap::dist
