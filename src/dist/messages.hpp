// Messages: what ranks of a distributed search send each other, with their
// Boost.Serialization functions (Boost.MPI packs them into its archives).
//
// The search's own types (Plan, CacheDelta, SearchCheckpoint) already have
// one schema, written for cereal; they travel inside a message as a
// CerealPayload — their cereal binary archive, stored as one string — so a
// field added to them reaches the wire without a second list of fields
// here. Numbers in both archives keep every bit (doubles are copied, not
// printed), which the same-answer promise needs: a bound or a cache entry
// received must equal the one computed. Ranks are assumed to share one
// byte order and one build of autohaap (an MPI job's normal case; the list
// digest checked at start-up catches a mixed job).
//
// Private to src/dist and its tests. Cost: linear in the message.
#pragma once

#include <boost/serialization/split_member.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "autohaap/dist/mpi_session.hpp"
#include "autohaap/dist/rank_report.hpp"
#include "autohaap/io/plan_serialization.hpp"
#include "autohaap/plan_status.hpp"
#include "autohaap/search/search_synchronizer.hpp"
#include "autohaap/io/search_serialization.hpp"

namespace autohaap::dist {

// A value of a cereal-serializable type inside a Boost archive.
template <class T>
struct CerealPayload {
  T value{};

  template <class Archive>
  void save(Archive& ar, unsigned /*version*/) const {
    std::ostringstream out(std::ios::binary);
    {
      cereal::BinaryOutputArchive archive(out);
      archive(value);
    }
    const std::string bytes = out.str();
    ar << bytes;
  }
  template <class Archive>
  void load(Archive& ar, unsigned /*version*/) {
    std::string bytes;
    ar >> bytes;
    std::istringstream in(bytes, std::ios::binary);
    cereal::BinaryInputArchive archive(in);
    archive(value);
  }
  BOOST_SERIALIZATION_SPLIT_MEMBER()
};

// Rank 0 to every rank, once before the search: how the skeleton list is
// cut into chunks and whether a checkpoint was restored. Every rank checks
// the fingerprint and digest against its own inputs and list.
struct ShareTable {
  std::uint64_t fingerprint = 0;
  std::uint64_t list_digest = 0;
  std::uint64_t skeletons = 0;
  std::vector<std::uint64_t> chunk_end;  // chunk c: positions [chunk_end[c-1], chunk_end[c])
  bool resumed = false;                  // a checkpoint follows

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar & fingerprint & list_digest & skeletons & chunk_end & resumed;
  }
};

// The driver's messages (search/search_synchronizer.hpp): RoundReport,
// every rank to every rank at each exchange (small: the cache entries
// follow in a second all-gather, CacheEntries, only when another round will
// use them), and Outcome, rank 0 to every rank at the end.
using autohaap::Outcome;
using autohaap::RoundReport;

// Every rank to every rank after a round that is not the last: the cache
// entries it computed since the previous exchange.
using CacheEntries = CerealPayload<CacheDelta>;

// Every rank to rank 0, for a checkpoint and at the end: its top-K.
using PlanList = CerealPayload<std::vector<Plan>>;

}  // namespace autohaap::dist

namespace boost::serialization {

template <class Archive>
void serialize(Archive& ar, autohaap::RoundReport& r, unsigned /*version*/) {
  ar & r.finished & r.top_keys & r.top_times & r.evaluated & r.skipped & r.no_split & r.open_bound & r.stop &
      r.cancelled & r.checkpoint_now & r.failure_code & r.failure;
}

template <class Archive>
void serialize(Archive& ar, autohaap::Outcome& o, unsigned /*version*/) {
  auto status = static_cast<std::int32_t>(o.status);
  ar & status & o.failure_code & o.failure;
  o.status = static_cast<autohaap::PlanStatus>(status);
}

template <class Archive>
void serialize(Archive& ar, autohaap::dist::RankFailure& f, unsigned /*version*/) {
  ar & f.rank & f.exit_code & f.message;
}

template <class Archive>
void serialize(Archive& ar, autohaap::dist::RankReport& r, unsigned /*version*/) {
  ar & r.rank & r.threads & r.share_chunks & r.share_skeletons & r.chunks_done & r.chunks_taken & r.evaluated &
      r.pruned & r.cache_hits & r.cache_peer_hits & r.cache_misses & r.bytes_sent & r.bytes_received & r.rounds &
      r.search_s & r.exchange_s & r.idle_s & r.wall_s;
}

}  // namespace boost::serialization
