// Checkpoint files: what is written reads back bit for bit; a damaged,
// truncated or foreign file, or one written for other inputs, is refused
// with an InputError naming the file; the fingerprint moves with every
// input that changes the answer and with nothing else.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../unit/plan_fixtures.hpp"
#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/cost/cost_model.hpp"
#include "autohaap/dist/checkpoint.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "dist_fixtures.hpp"
#include "dist_test_session.hpp"

namespace autohaap::dist::testing {
namespace {

SearchCheckpoint sample_checkpoint() {
  SearchCheckpoint c;
  c.fingerprint = 0x1234;
  c.inputs = "gpt3-1.3b on mixed-a100-v100, strategy autohaap, top 2";
  c.skeletons = 10;
  c.list_digest = 0x9999;
  c.chunk_end = {2, 5, 10};
  c.chunk_done = {1, 0, 1};
  c.top = {testing_fixtures::sample_plan()};
  c.evaluated = 77;
  c.pruned.add(PruneRule::lower_bound_above_best, 4);
  c.pruned.add(PruneRule::no_feasible_split, 1);
  c.cache = real_cache_entries();
  return c;
}

// One file per rank and job size: every rank of the test job runs these
// tests at once, and ctest runs the 1- and 3-rank jobs side by side.
std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          ("autohaap_ckpt_n" + std::to_string(g_session->size()) + "_r" + std::to_string(g_session->rank()) + "_" + name))
      .string();
}

// The InputError message of `fn`, or "" if it did not throw one.
template <class Fn>
std::string input_error(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A checksum guards against damage, not against a file made to match one:
// the saved plans, which may be written out as the answer, are checked
// against the search's cluster as a plan file is (a forged checkpoint once
// restored a plan on GPUs the cluster does not have).
TEST(Checkpoint, SavedPlansAreCheckedAgainstTheSearch) {
  const Problem problem{catalog_model("gpt3-1.3b"), catalog_cluster("a100x8"), catalog_training("default"), {}};
  SearchCheckpoint c = sample_checkpoint();
  Plan plan = testing_fixtures::sample_plan();
  plan.cluster = "a100x8";
  plan.stages = {testing_fixtures::make_stage(0, "a100-80gb", 0, 4, 2, 0, 24, Recompute::none)};
  plan.predicted.stage_time_s = {0.1};
  plan.predicted.stage_memory_GiB = {40};
  c.top = {plan};
  EXPECT_NO_THROW(check_checkpoint_plans(c, problem, "ck"));
  c.top[0].stages[0].first_gpu = 8;
  const std::string message = input_error([&] { check_checkpoint_plans(c, problem, "ck"); });
  EXPECT_NE(message.find("ck (saved plan 1): stages[0].first_gpu"), std::string::npos) << message;
  c.top = {plan};
  c.init.probes = {plan};
  c.init.probes[0].stages[0].tp = 3;
  EXPECT_NE(input_error([&] { check_checkpoint_plans(c, problem, "ck"); }).find("saved probe plan 1"),
            std::string::npos);
}

TEST(Checkpoint, EncodesAndDecodesEveryBit) {
  const SearchCheckpoint c = sample_checkpoint();
  const SearchCheckpoint back = decode_checkpoint(encode_checkpoint(c), "memory");
  EXPECT_EQ(cereal_bytes(back), cereal_bytes(c));
  EXPECT_EQ(back.chunks_done(), 2);
  testing_fixtures::expect_same_plan(back.top.at(0), c.top.at(0));
}

TEST(Checkpoint, AnInitializationsProgressRoundTrips) {
  SearchCheckpoint c;
  c.fingerprint = 0x1234;
  c.inputs = "llama3-8b on five-generations, strategy autohaap, top 1";
  c.initializing = true;
  c.init.next_task = 1024;
  c.init.tasks = 1300;
  Skeleton s;
  s.id = 42;
  s.micro_batch = 4;
  s.stages = {{0, 0, 8, 2, 4}, {1, 8, 8, 4, 2}};
  s.lower_bound_s = 1.25;
  s.work = 3.5;
  c.init.kept = {s, s};
  c.init.probes = {testing_fixtures::sample_plan()};
  c.init.threshold_s = 2.5;
  c.init.prune.add(PruneRule::lower_bound_above_best, 9);
  c.init.cut_at = 96;
  const SearchCheckpoint back = decode_checkpoint(encode_checkpoint(c), "memory");
  EXPECT_EQ(cereal_bytes(back), cereal_bytes(c));
  EXPECT_TRUE(back.initializing);
  EXPECT_EQ(back.init.next_task, 1024u);
  ASSERT_EQ(back.init.kept.size(), 2u);
  EXPECT_EQ(back.init.kept[1].stages, s.stages);
  EXPECT_EQ(back.init.threshold_s, 2.5);
  testing_fixtures::expect_same_plan(back.init.probes.at(0), c.init.probes.at(0));
}

TEST(Checkpoint, FileRoundTripAndMissingFile) {
  const std::string path = temp_path("round_trip.bin");
  std::filesystem::remove(path);
  EXPECT_FALSE(read_checkpoint(path, 0x1234, "x").has_value());
  const SearchCheckpoint c = sample_checkpoint();
  write_checkpoint(path, c);
  const auto back = read_checkpoint(path, 0x1234, "x");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(cereal_bytes(*back), cereal_bytes(c));
  std::filesystem::remove(path);
}

TEST(Checkpoint, RefusesOtherInputsNamingFileAndBothSearches) {
  const std::string path = temp_path("other_inputs.bin");
  write_checkpoint(path, sample_checkpoint());
  const std::string message =
      input_error([&] { read_checkpoint(path, 0x5678, "llama3-8b on mixed-a100-v100, strategy autohaap, top 1"); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("other inputs"), std::string::npos) << message;
  EXPECT_NE(message.find("gpt3-1.3b on mixed-a100-v100"), std::string::npos) << message;
  EXPECT_NE(message.find("llama3-8b on mixed-a100-v100"), std::string::npos) << message;
  std::filesystem::remove(path);
}

TEST(Checkpoint, RefusesDamagedTruncatedAndForeignFiles) {
  const std::string good = encode_checkpoint(sample_checkpoint());
  const std::string path = temp_path("damaged.bin");
  auto refused = [&](const std::string& bytes, const char* expected) {
    write_file_atomically(path, bytes);
    const std::string message = input_error([&] { read_checkpoint(path, 0x1234, "x"); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  };
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  refused(flipped, "checksum");
  refused(good.substr(0, good.size() - 1), "truncated");
  refused(good.substr(0, 30), "truncated");
  refused(good.substr(0, 12), "truncated");
  refused("", "not an autohaap search checkpoint");
  refused("format: autohaap-plan/1\nmodel: x\n", "not an autohaap search checkpoint");
  // A size field damaged to something huge must not make the reader allocate it.
  std::string huge = good;
  huge[15] = static_cast<char>(0x7f);
  refused(huge, "truncated");
  std::filesystem::remove(path);
}

TEST(Checkpoint, SavedPlansMustBeValidPlans) {
  // A checkpoint can be made to pass its checksum; the plans it would seed
  // the search with still face the plan file's rules.
  SearchCheckpoint c = sample_checkpoint();
  c.top.at(0).stages.at(1).tp = 0;
  const std::string message = input_error([&] { decode_checkpoint(encode_checkpoint(c), "ckpt.bin"); });
  EXPECT_NE(message.find("ckpt.bin (saved plan 1)"), std::string::npos) << message;
  EXPECT_NE(message.find("stages[1].tp"), std::string::npos) << message;
}

TEST(Checkpoint, ALengthInsideAValidChecksumIsCheckedBeforeAllocating) {
  // A payload made to match its checksum, whose first list (the inputs
  // string's length, the second field) claims 2^40 elements: refused at
  // once, naming the bytes left, instead of asking for a terabyte.
  std::string bytes = encode_checkpoint(sample_checkpoint());
  constexpr std::size_t kHeader = 24, kInputsLength = kHeader + 8;
  const std::uint64_t claimed = std::uint64_t{1} << 40;
  std::memcpy(bytes.data() + kInputsLength, &claimed, sizeof claimed);
  const std::uint64_t sum = fnv1a64(std::string_view(bytes).substr(kHeader));
  std::memcpy(bytes.data() + 16, &sum, sizeof sum);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = input_error([&] { decode_checkpoint(bytes, "forged.bin"); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_NE(message.find("forged.bin"), std::string::npos) << message;
  EXPECT_NE(message.find("an unreadable checkpoint (a string or list of 1099511627776 elements"), std::string::npos)
      << message;
}

SearchSettings settings(const std::string& strategy, int top_k, std::int64_t max_skeletons, bool mixed = true) {
  SearchSettings s;
  s.strategy = strategy;
  s.top_k = top_k;
  s.max_skeletons = max_skeletons;
  s.mixed_stages = mixed;
  return s;
}

TEST(Checkpoint, FingerprintFollowsWhatChangesTheAnswer) {
  const Problem base = problem("gpt3-1.3b", "mixed-a100-v100.yaml");
  const CostParameters params;
  const std::uint64_t f = search_fingerprint(base, params, settings("autohaap", 1, 250000));
  EXPECT_EQ(f, search_fingerprint(base, params, settings("autohaap", 1, 250000)));
  EXPECT_NE(f, search_fingerprint(base, params, settings("autohaap", 2, 250000)));
  EXPECT_NE(f, search_fingerprint(base, params, settings("metis", 1, 250000)));
  // The skeleton limit sets what the initialization keeps; mixed stages
  // refine the plans a finished checkpoint holds.
  EXPECT_NE(f, search_fingerprint(base, params, settings("autohaap", 1, 1000)));
  EXPECT_NE(f, search_fingerprint(base, params, settings("autohaap", 1, 250000, false)));
  // Threads, the time limit and the gap do not change what is kept.
  SearchSettings same = settings("autohaap", 1, 250000);
  same.threads = 7;
  same.time_limit_s = 3;
  same.gap = 0.1;
  EXPECT_EQ(f, search_fingerprint(base, params, same));
  Problem other = base;
  other.training.global_batch = 256;
  EXPECT_NE(f, search_fingerprint(other, params, settings("autohaap", 1, 250000)));
  other = base;
  other.cluster.groups[1].nodes = 1;
  EXPECT_NE(f, search_fingerprint(other, params, settings("autohaap", 1, 250000)));
  other = base;
  other.cluster.groups[0].device.hbm_GBps *= 1.0000001;
  EXPECT_NE(f, search_fingerprint(other, params, settings("autohaap", 1, 250000)));
  // Every calibrated constant, the memory ones included.
  for (double CostParameters::*member :
       {&CostParameters::nvlink_efficiency, &CostParameters::network_efficiency,
        &CostParameters::zero3_exposed_fraction, &CostParameters::dp_overlap, &CostParameters::per_layer_overhead_s,
        &CostParameters::deepspeed_tp_allreduce_s,
        &CostParameters::cuda_context_GiB, &CostParameters::nccl_GiB_per_communicator,
        &CostParameters::allocator_fragmentation, &CostParameters::checkpointed_fragmentation,
        &CostParameters::deepspeed_state_fragmentation}) {
    CostParameters tuned;
    tuned.*member = tuned.*member * 1.01 + 1e-3;  // dp_overlap is 0 by default
    EXPECT_NE(f, search_fingerprint(base, tuned, settings("autohaap", 1, 250000)));
  }
  // A profile-only search is another search.
  other = base;
  other.profiles_only = true;
  EXPECT_NE(f, search_fingerprint(other, params, settings("autohaap", 1, 250000)));
  EXPECT_NE(f, search_fingerprint(problem("llama3-8b", "mixed-a100-v100.yaml"), params, settings("autohaap", 1, 250000)));
}

TEST(Checkpoint, ListDigestSeesOrderAndBounds) {
  const Problem p = problem("gpt3-1.3b", "mixed-a100-v100.yaml");
  const CostModel cost(p);
  const MemoryPruner memory(cost);
  LatencyCache cache;
  std::vector<Skeleton> list = prepare_search(cost, memory, cache).skeletons;
  ASSERT_GE(list.size(), 2u);
  const std::uint64_t d = skeleton_list_digest(list);
  LatencyCache again;
  EXPECT_EQ(d, skeleton_list_digest(prepare_search(cost, memory, again).skeletons));
  std::vector<Skeleton> swapped = list;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(d, skeleton_list_digest(swapped));
  std::vector<Skeleton> nudged = list;
  nudged.back().lower_bound_s = std::nextafter(nudged.back().lower_bound_s, 1e9);
  EXPECT_NE(d, skeleton_list_digest(nudged));
  list.pop_back();
  EXPECT_NE(d, skeleton_list_digest(list));
}

}  // namespace
}  // namespace autohaap::dist::testing
