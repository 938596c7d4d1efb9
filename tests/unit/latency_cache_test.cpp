// The latency cache: counting, deltas for peers, serialization, and that a
// local move re-estimates only the stages it changed.
#include "autohaap/search/latency_cache.hpp"

#include <gtest/gtest.h>

#include <cereal/archives/binary.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>

#include "autohaap/io/search_serialization.hpp"
#include "autohaap/search/load_balancer.hpp"
#include "autohaap/search/parallel.hpp"
#include "search_fixtures.hpp"

namespace autohaap {
namespace {

LayerKey layer_key(int layer) { return LayerKey{0, 1, 1, 2, 0, layer, 0, 0}; }
StageKey stage_key(int end) {
  StageKey k;
  k.layer_end = end;
  k.num_stages = 2;
  k.next_group = 1;
  return k;
}

TEST(LatencyCache, CountsHitsMissesAndEntries) {
  LatencyCache cache;
  int computed = 0;
  auto compute = [&] {
    ++computed;
    return LayerEntry{1.0, 2.0, 3.0, 4.0, 5.0};
  };
  EXPECT_EQ(cache.layer(layer_key(0), compute).backward_s, 2.0);
  EXPECT_EQ(cache.layer(layer_key(0), compute).working_bytes, 5.0);
  cache.layer(layer_key(1), compute);
  cache.stage(stage_key(3), [] { return StageEntry{0.1, 0.2, 0, 0, 0, 1, 2}; });
  const CacheCounters c = cache.counters();
  EXPECT_EQ(computed, 2);
  EXPECT_EQ(c.misses, 3);
  EXPECT_EQ(c.hits, 1);
  EXPECT_EQ(c.peer_hits, 0);
  EXPECT_EQ(c.entries, 3);
}

TEST(LatencyCache, DeltaHoldsOnlyLocalEntriesSinceTheMark) {
  LatencyCache cache;
  auto entry = [] { return LayerEntry{1, 1, 1, 1, 1}; };
  cache.layer(layer_key(5), entry);
  const std::uint64_t mark = cache.mark();
  cache.layer(layer_key(9), entry);
  cache.layer(layer_key(7), entry);
  CacheDelta from_peer;
  from_peer.layers.push_back({layer_key(8), LayerEntry{2, 2, 2, 2, 2}});
  cache.import(from_peer);

  const CacheDelta delta = cache.delta_since(mark);
  ASSERT_EQ(delta.layers.size(), 2u);  // 7 and 9, in key order; not 5 (before), not 8 (imported)
  EXPECT_EQ(delta.layers[0].first.layer, 7);
  EXPECT_EQ(delta.layers[1].first.layer, 9);
  EXPECT_TRUE(cache.delta_since(cache.mark()).empty());
  EXPECT_EQ(cache.snapshot().layers.size(), 4u);
}

TEST(LatencyCache, ImportedEntriesCountAsPeerHits) {
  LatencyCache rank0, rank1;
  rank0.stage(stage_key(4), [] { return StageEntry{0.5, 1.0, 0.1, 0.2, 0.3, 7, 8}; });
  // Ship the delta as bytes, as a distributed driver would.
  std::stringstream bytes;
  {
    cereal::BinaryOutputArchive out(bytes);
    out(rank0.delta_since(0));
  }
  CacheDelta received;
  {
    cereal::BinaryInputArchive in(bytes);
    in(received);
  }
  rank1.import(received);
  bool recomputed = false;
  const StageEntry e = rank1.stage(stage_key(4), [&] {
    recomputed = true;
    return StageEntry{};
  });
  EXPECT_FALSE(recomputed);
  EXPECT_EQ(e.backward_s, 1.0);
  EXPECT_EQ(e.capacity_bytes, 8);
  EXPECT_EQ(rank1.counters().peer_hits, 1);
  EXPECT_EQ(rank1.counters().hits, 0);
  // A cache loaded from disk counts ordinary hits.
  LatencyCache loaded;
  loaded.import(received, /*from_peer=*/false);
  loaded.stage(stage_key(4), [] { return StageEntry{}; });
  EXPECT_EQ(loaded.counters().hits, 1);
  EXPECT_TRUE(loaded.delta_since(0).empty());
}

TEST(LatencyCache, ManyThreadsAgreeOnEntries) {
  LatencyCache cache;
  parallel::with_threads(2, [&] {
    parallel::for_each(4000, [&](std::size_t i) {
      const int layer = static_cast<int>(i % 100);
      const LayerEntry e = cache.layer(layer_key(layer), [&] { return LayerEntry{double(layer), 0, 0, 0, 0}; });
      EXPECT_EQ(e.forward_s, layer);
    });
  });
  const CacheCounters c = cache.counters();
  EXPECT_EQ(c.entries, 100);
  EXPECT_EQ(c.hits + c.misses, 4000);
  EXPECT_GE(c.misses, 100);
}

TEST(LatencyCache, SecondBalanceOfASkeletonIsAllHits) {
  const Problem problem = search_fixtures::two_group_problem(8);
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  LatencyCache cache;
  const LoadBalancer balancer(cost, memory, &cache);
  Skeleton s;
  s.micro_batch = 2;
  s.stages = {{0, 0, 1, 1, 1}, {0, 1, 1, 1, 1}, {1, 0, 1, 1, 1}, {1, 1, 1, 1, 1}};
  const BalanceResult first = balancer.balance(s);
  const CacheCounters after_first = cache.counters();
  const std::int64_t estimates = balancer.stage_estimates();
  EXPECT_GT(after_first.misses, 0);
  const BalanceResult second = balancer.balance(s);
  EXPECT_EQ(cache.counters().misses, after_first.misses);
  EXPECT_GT(cache.counters().hits, after_first.hits);
  EXPECT_EQ(balancer.stage_estimates(), estimates);
  EXPECT_EQ(first.split.layer_end, second.split.layer_end);
}

// A full cache computes what it cannot store: memory stays at the cap,
// imports stop, and a balance through a cache that holds almost nothing
// finds the split an unlimited one finds.
TEST(LatencyCache, AFullCacheComputesWithoutStoring) {
  LatencyCache cache(2);
  int computed = 0;
  auto compute = [&] {
    ++computed;
    return LayerEntry{1, 1, 1, 1, 1};
  };
  cache.layer(layer_key(0), compute);
  cache.layer(layer_key(1), compute);
  cache.layer(layer_key(2), compute);
  EXPECT_EQ(computed, 3);
  // Not stored, but the asking thread's own memo still answers a repeat.
  cache.layer(layer_key(2), compute);
  EXPECT_EQ(computed, 3);
  cache.layer(layer_key(1), compute);
  EXPECT_EQ(computed, 3);  // what is stored still hits
  CacheDelta from_peer;
  from_peer.stages.push_back({stage_key(4), StageEntry{}});
  cache.import(from_peer);
  const CacheCounters c = cache.counters();
  EXPECT_EQ(c.entries, 2);
  EXPECT_EQ(c.misses, 3);
  EXPECT_EQ(c.hits, 2);
  // Another cache's lookups are never answered from this one's memo.
  LatencyCache other(2);
  other.layer(layer_key(1), compute);
  EXPECT_EQ(computed, 4);

  const Problem problem = search_fixtures::two_group_problem(8);
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  LatencyCache unlimited, tiny(3);
  const LoadBalancer with_unlimited(cost, memory, &unlimited), with_tiny(cost, memory, &tiny);
  Skeleton s;
  s.micro_batch = 2;
  s.stages = {{0, 0, 1, 1, 1}, {0, 1, 1, 1, 1}, {1, 0, 1, 1, 1}, {1, 1, 1, 1, 1}};
  const BalanceResult a = with_unlimited.balance(s), b = with_tiny.balance(s);
  EXPECT_LE(tiny.counters().entries, 4);  // one per thread past the cap at most; one thread here
  EXPECT_GT(unlimited.counters().entries, 10);
  EXPECT_EQ(a.split.layer_end, b.split.layer_end);
  EXPECT_EQ(a.split.iteration_time_s, b.split.iteration_time_s);
}

TEST(LatencyCache, MovingOneLayerReestimatesOnlyTheTwoStagesItTouches) {
  const Problem problem = search_fixtures::two_group_problem(8, 8.0, 8.0);  // ample memory: no recompute
  const CostModel cost(problem);
  const MemoryPruner memory(cost);
  LatencyCache cache;
  const LoadBalancer balancer(cost, memory, &cache);
  Skeleton s;
  s.micro_batch = 2;
  s.stages = {{0, 0, 1, 1, 1}, {0, 1, 1, 1, 1}, {1, 0, 1, 1, 1}, {1, 1, 1, 1, 1}};
  const BalanceResult before = balancer.evaluate(s, {2, 4, 6, 8});
  ASSERT_EQ(before.status, BalanceResult::Status::found);
  const CacheCounters c0 = cache.counters();
  const BalanceResult after = balancer.evaluate(s, {2, 3, 6, 8});  // one layer from stage 1 to stage 2
  ASSERT_EQ(after.status, BalanceResult::Status::found);
  const CacheCounters c1 = cache.counters();
  EXPECT_EQ(c1.misses - c0.misses, 2);  // stages 1 and 2
  EXPECT_EQ(c1.hits - c0.hits, 2);      // stages 0 and 3
  // The cached answer is the cost model's.
  const Plan plan = make_plan(problem, s, {2, 3, 6, 8}, after.split.recompute);
  EXPECT_EQ(after.split.iteration_time_s, cost.estimate(plan).iteration_time_s);
}

}  // namespace
}  // namespace autohaap
