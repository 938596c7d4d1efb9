// Manifests: the three forms expand in a fixed order with stable names,
// relative paths resolve against the manifest's folder, the shipped
// manifests load, and every kind of bad manifest is one InputError naming
// the entry's key path before any search runs.
#include "autohaap/batch/manifest.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "autohaap/error.hpp"
#include "batch_fixtures.hpp"

namespace autohaap {
namespace {

using BatchManifest = testing::BatchFolder;

std::vector<std::string> names(const Manifest& m) {
  std::vector<std::string> out;
  for (const auto& e : m.entries) out.push_back(e.name);
  return out;
}

// The error a manifest raises; fails the test if it loads.
InputError error_of(const std::string& path) {
  try {
    load_manifest(path);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << path << " loaded, expected an error";
  return InputError("", "", "", "");
}

TEST_F(BatchManifest, ProductExpandsModelsThenClustersThenTrainings) {
  write("clusters/small.yaml", testing::kTinyCluster);
  write("train/short.yaml", "global_batch: 8\n");
  const auto path = write("jobs/sweep.yaml", R"(
models: [gpt3-125m, gpt3-350m]
clusters: [a100x8, ../clusters/small.yaml]
trainings: [default, ../train/short.yaml]
)");
  const Manifest m = load_manifest(path);
  EXPECT_EQ(m.name, "sweep");
  EXPECT_EQ(m.form, ManifestForm::product);
  const std::vector<std::string> expected = {
      "gpt3-125m__a100x8__default", "gpt3-125m__a100x8__short", "gpt3-125m__small__default",
      "gpt3-125m__small__short",    "gpt3-350m__a100x8__default", "gpt3-350m__a100x8__short",
      "gpt3-350m__small__default",  "gpt3-350m__small__short"};
  EXPECT_EQ(names(m), expected);
  // The file's contents were loaded, not just named.
  EXPECT_EQ(m.entries[2].problem.cluster.name, "tiny");
  EXPECT_EQ(m.entries[1].problem.training.global_batch, 8);
  EXPECT_EQ(m.entries[0].problem.training.global_batch, 512);
  EXPECT_EQ(m.entries[5].source, "models[1] x clusters[0] x trainings[1]");
}

// A bare name is the catalog's unless the manifest's folder holds a file
// of that name: a file of that name where the batch runs (a Slurm submit
// folder) once took its place.
TEST_F(BatchManifest, ABareNameIsTheCatalogsWhereverTheBatchRuns) {
  write("run/a100x8", testing::kTinyCluster);
  const auto path = write("jobs/m.yaml", "models: [gpt3-125m]\nclusters: [a100x8]\n");
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(dir_ / "run");
  const Manifest m = load_manifest(path);
  std::filesystem::current_path(before);
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].problem.cluster.name, "a100x8");
  EXPECT_EQ(m.entries[0].problem.cluster.total_gpus(), 8);
  // Beside the manifest, the file is what the name means.
  write("jobs/a100x8", testing::kTinyCluster);
  EXPECT_EQ(load_manifest(path).entries[0].problem.cluster.name, "tiny");
}

TEST_F(BatchManifest, ExplicitEntriesKeepTheirOrderAndNames) {
  const auto path = write("m.yaml", R"(
name: mine
options: {strategy: uniform, threads: 2, top: 3, time_limit_s: 1.5}
entries:
  - {model: gpt3-350m, cluster: a100x8}
  - {model: gpt3-125m, cluster: a100x8, training: default, name: small-one}
)");
  const Manifest m = load_manifest(path);
  EXPECT_EQ(m.name, "mine");
  EXPECT_EQ(m.options.strategy, "uniform");
  EXPECT_EQ(m.options.threads, 2);
  EXPECT_EQ(m.options.top_k, 3);
  EXPECT_DOUBLE_EQ(m.options.time_limit_s, 1.5);
  EXPECT_EQ(names(m), (std::vector<std::string>{"gpt3-350m__a100x8__default", "small-one"}));
  EXPECT_EQ(m.entries[1].model, "gpt3-125m");
}

TEST_F(BatchManifest, FleetListsEachClustersModels) {
  write("c/tiny.yaml", testing::kTinyCluster);
  const auto path = write("fleet.yaml", R"(
fleet:
  - cluster: c/tiny.yaml
    models: [gpt3-125m]
  - cluster: a100x8
    models: [gpt3-350m, gpt3-125m]
)");
  const Manifest m = load_manifest(path);
  EXPECT_EQ(m.form, ManifestForm::fleet);
  EXPECT_EQ(names(m), (std::vector<std::string>{"gpt3-125m__tiny__default", "gpt3-350m__a100x8__default",
                                                "gpt3-125m__a100x8__default"}));
  EXPECT_EQ(m.entries[2].source, "fleet[1].models[1]");
  EXPECT_EQ(m.options.strategy, "autohaap");  // defaults
}

TEST_F(BatchManifest, ShippedManifestsLoad) {
  const std::string jobs = std::string(AUTOHAAP_SOURCE_DIR) + "/jobs/";
  EXPECT_EQ(load_manifest(jobs + "sweep-gpt3.yaml").entries.size(), 8u);
  EXPECT_EQ(load_manifest(jobs + "sweep-llama3.yaml").entries.size(), 5u);
  const Manifest fleet = load_manifest(jobs + "fleet.yaml");
  EXPECT_EQ(fleet.form, ManifestForm::fleet);
  EXPECT_EQ(fleet.entries.size(), 6u);
}

TEST_F(BatchManifest, UnknownModelNamesTheEntry) {
  const auto path = write("m.yaml", R"(
entries:
  - {model: gpt3-125m, cluster: a100x8}
  - {model: gpt3-125m, cluster: mixed-a100-v100}
  - {model: gpt3-350m, cluster: a100x8}
  - {model: gpt3-9b, cluster: a100x8}
)");
  const InputError e = error_of(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.key(), "entries[3].model");
  EXPECT_EQ(e.value(), "gpt3-9b");
  EXPECT_NE(e.allowed().find("gpt3-13b"), std::string::npos);
}

TEST_F(BatchManifest, MissingFileNamesTheEntryAndWhereItLooked) {
  const auto path = write("jobs/m.yaml", "fleet:\n  - {cluster: ../nowhere/c.yaml, models: [gpt3-125m]}\n");
  const InputError e = error_of(path);
  EXPECT_EQ(e.key(), "fleet[0].cluster");
  EXPECT_EQ(e.value(), "../nowhere/c.yaml");
  EXPECT_NE(e.allowed().find("nowhere/c.yaml"), std::string::npos);
}

TEST_F(BatchManifest, BadReferencedFileNamesBothKeyPaths) {
  write("bad-cluster.yaml", "name: bad\ngroups:\n  - {device: t4, nodes: 0, gpus_per_node: 1}\n");
  const auto path = write("m.yaml", "models: [gpt3-125m]\nclusters: [a100x8, bad-cluster.yaml]\n");
  const InputError e = error_of(path);
  EXPECT_NE(e.key().find("clusters[1]"), std::string::npos) << e.what();
  EXPECT_NE(e.key().find("groups[0].nodes"), std::string::npos) << e.what();
  EXPECT_EQ(e.value(), "0");
}

TEST_F(BatchManifest, RejectsEmptyListsUnknownKeysAndBadOptions) {
  struct Case {
    std::string text, key;
  };
  const std::vector<Case> cases = {
      {"models: []\nclusters: [a100x8]\n", "models"},
      {"models: [gpt3-125m]\nclusters: [a100x8]\ntrainings: []\n", "trainings"},
      {"entries: []\n", "entries"},
      {"fleet:\n  - {cluster: a100x8, models: []}\n", "fleet[0].models"},
      {"models: [gpt3-125m]\n", "clusters"},
      {"models: [gpt3-125m]\nclusters: [a100x8]\nmodle: x\n", "modle"},
      {"entries:\n  - {model: gpt3-125m, cluster: a100x8, trainig: default}\n", "entries[0].trainig"},
      {"options: {strategy: fastest}\nmodels: [gpt3-125m]\nclusters: [a100x8]\n", "options.strategy"},
      {"options: {top: 0}\nmodels: [gpt3-125m]\nclusters: [a100x8]\n", "options.top"},
      {"options: {threads: -1}\nmodels: [gpt3-125m]\nclusters: [a100x8]\n", "options.threads"},
      // Integers in decimal, unquoted, as in every spec file (yaml-cpp
      // reads 010 as 8 and 0x2 as 2).
      {"options: {max_skeletons: 010}\nmodels: [gpt3-125m]\nclusters: [a100x8]\n", "options.max_skeletons"},
      {"options: {top: 0x2}\nmodels: [gpt3-125m]\nclusters: [a100x8]\n", "options.top"},
      {"options: {top: \"2\"}\nmodels: [gpt3-125m]\nclusters: [a100x8]\n", "options.top"},
      {"entries:\n  - {model: gpt3-125m, cluster: a100x8, name: summary}\n", "entries[0].name"},
      {"entries:\n  - {model: gpt3-125m, cluster: a100x8, name: a/b}\n", "entries[0].name"},
      // Its files are named after it: a name past 200 bytes would stop the
      // batch midway, at the first file system refusing it.
      {"entries:\n  - {model: gpt3-125m, cluster: a100x8}\n  - {model: gpt3-350m, cluster: a100x8, name: " +
           std::string(201, 'n') + "}\n",
       "entries[1].name"},
      // Rules between options, as the CLI checks its flags: a gap needs
      // the strategy that proves one.
      {"options: {strategy: uniform, gap: 0.1}\nmodels: [gpt3-125m]\nclusters: [a100x8]\n", "options.gap"},
  };
  for (const auto& c : cases) {
    const InputError e = error_of(write("m.yaml", c.text));
    EXPECT_EQ(e.key(), c.key) << c.text << " -> " << e.what();
  }
}

// Three lists of 50 make 125,000 entries, past kMaxManifestEntries: refused
// by their count before any is built (three lists of 400 had taken over
// 5 GB and ended in std::bad_alloc, even for --count).
TEST_F(BatchManifest, RefusesMoreEntriesThanTheLimitBeforeBuildingThem) {
  auto list = [](const std::string& item) {
    std::string out = "[";
    for (int i = 0; i < 50; ++i) out += (i ? ", " : "") + item;
    return out + "]";
  };
  const auto path = write("big.yaml", "models: " + list("gpt3-125m") + "\nclusters: " + list("a100x8") +
                                          "\ntrainings: " + list("default") + "\n");
  const InputError e = error_of(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.key(), "models");
  EXPECT_EQ(e.value(), "125000 entries (50 models x 50 clusters x 50 trainings)");
  EXPECT_NE(e.allowed().find("at most 100000 entries"), std::string::npos) << e.allowed();
}

TEST_F(BatchManifest, RejectsMixedFormsAndDuplicateNames) {
  EXPECT_THROW(load_manifest(write("a.yaml", "models: [gpt3-125m]\nclusters: [a100x8]\nentries: []\n")), InputError);
  EXPECT_THROW(load_manifest(write("b.yaml", "name: nothing\n")), InputError);
  const InputError dup = error_of(write("c.yaml", R"(
entries:
  - {model: gpt3-125m, cluster: a100x8}
  - {model: gpt3-350m, cluster: a100x8}
  - {model: gpt3-125m, cluster: a100x8, training: default}
)"));
  EXPECT_EQ(dup.key(), "entries[2]");
  EXPECT_NE(dup.allowed().find("entries[0]"), std::string::npos);
  EXPECT_THROW(load_manifest(path("absent.yaml")), InputError);
}

}  // namespace
}  // namespace autohaap
