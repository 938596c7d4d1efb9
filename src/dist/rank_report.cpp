#include "autohaap/dist/rank_report.hpp"

#include <cstdio>

namespace autohaap::dist {
namespace {

std::string line(const char* rank, const RankReport& r) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%-5s %7lld %9lld %6lld %6lld %9lld %9lld %10lld %10lld %6.1f%% %11lld %11lld %8.2f %8.2f %8.2f\n", rank,
                static_cast<long long>(r.share_chunks), static_cast<long long>(r.share_skeletons),
                static_cast<long long>(r.chunks_done), static_cast<long long>(r.chunks_taken),
                static_cast<long long>(r.evaluated), static_cast<long long>(r.pruned),
                static_cast<long long>(r.cache_hits), static_cast<long long>(r.cache_peer_hits), 100.0 * r.hit_rate(),
                static_cast<long long>(r.bytes_sent), static_cast<long long>(r.bytes_received), r.search_s,
                r.exchange_s, r.idle_s);
  return buf;
}

}  // namespace

std::string format_rank_table(const std::vector<RankReport>& ranks) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-5s %7s %9s %6s %6s %9s %9s %10s %10s %7s %11s %11s %8s %8s %8s\n", "rank",
                "chunks", "skeletons", "done", "taken", "evaluated", "pruned", "own hits", "peer hits", "hits",
                "bytes sent", "bytes recv", "search s", "exch s", "idle s");
  std::string out = buf;
  RankReport total;
  for (const RankReport& r : ranks) {
    out += line(std::to_string(r.rank).c_str(), r);
    total.share_chunks += r.share_chunks;
    total.share_skeletons += r.share_skeletons;
    total.chunks_done += r.chunks_done;
    total.chunks_taken += r.chunks_taken;
    total.evaluated += r.evaluated;
    total.pruned += r.pruned;
    total.cache_hits += r.cache_hits;
    total.cache_peer_hits += r.cache_peer_hits;
    total.cache_misses += r.cache_misses;
    total.bytes_sent += r.bytes_sent;
    total.bytes_received += r.bytes_received;
    total.search_s += r.search_s;
    total.exchange_s += r.exchange_s;
    total.idle_s += r.idle_s;
  }
  if (ranks.size() > 1) out += line("all", total);
  return out;
}

}  // namespace autohaap::dist
