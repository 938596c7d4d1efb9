// Fingerprints follow the specs' contents, not their files: the same specs
// from two paths (or with a comment added) agree, any changed field —
// also one inside a device file a cluster refers to — disagrees, and of
// the search options only those that change the answer count.
#include "autohaap/batch/fingerprint.hpp"

#include <gtest/gtest.h>

#include "autohaap/io/spec_loader.hpp"
#include "batch_fixtures.hpp"

namespace autohaap {
namespace {

using BatchFingerprint = testing::BatchFolder;

constexpr const char* kModel = R"(name: m
family: gpt
layers: 4
hidden: 512
ffn_hidden: 2048
heads: 8
vocab: 32000
seq_len: 1024
)";

Problem fingerprint_problem(const std::string& model, const std::string& cluster) {
  return load_problem(model, cluster, "");
}

TEST(Fnv1a64, MatchesPublishedVectors) {
  // Test vectors of the FNV reference (Fowler, Noll, Vo).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(hex64(0xaf63dc4c8601ec8cULL), "af63dc4c8601ec8c");
}

TEST_F(BatchFingerprint, DependsOnContentNotPathOrComments) {
  const auto a = write("a/model.yaml", kModel);
  const auto b = write("b/other-name.yaml", std::string("# the same model, elsewhere\n") + kModel);
  const auto fa = problem_fingerprint(fingerprint_problem(a, "a100x8"));
  EXPECT_EQ(fa.size(), 16u);
  EXPECT_EQ(fa, problem_fingerprint(fingerprint_problem(b, "a100x8")));

  std::string changed = kModel;
  changed.replace(changed.find("layers: 4"), 9, "layers: 6");
  EXPECT_NE(fa, problem_fingerprint(fingerprint_problem(write("c.yaml", changed), "a100x8")));
  EXPECT_NE(fa, problem_fingerprint(fingerprint_problem(a, "mixed-a100-v100")));
  Problem p = fingerprint_problem(a, "a100x8");
  p.training.micro_batch_sizes = {1, 2};
  EXPECT_NE(fa, problem_fingerprint(p));
}

TEST_F(BatchFingerprint, SeesChangesInsideAClustersDeviceFile) {
  const std::string device = R"(name: dev
architecture: turing
memory_GiB: 16
peak_tflops: 65
peak_fp32_tflops: 16
hbm_GBps: 300
nvlink_GBps: 0
pcie_GBps: 16
gemm_efficiency: [[1, 0.5], [100, 0.7]]
)";
  const std::string cluster = "name: c\ngroups:\n  - {device: dev.yaml, nodes: 1, gpus_per_node: 4}\n";
  write("one/dev.yaml", device);
  write("two/dev.yaml", std::string(device).replace(device.find("0.7"), 3, "0.8"));
  const auto c1 = write("one/c.yaml", cluster);
  const auto c2 = write("two/c.yaml", cluster);
  EXPECT_NE(problem_fingerprint(fingerprint_problem("gpt3-125m", c1)), problem_fingerprint(fingerprint_problem("gpt3-125m", c2)));
}

TEST_F(BatchFingerprint, InputsCountTheOptionsThatChangeTheAnswer) {
  const Problem p = fingerprint_problem("gpt3-125m", "a100x8");
  BatchOptions o;
  const auto base = input_fingerprint(p, o);
  EXPECT_NE(base, problem_fingerprint(p));
  BatchOptions threads = o;
  threads.threads = 7;  // the result does not depend on threads
  EXPECT_EQ(base, input_fingerprint(p, threads));
  BatchOptions top = o;
  top.top_k = 2;
  EXPECT_NE(base, input_fingerprint(p, top));
  BatchOptions strategy = o;
  strategy.strategy = "uniform";
  EXPECT_NE(base, input_fingerprint(p, strategy));
  BatchOptions limit = o;
  limit.time_limit_s = 10;
  EXPECT_NE(base, input_fingerprint(p, limit));
  // A result proven within 50% must not stand for one asked within 0.
  BatchOptions gap = o;
  gap.gap = 0.5;
  EXPECT_NE(base, input_fingerprint(p, gap));
  BatchOptions mixed = o;
  mixed.mixed_stages = false;
  EXPECT_NE(base, input_fingerprint(p, mixed));
  BatchOptions skeletons = o;
  skeletons.max_skeletons = 1000;
  EXPECT_NE(base, input_fingerprint(p, skeletons));
}

}  // namespace
}  // namespace autohaap
