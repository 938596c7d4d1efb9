// Every message ranks exchange survives Boost.MPI's packed archives and
// Boost.Serialization's binary archive bit for bit, and the collectives of
// RankGroup deliver each rank's message to the right place. Run under
// mpiexec with 1 or more ranks; the collective tests involve every rank.
#include <gtest/gtest.h>

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/mpi/communicator.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "../unit/plan_fixtures.hpp"
#include "autohaap/dist/checkpoint.hpp"
#include "autohaap/error.hpp"
#include "dist_fixtures.hpp"
#include "dist_test_session.hpp"
#include "messages.hpp"
#include "mpi_session_impl.hpp"
#include "rank_group.hpp"

namespace autohaap::dist::testing {
namespace {

template <class T>
T packed_round_trip(const T& value) {
  const boost::mpi::communicator& world = g_session->impl().world;
  boost::mpi::packed_oarchive out(world);
  out << value;
  boost::mpi::packed_iarchive::buffer_type buffer(out.size());
  std::copy_n(static_cast<const char*>(out.address()), out.size(), buffer.data());
  boost::mpi::packed_iarchive in(world, buffer);
  T back;
  in >> back;
  return back;
}

template <class T>
T binary_round_trip(const T& value) {
  std::stringstream bytes;
  {
    boost::archive::binary_oarchive out(bytes);
    out << value;
  }
  boost::archive::binary_iarchive in(bytes);
  T back;
  in >> back;
  return back;
}

ShareTable sample_table() {
  ShareTable t;
  t.fingerprint = 0xfedcba9876543210ULL;
  t.list_digest = 0x0123456789abcdefULL;
  t.skeletons = 1'000'003;
  t.chunk_end = {1, 7, 500'000, 1'000'003};
  t.resumed = true;
  return t;
}

void expect_equal(const ShareTable& a, const ShareTable& b) {
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.list_digest, b.list_digest);
  EXPECT_EQ(a.skeletons, b.skeletons);
  EXPECT_EQ(a.chunk_end, b.chunk_end);
  EXPECT_EQ(a.resumed, b.resumed);
}

RoundReport sample_report(int rank) {
  RoundReport r;
  r.finished = {rank, rank + 10, rank + 300};
  // Times must arrive exactly: the pruning bound is computed from them.
  r.top_keys = {0xffffffffffffffffULL - rank, 42};
  r.top_times = {0.1 + 0.2 * rank, rank == 0 ? std::numeric_limits<double>::infinity() : 1e-300};
  r.evaluated = (std::int64_t{1} << 40) + rank;
  r.skipped = 17 * rank;
  r.no_split = 3;
  // The job's bound on the optimum is computed from it: exact, infinity too.
  r.open_bound = rank == 2 ? std::numeric_limits<double>::infinity() : 0.1 + 0.3 * rank;
  r.stop = rank % 2 == 1;
  r.checkpoint_now = rank == 0;
  r.failure_code = rank == 1 ? 2 : 0;
  r.failure = rank == 1 ? "rank 1: models/x.yaml: layers: got '-1'" : "";
  return r;
}

void expect_equal(const RoundReport& a, const RoundReport& b) {
  EXPECT_EQ(a.finished, b.finished);
  EXPECT_EQ(a.top_keys, b.top_keys);
  EXPECT_EQ(a.top_times.size(), b.top_times.size());
  if (a.top_times.size() == b.top_times.size())
    EXPECT_EQ(std::memcmp(a.top_times.data(), b.top_times.data(), a.top_times.size() * sizeof(double)), 0);
  EXPECT_EQ(a.evaluated, b.evaluated);
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_EQ(a.no_split, b.no_split);
  EXPECT_EQ(std::memcmp(&a.open_bound, &b.open_bound, sizeof(double)), 0);
  EXPECT_EQ(a.stop, b.stop);
  EXPECT_EQ(a.checkpoint_now, b.checkpoint_now);
  EXPECT_EQ(a.failure_code, b.failure_code);
  EXPECT_EQ(a.failure, b.failure);
}

RankReport sample_rank_report(int rank) {
  RankReport r;
  r.rank = rank;
  r.threads = 2 + rank;
  r.share_chunks = 64;
  r.share_skeletons = 10'000 + rank;
  r.chunks_done = 70;
  r.chunks_taken = 6;
  r.evaluated = 601;
  r.pruned = 9399;
  r.cache_hits = 73'092;
  r.cache_peer_hits = 12'460;
  r.cache_misses = 50'000;
  r.bytes_sent = std::int64_t{5} << 33;
  r.bytes_received = 7'305'793;
  r.rounds = 9;
  r.search_s = 0.45;
  r.exchange_s = 1e-7;
  r.idle_s = 0.1 + 0.2;
  r.wall_s = 1.5;
  return r;
}

void expect_equal(const RankReport& a, const RankReport& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.share_chunks, b.share_chunks);
  EXPECT_EQ(a.share_skeletons, b.share_skeletons);
  EXPECT_EQ(a.chunks_done, b.chunks_done);
  EXPECT_EQ(a.chunks_taken, b.chunks_taken);
  EXPECT_EQ(a.evaluated, b.evaluated);
  EXPECT_EQ(a.pruned, b.pruned);
  EXPECT_EQ(a.cache_hits, b.cache_hits);
  EXPECT_EQ(a.cache_peer_hits, b.cache_peer_hits);
  EXPECT_EQ(a.cache_misses, b.cache_misses);
  EXPECT_EQ(a.bytes_sent, b.bytes_sent);
  EXPECT_EQ(a.bytes_received, b.bytes_received);
  EXPECT_EQ(a.rounds, b.rounds);
  EXPECT_EQ(a.search_s, b.search_s);
  EXPECT_EQ(a.exchange_s, b.exchange_s);
  EXPECT_EQ(a.idle_s, b.idle_s);
  EXPECT_EQ(a.wall_s, b.wall_s);
}

std::vector<Plan> sample_plans() {
  std::vector<Plan> plans = {testing_fixtures::sample_plan()};
  SearchOptions options;
  options.threads = 1;
  options.top_k = 3;
  for (const Plan& p : run_search(problem("llama3-8b", "mixed-a100-v100.yaml"), options).top) plans.push_back(p);
  return plans;
}

TEST(DistMessages, ShareTableRoundTrips) {
  const ShareTable t = sample_table();
  expect_equal(packed_round_trip(t), t);
  expect_equal(binary_round_trip(t), t);
}

TEST(DistMessages, RoundReportRoundTripsEveryBit) {
  for (int rank : {0, 1, 2}) {
    const RoundReport r = sample_report(rank);
    expect_equal(packed_round_trip(r), r);
    expect_equal(binary_round_trip(r), r);
  }
}

TEST(DistMessages, OutcomeAndFailureRoundTrip) {
  Outcome o;
  o.status = PlanStatus::stopped_with_plan;
  o.failure_code = 2;
  o.failure = "checkpoint.bin: checkpoint: got 'a damaged checkpoint'";
  const Outcome back = packed_round_trip(o);
  EXPECT_EQ(back.status, o.status);
  EXPECT_EQ(back.failure_code, o.failure_code);
  EXPECT_EQ(back.failure, o.failure);

  const RankFailure f{3, 2, "models/x.yaml: layers: got '-1'; allowed: an integer >= 1"};
  for (const RankFailure& got : {packed_round_trip(f), binary_round_trip(f)}) {
    EXPECT_EQ(got.rank, f.rank);
    EXPECT_EQ(got.exit_code, f.exit_code);
    EXPECT_EQ(got.message, f.message);
  }
}

TEST(DistMessages, RankReportRoundTrips) {
  const RankReport r = sample_rank_report(3);
  expect_equal(packed_round_trip(r), r);
  expect_equal(binary_round_trip(r), r);
}

TEST(DistMessages, CacheEntriesRoundTripEveryBit) {
  const CacheEntries entries{real_cache_entries()};
  ASSERT_FALSE(entries.value.stages.empty());
  ASSERT_FALSE(entries.value.layers.empty());
  EXPECT_EQ(cereal_bytes(packed_round_trip(entries).value), cereal_bytes(entries.value));
  EXPECT_EQ(cereal_bytes(binary_round_trip(entries).value), cereal_bytes(entries.value));
  // And an empty delta (a rank that computed nothing new).
  EXPECT_TRUE(packed_round_trip(CacheEntries{}).value.empty());
}

TEST(DistMessages, PlanListRoundTripsEveryField) {
  const PlanList plans{sample_plans()};
  ASSERT_GE(plans.value.size(), 2u);
  const PlanList back = packed_round_trip(plans);
  ASSERT_EQ(back.value.size(), plans.value.size());
  EXPECT_EQ(cereal_bytes(back.value), cereal_bytes(plans.value));
  testing_fixtures::expect_same_plan(back.value.front(), plans.value.front());
  EXPECT_EQ(cereal_bytes(binary_round_trip(plans).value), cereal_bytes(plans.value));
}

TEST(DistMessages, CheckpointPayloadRoundTrips) {
  CerealPayload<SearchCheckpoint> c;
  c.value.fingerprint = 42;
  c.value.inputs = "llama3-8b on mixed-a100-v100, strategy autohaap, top 3";
  c.value.skeletons = 9;
  c.value.list_digest = 7;
  c.value.chunk_end = {3, 6, 9};
  c.value.chunk_done = {1, 0, 1};
  c.value.top = sample_plans();
  c.value.evaluated = 12;
  c.value.pruned.add(PruneRule::lower_bound_above_best, 5);
  c.value.cache = real_cache_entries();
  EXPECT_EQ(cereal_bytes(packed_round_trip(c).value), cereal_bytes(c.value));
}

// --- collectives over every rank of the test job ---------------------------

TEST(DistCollectives, AllGatherDeliversEveryRanksReport) {
  RankGroup group(g_session->impl().world);
  const std::vector<RoundReport> all = group.all_gather(sample_report(group.rank()));
  EXPECT_EQ(static_cast<int>(all.size()), group.size());
  for (int r = 0; r < static_cast<int>(all.size()); ++r) expect_equal(all[r], sample_report(r));
  if (group.size() > 1) {
    EXPECT_GT(group.bytes_sent(), 0);
    EXPECT_GT(group.bytes_received(), group.bytes_sent() / 2);
  }
}

TEST(DistCollectives, BroadcastFromAnyRoot) {
  RankGroup group(g_session->impl().world);
  for (int root : {0, group.size() - 1}) {
    ShareTable t;
    if (group.rank() == root) t = sample_table();
    group.broadcast(t, root);
    expect_equal(t, sample_table());
  }
}

TEST(DistCollectives, GatherReachesRootOnly) {
  RankGroup group(g_session->impl().world);
  const std::vector<RankReport> all = group.gather(sample_rank_report(group.rank()), 0);
  if (group.rank() == 0) {
    EXPECT_EQ(static_cast<int>(all.size()), group.size());
    for (int r = 0; r < static_cast<int>(all.size()); ++r) expect_equal(all[r], sample_rank_report(r));
  } else {
    EXPECT_TRUE(all.empty());
  }
}

TEST(DistCollectives, FirstFailureIsAgreedByEveryRank) {
  RankGroup group(g_session->impl().world);
  const int last = group.size() - 1;
  EXPECT_FALSE(group.first_failure([] {}).has_value());

  // One rank fails with bad input: every rank learns it, code 2.
  const auto failure = group.first_failure([&] {
    if (group.rank() == last) throw InputError("cluster.yaml", "groups[0].nodes", "0", "an integer >= 1");
  });
  EXPECT_TRUE(failure.has_value());
  if (failure) {
    EXPECT_EQ(failure->rank, last);
    EXPECT_EQ(failure->exit_code, 2);
    EXPECT_NE(failure->message.find("groups[0].nodes"), std::string::npos) << failure->message;
  }

  // Several fail: the lowest rank's failure wins; other exceptions are code 1.
  const auto first = group.first_failure([&] { throw std::runtime_error("boom " + std::to_string(group.rank())); });
  EXPECT_TRUE(first.has_value());
  if (first) {
    EXPECT_EQ(first->rank, 0);
    EXPECT_EQ(first->exit_code, 1);
    EXPECT_EQ(first->message, "boom 0");
  }
}

TEST(DistCollectives, WaitForAllReturnsTheWait) {
  RankGroup group(g_session->impl().world);
  const double waited = group.wait_for_all();
  EXPECT_GE(waited, 0.0);
  EXPECT_LT(waited, 30.0);
}

TEST(DistCollectives, OneProcessGroupEchoes) {
  RankGroup alone;
  EXPECT_EQ(alone.size(), 1);
  const std::vector<RoundReport> all = alone.all_gather(sample_report(1));
  ASSERT_EQ(all.size(), 1u);
  expect_equal(all[0], sample_report(1));
  EXPECT_EQ(alone.bytes_sent(), 0);
  const auto failure = alone.first_failure([] { throw InputError("f.yaml", "k", "v", "w"); });
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->exit_code, 2);
}

}  // namespace
}  // namespace autohaap::dist::testing
