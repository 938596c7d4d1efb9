// The distributed search gives the plans run_search gives — the same top-K,
// every field, in the same order — over every rank of the test job and in
// one process, whatever the thread count, chunk size or cache exchange;
// and a search stopped midway resumes from its checkpoint (also with
// another rank count) to the same answer.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "autohaap/dist/checkpoint.hpp"
#include "autohaap/dist/distributed_search.hpp"
#include "dist_fixtures.hpp"
#include "mpi_session_impl.hpp"
#include "rank_group.hpp"
#include "dist_test_session.hpp"

namespace autohaap::dist::testing {
namespace {

std::vector<Plan> reference_top(const Problem& p, int top_k) {
  SearchOptions options;
  options.top_k = top_k;
  options.threads = 1;
  return without_stats(run_search(p, options).top);
}

DistributedOptions options_for(int top_k) {
  DistributedOptions o;
  o.search.top_k = top_k;
  o.search.threads = 1;
  o.exchange_interval_s = 0.01;  // many rounds, so exchanges and rebalancing happen
  return o;
}

struct Case {
  const char* model;
  const char* cluster;
  int top_k;
};

TEST(DistributedSearch, SameTopKAsRunSearch) {
  for (const Case& c : {Case{"gpt3-1.3b", "mixed-a100-v100.yaml", 1}, Case{"llama3-8b", "mixed-a100-v100.yaml", 5},
                        Case{"llama3-8b", "mixed-h100-a100-v100.yaml", 40}}) {
    SCOPED_TRACE(std::string(c.model) + " on " + c.cluster + ", top " + std::to_string(c.top_k));
    const Problem p = problem(c.model, c.cluster);
    const std::vector<Plan> expected = reference_top(p, c.top_k);
    EXPECT_FALSE(expected.empty());

    DistributedOptions o = options_for(c.top_k);
    const DistributedResult all = run_distributed_search(p, o, g_session);
    EXPECT_FALSE(all.failure.has_value());
    EXPECT_EQ(all.result.status, PlanStatus::found);
    if (g_session->rank() == 0) {
      EXPECT_EQ(cereal_bytes(without_stats(all.result.top)), cereal_bytes(expected));
      EXPECT_EQ(all.result.stats.ranks, g_session->size());
      EXPECT_EQ(static_cast<int>(all.ranks.size()), g_session->size());
      EXPECT_EQ(all.chunks_searched, all.chunks);
      std::int64_t share = 0;
      for (const RankReport& r : all.ranks) share += r.share_skeletons;
      EXPECT_EQ(share, all.result.prune.kept);
    }

    // One process, no MPI: the same.
    const DistributedResult alone = run_distributed_search(p, o, nullptr);
    EXPECT_EQ(cereal_bytes(without_stats(alone.result.top)), cereal_bytes(expected));
    EXPECT_EQ(alone.result.stats.ranks, 1);
  }
}

TEST(DistributedSearch, AnswerDoesNotDependOnThreadsChunksOrExchange) {
  const Problem p = problem("llama3-8b", "mixed-h100-a100-v100.yaml");
  const std::vector<Plan> expected = reference_top(p, 12);
  for (int variant = 0; variant < 3; ++variant) {
    DistributedOptions o = options_for(12);
    if (variant == 0) o.chunks_per_rank = 1;
    if (variant == 1) {
      o.chunks_per_rank = 500;
      o.search.threads = 2;
    }
    if (variant == 2) o.exchange_cache = true;
    const DistributedResult r = run_distributed_search(p, o, g_session);
    if (g_session->rank() == 0)
      EXPECT_EQ(cereal_bytes(without_stats(r.result.top)), cereal_bytes(expected)) << "variant " << variant;
  }
}

// The proven bound is the job's: every rank's least open lower bound is
// exchanged, so run to the end it is the one-process bound (the best plan,
// gap 0), stopped midway it never exceeds the optimum, and a gap asked for
// stops every rank with a plan within it.
TEST(DistributedSearch, TheBoundIsTheJobsAndAgreesWithOneProcess) {
  const Problem p = problem("llama3-8b", "mixed-h100-a100-v100.yaml");
  SearchOptions one;
  one.top_k = 5;
  one.threads = 1;
  const SearchResult reference = run_search(p, one);
  ASSERT_FALSE(reference.top.empty());
  const double opt = reference.top.front().predicted.iteration_time_s;
  EXPECT_EQ(reference.stats.gap, 0);
  EXPECT_EQ(reference.stats.bound_s, opt);

  const DistributedResult all = run_distributed_search(p, options_for(5), g_session);
  EXPECT_EQ(all.result.status, PlanStatus::found);
  if (g_session->rank() == 0) {
    EXPECT_EQ(all.result.stats.gap, 0);
    EXPECT_EQ(all.result.stats.bound_s, reference.stats.bound_s);
  }

  // Stopped after the first exchange: a bound at or below the optimum.
  std::atomic<bool> cancel{false};
  DistributedOptions o = options_for(5);
  o.chunks_per_rank = 200;
  o.search.cancel = &cancel;
  o.search.progress = [&](const SearchProgress&) { cancel = true; };
  const DistributedResult stopped = run_distributed_search(p, o, g_session);
  if (g_session->rank() == 0 && !stopped.result.top.empty()) {
    const double best = stopped.result.top.front().predicted.iteration_time_s;
    EXPECT_LE(stopped.result.stats.bound_s, opt * (1 + 1e-9));
    EXPECT_GE(best, opt * (1 - 1e-9));
    EXPECT_DOUBLE_EQ(stopped.result.stats.gap, search_gap(best, stopped.result.stats.bound_s));
  }

  // A gap: every rank ends with the same successful status.
  DistributedOptions g = options_for(5);
  g.search.gap = 0.05;
  const DistributedResult gapped = run_distributed_search(p, g, g_session);
  EXPECT_FALSE(gapped.failure.has_value());
  EXPECT_EQ(exit_code(gapped.result.status), kExitOk) << summary_label(gapped.result.status);
  if (g_session->rank() == 0) {
    ASSERT_FALSE(gapped.result.top.empty());
    const double best = gapped.result.top.front().predicted.iteration_time_s;
    EXPECT_LE(gapped.result.stats.gap, 0.05 + 1e-12);
    EXPECT_LE(gapped.result.stats.bound_s, opt * (1 + 1e-9));
    EXPECT_LE((best - opt) / best, 0.05 + 1e-12);
  }
}

// With --cache-exchange every rank's latency cache ends up holding entries
// its peers computed (the cache's snapshot holds more than the entries it
// computed itself: delta_since(0)), and without it none; the plans are the
// same. Whether a peer then hits one before computing it itself depends on
// 1 ms rounds (a loaded machine's runs saw 0 or 3), so hits are printed,
// not asserted: what is checked is what the exchange does, not timing.
// The 300 best plans: with the pipeline sends in the bounds, the 20 best
// leave 36 skeletons after initialization, too few for the search that
// follows to compute entries on every rank.
TEST(DistributedSearch, CacheEntriesReachPeers) {
  if (g_session->size() < 2) GTEST_SKIP() << "needs two ranks";
  const Problem p = problem("llama3-8b", "mixed-h100-a100-v100.yaml");
  DistributedOptions o = options_for(300);
  o.exchange_interval_s = 0.001;
  auto from_peers = [](const LatencyCache& cache) {
    const CacheDelta all = cache.snapshot(), own = cache.delta_since(0);
    return static_cast<std::int64_t>(all.layers.size() + all.stages.size()) -
           static_cast<std::int64_t>(own.layers.size() + own.stages.size());
  };
  RankGroup group(g_session->impl().world);
  LatencyCache with_cache;
  o.search.cache = &with_cache;
  o.exchange_cache = true;
  const DistributedResult with = run_distributed_search(p, o, g_session);
  const std::vector<std::int64_t> received = group.all_gather(from_peers(with_cache));
  LatencyCache without_cache;
  o.search.cache = &without_cache;
  o.exchange_cache = false;
  const DistributedResult without = run_distributed_search(p, o, g_session);
  const std::vector<std::int64_t> received_off = group.all_gather(from_peers(without_cache));
  if (g_session->rank() == 0) {
    std::int64_t peer_hits = 0, peer_hits_off = 0;
    for (const RankReport& r : with.ranks) peer_hits += r.cache_peer_hits;
    for (const RankReport& r : without.ranks) peer_hits_off += r.cache_peer_hits;
    std::printf("cache exchange: entries from peers per rank");
    for (std::int64_t n : received) std::printf(" %lld", static_cast<long long>(n));
    std::printf(", hits on them %lld\n", static_cast<long long>(peer_hits));
    for (std::size_t r = 0; r < received.size(); ++r) {
      EXPECT_GT(received[r], 0) << "rank " << r;
      EXPECT_EQ(received_off[r], 0) << "rank " << r;
    }
    EXPECT_EQ(peer_hits_off, 0);
    EXPECT_EQ(cereal_bytes(without_stats(with.result.top)), cereal_bytes(without_stats(without.result.top)));
  }
}

TEST(DistributedSearch, StoppedSearchResumesFromItsCheckpoint) {
  const Problem p = problem("llama3-8b", "mixed-h100-a100-v100.yaml");
  const int top_k = 60;
  const std::vector<Plan> expected = reference_top(p, top_k);
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("autohaap_resume_" + std::to_string(g_session->size()) + ".ckpt"))
                               .string();
  if (g_session->rank() == 0) std::filesystem::remove(path);

  // Stop after the first exchange: rank 0 raises the cancel flag, every
  // rank stops at the next one, and the final checkpoint is written. A
  // round of a millisecond ends after a chunk or so (at 10 ms one rank had
  // searched all 200 chunks by the first exchange once the walk's bounds
  // counted the tail).
  std::atomic<bool> cancel{false};
  DistributedOptions o = options_for(top_k);
  o.exchange_interval_s = 0.001;
  o.checkpoint_path = path;
  o.checkpoint_interval_s = 1000;
  o.chunks_per_rank = 200;
  o.search.cancel = &cancel;
  o.search.progress = [&](const SearchProgress&) { cancel = true; };
  const DistributedResult stopped = run_distributed_search(p, o, g_session);
  EXPECT_FALSE(stopped.failure.has_value());
  EXPECT_TRUE(stopped_early(stopped.result.status));
  if (g_session->rank() == 0) {
    EXPECT_GT(stopped.chunks_searched, 0);
    EXPECT_LT(stopped.chunks_searched, stopped.chunks);
  }

  // Resumed by rank 0 alone (another rank count), from a copy...
  const std::string copy = path + ".alone";
  if (g_session->rank() == 0) {
    std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    DistributedOptions alone = options_for(top_k);
    alone.checkpoint_path = copy;
    const DistributedResult r = run_distributed_search(p, alone, nullptr);
    EXPECT_TRUE(r.resumed);
    // Stopped after its initialization: the file holds it whole, and the
    // resume rebuilds the same list (the chunks and the plans match)
    // without walking a round again.
    EXPECT_TRUE(r.initialization_restored);
    EXPECT_EQ(r.chunks_restored, stopped.chunks_searched);
    EXPECT_EQ(r.chunks_restored + r.chunks_searched, r.chunks);
    EXPECT_EQ(cereal_bytes(without_stats(r.result.top)), cereal_bytes(expected));
    std::filesystem::remove(copy);
  }

  // ...and by the whole job.
  o.search.cancel = nullptr;
  o.search.progress = nullptr;
  const DistributedResult resumed = run_distributed_search(p, o, g_session);
  EXPECT_TRUE(resumed.resumed);
  EXPECT_TRUE(resumed.initialization_restored);
  EXPECT_EQ(resumed.result.status, PlanStatus::found);
  if (g_session->rank() == 0) {
    EXPECT_EQ(resumed.chunks_restored, stopped.chunks_searched);
    EXPECT_EQ(cereal_bytes(without_stats(resumed.result.top)), cereal_bytes(expected));
    // The final checkpoint holds the finished search: a third run redoes nothing.
    const DistributedResult again = run_distributed_search(p, o, nullptr);
    EXPECT_TRUE(again.initialization_restored);
    EXPECT_EQ(again.chunks_restored, again.chunks);
    EXPECT_EQ(again.chunks_searched, 0);
    EXPECT_EQ(cereal_bytes(without_stats(again.result.top)), cereal_bytes(expected));
    std::filesystem::remove(path);
  }
}

// A search of identical groups (merged, cluster_merge.hpp) that are also
// halved (cluster_split.hpp) saves its plans where it searched them: a
// stage on the second rack is a stage past the first rack's GPUs of the
// merged group. The finished checkpoint is read back and checked against
// the problem searched, not the one given (which had refused it: "GPUs
// 64..127 ... allowed: GPUs within 0..63 of group 1").
TEST(DistributedSearch, AFinishedCheckpointOfMergedAndHalvedGroupsResumes) {
  if (g_session->rank() != 0) return;
  Problem p = problem("llama3-8b", "mixed-a100-v100.yaml");
  NodeGroup rack = p.cluster.groups.front();
  rack.nodes = 2;
  NodeGroup other = rack;
  other.name = rack.name + "-b";
  p.cluster.groups = {rack, other};
  const std::vector<Plan> expected = reference_top(p, 3);
  ASSERT_FALSE(expected.empty());
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "autohaap_merged_halved.ckpt").string();
  std::filesystem::remove(path);
  DistributedOptions o = options_for(3);
  o.checkpoint_path = path;
  const DistributedResult first = run_distributed_search(p, o, nullptr);
  ASSERT_FALSE(first.failure.has_value());
  bool second_rack = false;
  for (const Plan& plan : first.result.top)
    for (const StagePlan& s : plan.stages) second_rack = second_rack || s.group == 1;
  EXPECT_TRUE(second_rack) << "a plan on the second rack, saved past the first rack's GPUs";
  const DistributedResult again = run_distributed_search(p, o, nullptr);
  ASSERT_FALSE(again.failure.has_value()) << again.failure->message;
  EXPECT_TRUE(again.resumed);
  EXPECT_EQ(again.chunks_searched, 0);
  EXPECT_EQ(cereal_bytes(without_stats(again.result.top)), cereal_bytes(expected));
  std::filesystem::remove(path);
}

TEST(DistributedSearch, CheckpointOfOtherInputsFailsOnEveryRank) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("autohaap_other_" + std::to_string(g_session->size()) + ".ckpt"))
                               .string();
  DistributedOptions o = options_for(1);
  o.checkpoint_path = path;
  // Written by a search of one model...
  const DistributedResult first = run_distributed_search(problem("gpt3-1.3b", "mixed-a100-v100.yaml"), o, g_session);
  EXPECT_FALSE(first.failure.has_value());
  // ...refused by a search of another, on every rank, with exit code 2.
  const DistributedResult second = run_distributed_search(problem("llama3-8b", "mixed-a100-v100.yaml"), o, g_session);
  EXPECT_TRUE(second.failure.has_value());
  if (second.failure) {
    EXPECT_EQ(second.failure->exit_code, 2);
    EXPECT_NE(second.failure->message.find(path), std::string::npos) << second.failure->message;
    EXPECT_NE(second.failure->message.find("other inputs"), std::string::npos) << second.failure->message;
  }
  if (g_session->rank() == 0) std::filesystem::remove(path);
}

// A checkpoint that cannot be written (its folder gone mid-search, a full
// disk) costs the resume only: every write is said, the search goes on to
// its answer, the same as without a checkpoint (the job had ended with
// exit 2 and no plan).
TEST(DistributedSearch, ACheckpointThatCannotBeWrittenIsSaidAndTheSearchGoesOn) {
  const Problem p = problem("gpt3-1.3b", "mixed-a100-v100.yaml");
  const std::vector<Plan> expected = reference_top(p, 3);
  DistributedOptions o = options_for(3);
  o.checkpoint_path = (std::filesystem::path(::testing::TempDir()) / "autohaap_no_such_folder" / "x.ckpt").string();
  std::filesystem::remove_all(std::filesystem::path(o.checkpoint_path).parent_path());
  std::vector<std::string> notes;
  o.note = [&notes](const std::string& line) { notes.push_back(line); };
  const DistributedResult r = run_distributed_search(p, o, g_session);
  EXPECT_FALSE(r.failure.has_value());
  EXPECT_EQ(r.result.status, PlanStatus::found);
  if (g_session->rank() == 0) {
    EXPECT_EQ(r.checkpoints_written, 0);
    EXPECT_EQ(cereal_bytes(without_stats(r.result.top)), cereal_bytes(expected));
    ASSERT_FALSE(notes.empty());
    EXPECT_NE(notes.back().find("warning: checkpoint not written"), std::string::npos) << notes.back();
  }
}

TEST(DistributedSearch, BaselineStrategiesRunOnRankZero) {
  const Problem p = problem("gpt3-1.3b", "mixed-a100-v100.yaml");
  SearchOptions s;
  s.strategy = "uniform";
  s.threads = 1;
  const std::vector<Plan> expected = without_stats(run_search(p, s).top);
  DistributedOptions o;
  o.search = s;
  const DistributedResult r = run_distributed_search(p, o, g_session);
  EXPECT_EQ(r.result.status, PlanStatus::found);
  if (g_session->rank() == 0) EXPECT_EQ(cereal_bytes(without_stats(r.result.top)), cereal_bytes(expected));
}

TEST(DistributedSearch, StopDuringInitializationIsAgreedByEveryRank) {
  const Problem p = problem("llama3-8b", "mixed-h100-a100-v100.yaml");
  // Only the last rank is cancelled, before it starts: the others finish
  // their initialization, and then every rank stops, none searching a chunk.
  std::atomic<bool> cancel{g_session->rank() == g_session->size() - 1};
  DistributedOptions o = options_for(1);
  o.search.cancel = &cancel;
  const DistributedResult r = run_distributed_search(p, o, g_session);
  EXPECT_FALSE(r.failure.has_value());
  EXPECT_TRUE(stopped_early(r.result.status)) << summary_label(r.result.status);
  EXPECT_EQ(r.chunks, 0);
  EXPECT_EQ(r.chunks_searched, 0);
  if (g_session->rank() == 0) {
    // Rank 0's own initialization ran to the end when another rank was the
    // one cancelled: its probes are the best plans so far.
    EXPECT_EQ(r.result.top.empty(), r.result.status == PlanStatus::stopped_no_plan);
    if (g_session->size() > 1) EXPECT_EQ(r.result.status, PlanStatus::stopped_with_plan);
  }
}

TEST(DistributedSearch, BadOptionsFailOnEveryRank) {
  DistributedOptions o;
  o.exchange_interval_s = 0;
  const DistributedResult r = run_distributed_search(problem("gpt3-1.3b", "mixed-a100-v100.yaml"), o, g_session);
  EXPECT_TRUE(r.failure.has_value());
  if (r.failure) EXPECT_EQ(r.failure->exit_code, 2);
}

}  // namespace
}  // namespace autohaap::dist::testing
