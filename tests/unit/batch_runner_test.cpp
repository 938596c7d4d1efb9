// The batch runner end to end on small problems: plans, sidecars and the
// summary land where documented; unchanged entries are skipped and changed
// ones redone; a failing entry is recorded and the others still run; an
// infeasible one is a result; an interrupted run records nothing; the
// persistent cache makes a repeated search compute (almost) nothing; and
// runs of disjoint selections at once leave one complete summary.
// Also the pieces it is built from: entry selection, result sidecars, CSV.
#include "autohaap/batch/runner.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "autohaap/batch/cache_file.hpp"
#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/batch/selection.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/plan_io.hpp"
#include "batch_fixtures.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;
using BatchRunner = testing::BatchFolder;

// gpt3-125m fits anywhere; gpt3-13b does not fit on one T4.
constexpr const char* kManifest = R"(
options: {threads: 2}
entries:
  - {model: gpt3-125m, cluster: a100x8}
  - {model: gpt3-13b, cluster: tiny.yaml}
  - {model: gpt3-350m, cluster: mixed-a100-v100}
)";
constexpr const char* kSmall = "gpt3-125m__a100x8__default";
constexpr const char* kInfeasible = "gpt3-13b__tiny__default";
constexpr const char* kMixed = "gpt3-350m__mixed-a100-v100__default";

class Batch : public BatchRunner {
 protected:
  void SetUp() override {
    BatchRunner::SetUp();
    write("tiny.yaml", testing::kTinyCluster);
    manifest_ = load_manifest(write("m.yaml", kManifest));
    options_.out_dir = path("out");
  }
  BatchReport run(const std::vector<std::size_t>& which = {0, 1, 2}) {
    return run_batch(manifest_, which, options_);
  }
  // run(which), each warning it gives into `warnings`.
  BatchReport run_warned(std::vector<std::string>& warnings, const std::vector<std::size_t>& which) {
    options_.on_warning = [&warnings](const std::string& w) { warnings.push_back(w); };
    return run(which);
  }
  EntryStatus row(const BatchReport& r, const std::string& name) const {
    for (const auto& e : r.summary.rows)
      if (e.name == name) return e.status;
    ADD_FAILURE() << name << " not in the summary";
    return EntryStatus::pending;
  }
  Manifest manifest_;
  BatchRunOptions options_;
};

TEST_F(Batch, WritesPlansSidecarsAndSummary) {
  const BatchReport r = run();
  EXPECT_EQ(r.exit_code(), kExitOk);  // infeasible is an answer, not a failure
  ASSERT_EQ(r.results.size(), 3u);
  EXPECT_EQ(r.results[0].status, EntryStatus::found);
  EXPECT_EQ(r.results[1].status, EntryStatus::infeasible);
  EXPECT_FALSE(r.results[1].error.empty());  // the reason
  EXPECT_EQ(r.results[2].status, EntryStatus::found);

  // The plan file is a valid plan for its problem, with the numbers the
  // result reports.
  const Plan plan = read_plan(plan_path(options_.out_dir, kSmall));
  check_plan_against(plan, manifest_.entries[0].problem.model, manifest_.entries[0].problem.cluster,
                     manifest_.entries[0].problem.seq_len(), "plan");
  EXPECT_DOUBLE_EQ(plan.predicted.iteration_time_s, r.results[0].iteration_time_s);
  EXPECT_EQ(plan.num_gpus(), r.results[0].gpus);
  EXPECT_FALSE(fs::exists(plan_path(options_.out_dir, kInfeasible)));

  const auto sidecar = read_entry_result(result_path(options_.out_dir, kMixed));
  ASSERT_TRUE(sidecar);
  EXPECT_EQ(sidecar->input_fingerprint, input_fingerprint(manifest_.entries[2].problem, manifest_.options));
  EXPECT_EQ(sidecar->plan_file, std::string(kMixed) + ".json");

  const std::string csv = read_file(path("out/summary.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "name,model,cluster,training,status,iteration_time_s,tokens_per_s,mfu,gpus,stages,wall_s,error");
  EXPECT_NE(csv.find(std::string(kSmall) + ",gpt3-125m,a100x8,default,found,"), std::string::npos);
  EXPECT_NE(csv.find(std::string(kInfeasible) + ",gpt3-13b,tiny,default,infeasible,,,,,,"), std::string::npos);
  const std::string json = read_file(path("out/summary.json"));
  EXPECT_NE(json.find("\"found\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"infeasible\": 1"), std::string::npos);
}

TEST_F(Batch, SkipsUnchangedEntriesAndRedoesChangedOnes) {
  run();
  const std::string plan_before = read_file(plan_path(options_.out_dir, kSmall));
  BatchReport again = run();
  for (const auto& e : again.results) EXPECT_EQ(e.status, EntryStatus::skipped) << e.name;
  EXPECT_EQ(again.results[0].outcome, EntryStatus::found);
  EXPECT_EQ(again.results[1].outcome, EntryStatus::infeasible);
  EXPECT_EQ(again.exit_code(), kExitOk);
  EXPECT_EQ(read_file(plan_path(options_.out_dir, kSmall)), plan_before);
  EXPECT_EQ(row(again, kSmall), EntryStatus::skipped);

  // Threads do not change the answer: still skipped. Top does: redone.
  manifest_.options.threads = 1;
  EXPECT_EQ(run({0}).results[0].status, EntryStatus::skipped);
  manifest_.options.top_k = 2;
  EXPECT_EQ(run({0}).results[0].status, EntryStatus::found);

  // A deleted plan is redone even though its inputs did not change.
  fs::remove(plan_path(options_.out_dir, kMixed));
  EXPECT_EQ(run({2}).results[0].status, EntryStatus::found);
  EXPECT_TRUE(fs::exists(plan_path(options_.out_dir, kMixed)));
}

TEST_F(Batch, AFailingEntryIsRecordedAndTheOthersRun) {
  // A folder where the first entry's plan file should go makes writing it fail.
  fs::create_directories(plan_path(options_.out_dir, kSmall));
  BatchReport r = run();
  EXPECT_EQ(r.exit_code(), kExitFailure);
  EXPECT_EQ(r.results[0].status, EntryStatus::failed);
  EXPECT_NE(r.results[0].error.find(kSmall), std::string::npos) << r.results[0].error;
  EXPECT_EQ(r.results[2].status, EntryStatus::found);
  EXPECT_EQ(row(r, kSmall), EntryStatus::failed);
  EXPECT_NE(read_file(path("out/summary.csv")).find(",failed,"), std::string::npos);

  // A failure is retried whatever the fingerprint; answers are not.
  fs::remove(plan_path(options_.out_dir, kSmall));
  r = run();
  EXPECT_EQ(r.exit_code(), kExitOk);
  EXPECT_EQ(r.results[0].status, EntryStatus::found);
  EXPECT_EQ(r.results[1].status, EntryStatus::skipped);
  EXPECT_EQ(r.results[2].status, EntryStatus::skipped);
}

TEST_F(Batch, InterruptedRunRecordsNothingAndLeavesEntriesPending) {
  std::atomic<bool> cancel{true};
  options_.cancel = &cancel;
  const BatchReport r = run();
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.exit_code(), kExitInterrupted);
  EXPECT_TRUE(r.results.empty());
  EXPECT_EQ(r.summary.count(EntryStatus::pending), 3u);
  EXPECT_FALSE(fs::exists(result_path(options_.out_dir, kSmall)));
}

TEST_F(Batch, PersistentCacheSparesARepeatedSearch) {
  const BatchReport first = run({2});
  ASSERT_EQ(first.results[0].status, EntryStatus::found);
  const std::string key = problem_fingerprint(manifest_.entries[2].problem);
  EXPECT_TRUE(fs::exists(cache_file_path(path("out/cache"), key)));

  fs::remove(plan_path(options_.out_dir, kMixed));
  const BatchReport second = run({2});
  ASSERT_EQ(second.results[0].status, EntryStatus::found);
  EXPECT_DOUBLE_EQ(second.results[0].iteration_time_s, first.results[0].iteration_time_s);
  EXPECT_GT(first.results[0].cache_misses, 0);
  EXPECT_LT(second.results[0].cache_misses * 20, first.results[0].cache_misses)
      << "loaded cache should answer nearly every lookup";
  EXPECT_GT(second.results[0].cache_hits, 0);
}

TEST_F(Batch, DamagedCacheIsRebuiltWithAWarning) {
  options_.cache_dir = path("elsewhere");
  fs::create_directories(options_.cache_dir);
  const std::string key = problem_fingerprint(manifest_.entries[0].problem);
  write_file_atomically(cache_file_path(options_.cache_dir, key), "garbage");
  std::vector<std::string> warnings;
  const BatchReport r = run_warned(warnings, {0});
  EXPECT_EQ(r.results[0].status, EntryStatus::found);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("not a latency cache"), std::string::npos) << warnings[0];
  LatencyCache reloaded;
  EXPECT_GT(load_cache_file(cache_file_path(options_.cache_dir, key), key, reloaded).entries, 0u);
  EXPECT_FALSE(fs::exists(path("out/cache/" + key + ".bin")));  // --cache moved it
}

TEST_F(Batch, ConcurrentSelectionsLeaveOneCompleteSummary) {
  // As the tasks of a job array: one entry each, at once, one folder.
  std::vector<std::thread> tasks;
  for (std::size_t i = 0; i < 3; ++i) tasks.emplace_back([this, i] { run_batch(manifest_, {i}, options_); });
  for (auto& t : tasks) t.join();
  const BatchSummary s = rebuild_summary(manifest_, options_.out_dir);
  EXPECT_EQ(s.count(EntryStatus::found), 2u);
  EXPECT_EQ(s.count(EntryStatus::infeasible), 1u);
  EXPECT_EQ(s.count(EntryStatus::pending), 0u);
  const std::string csv = read_file(path("out/summary.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
}

// While a run goes on, the entries it runs are pending in the summary on
// disk: a run killed with SIGKILL (which writes nothing more) had left the
// previous run's summary saying `found`, with the old times, beside plan
// files it had already replaced.
TEST_F(Batch, EntriesARunStartsArePendingOnDiskUntilItEnds) {
  run();
  ASSERT_NE(read_file(path("out/summary.csv")).find(std::string(kSmall) + ",gpt3-125m,a100x8,default,found"),
            std::string::npos);
  std::vector<std::string> seen;
  options_.on_entry = [&](const EntryResult&, std::size_t, std::size_t) {
    seen.push_back(read_file(path("out/summary.csv")));
  };
  run({0, 2});
  ASSERT_EQ(seen.size(), 2u);
  // The status column of `entry`'s row.
  auto status = [](const std::string& csv, const std::string& entry) {
    const std::size_t at = csv.find("\n" + entry + ",");
    if (at == std::string::npos) return std::string("(no row)");
    const std::string line = csv.substr(at + 1, csv.find('\n', at + 1) - at - 1);
    std::size_t field = 0;
    for (int k = 0; k < 4; ++k) field = line.find(',', field) + 1;
    return line.substr(field, line.find(',', field) - field);
  };
  for (const std::string& csv : seen) {
    EXPECT_EQ(status(csv, kSmall), "pending") << csv;
    EXPECT_EQ(status(csv, kMixed), "pending") << csv;
    EXPECT_EQ(status(csv, kInfeasible), "infeasible") << csv;  // not run now: as its sidecar says
  }
  EXPECT_EQ(status(read_file(path("out/summary.csv")), kSmall), "skipped");  // its inputs did not change
}

// A result made for other inputs than its entry has now is no answer: the
// summary lists it pending with the reason, whether another selection (a
// shard) ran and this entry was not in it, or a run was interrupted before
// reaching it. Both had listed the old plan's status and time as current.
TEST_F(Batch, ResultsMadeForOtherInputsArePendingNotCurrent) {
  run();
  manifest_.options.top_k = 2;  // every entry's inputs change
  const BatchReport one = run({0});
  EXPECT_EQ(one.results[0].status, EntryStatus::found);
  EXPECT_EQ(row(one, kInfeasible), EntryStatus::pending);
  EXPECT_EQ(row(one, kMixed), EntryStatus::pending);
  for (const EntryResult& e : one.summary.rows)
    if (e.name != kSmall) EXPECT_NE(e.error.find("made for other inputs"), std::string::npos) << e.error;
  manifest_.options.top_k = 3;
  std::atomic<bool> cancel{true};
  options_.cancel = &cancel;
  const BatchReport interrupted = run();
  EXPECT_TRUE(interrupted.interrupted);
  EXPECT_EQ(interrupted.summary.count(EntryStatus::pending), 3u);
  EXPECT_EQ(read_file(path("out/summary.csv")).find(",found,"), std::string::npos);
}

TEST_F(Batch, SummaryListsEntriesNotRunYetAsPending) {
  const BatchReport r = run({1});
  EXPECT_EQ(r.summary.rows.size(), 3u);
  EXPECT_EQ(row(r, kSmall), EntryStatus::pending);
  EXPECT_EQ(row(r, kInfeasible), EntryStatus::infeasible);
  EXPECT_NE(read_file(path("out/summary.csv")).find(std::string(kMixed) + ",gpt3-350m,mixed-a100-v100,default,pending"),
            std::string::npos);
}

TEST(EntrySelectionTest, IndexShardAndAll) {
  EXPECT_EQ(select_entries(3, EntrySelection::all()), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(select_entries(5, EntrySelection::one(4)), (std::vector<std::size_t>{4}));
  EXPECT_EQ(select_entries(7, parse_shard("1/3")), (std::vector<std::size_t>{1, 4}));
  EXPECT_TRUE(select_entries(2, parse_shard("3/4")).empty());
  EXPECT_THROW(select_entries(5, EntrySelection::one(5)), InputError);
  EXPECT_THROW(select_entries(5, EntrySelection::one(-1)), InputError);
  for (const char* bad : {"3", "3/3", "-1/2", "1/0", "a/b", "1/2/3", "/2", "1/", " 1/2"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "--shard");
    }
  }
}

TEST(EntryResultTest, RoundTripsAndRejectsForeignDocuments) {
  EntryResult r;
  r.name = "a__b__c";
  r.status = EntryStatus::skipped;
  r.outcome = EntryStatus::found;
  r.iteration_time_s = 1.0 / 3.0;
  r.error = "quote \" and, comma";
  r.cache_hits = 1LL << 40;
  const auto back = entry_result_from_json(entry_result_to_json(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, r.name);
  EXPECT_EQ(back->status, EntryStatus::skipped);
  EXPECT_EQ(back->outcome, EntryStatus::found);
  EXPECT_EQ(back->iteration_time_s, r.iteration_time_s);
  EXPECT_EQ(back->error, r.error);
  EXPECT_EQ(back->cache_hits, r.cache_hits);
  EXPECT_FALSE(entry_result_from_json("{\"format\": \"autohaap-plan/1\"}"));
  EXPECT_FALSE(entry_result_from_json("not json"));
  std::string bad_status = entry_result_to_json(r);
  bad_status.replace(bad_status.find("\"skipped\""), 9, "\"done\"");
  EXPECT_FALSE(entry_result_from_json(bad_status));
}

TEST(EntryResultTest, AFieldOfTheWrongTypeIsNamed) {
  // cereal says only "IsNumber()": the reason names the field and types.
  EntryResult r;
  r.name = "e";
  std::string text = entry_result_to_json(r);
  const std::size_t at = text.find("\"mfu\": ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::size_t end = text.find_first_of(",\n", at);
  text.replace(at, end - at, "\"mfu\": \"abc\"");
  std::string why;
  EXPECT_FALSE(entry_result_from_json(text, &why));
  EXPECT_EQ(why, "not a result document ('mfu': got \"abc\"; allowed: a number)");
}

TEST(EntryResultTest, NestingBombIsRefusedWithTheReason) {
  std::string why;
  EXPECT_FALSE(entry_result_from_json(std::string(300000, '[') + std::string(300000, ']'), &why));
  EXPECT_EQ(why, "line 1, column 65: arrays and objects nested deeper than 64 levels");
  why.clear();
  EXPECT_FALSE(entry_result_from_json("{\"format\": \"autohaap-plan/1\"}", &why));
  EXPECT_FALSE(why.empty());
}

TEST_F(Batch, ADamagedResultFileIsReportedAndItsEntryRunAgain) {
  // One entry's sidecar is a nesting bomb, another's is cut short: the run
  // warns about the first and searches it again; the summary row of the
  // second, not run, says why it is pending.
  const std::string bomb = std::string(300000, '[') + std::string(300000, ']');
  write("out/results/" + std::string(kSmall) + ".json", bomb);
  write("out/results/" + std::string(kMixed) + ".json", "{\"format\": \"autohaap-batch-result/1\", \"na");
  std::vector<std::string> warnings;
  const BatchReport r = run_warned(warnings, {0});
  EXPECT_EQ(r.results[0].status, EntryStatus::found);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("nested deeper than 64 levels"), std::string::npos) << warnings[0];
  EXPECT_EQ(row(r, kMixed), EntryStatus::pending);
  for (const auto& e : r.summary.rows) {
    if (e.name == kMixed) EXPECT_NE(e.error.find("refused"), std::string::npos) << e.error;
  }
  EXPECT_TRUE(read_entry_result(path("out/results/" + std::string(kSmall) + ".json")));
}

TEST_F(Batch, ADamagedSummaryIsReportedAndWrittenAnew) {
  write("out/summary.json", "{\"format\": \"autohaap-batch-summary/1\", \"mani");
  std::vector<std::string> warnings;
  run_warned(warnings, {0});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("summary.json does not read"), std::string::npos) << warnings[0];
  EXPECT_NE(read_file(path("out/summary.json")).find("\"manifest\""), std::string::npos);
  // Text that parses, but as no summary (a YAML scalar), is damage too:
  // once rewritten without a word.
  write("out/summary.json", "garbage\n");
  warnings.clear();
  run_warned(warnings, {0});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("not a batch summary"), std::string::npos) << warnings[0];
}

// The folder's outputs replace only what a batch wrote there: a model at
// summary.json or at an entry's plan file, the manifest itself named
// summary.json, or a CSV of someone's at summary.csv had been overwritten
// (the next run then failed on its own input).
TEST_F(Batch, OutputsNeverReplaceAnotherKindOfFile) {
  const std::string model = R"({"name": "g", "family": "gpt", "layers": 12, "hidden": 768, "heads": 12, )"
                            R"("vocab": 50257, "seq_len": 2048})";
  auto refused = [&](const std::string& file, const std::string& text, const std::string& says) {
    SCOPED_TRACE(file);
    fs::remove_all(path("out"));
    write("out/" + file, text);
    try {
      run({0});
      ADD_FAILURE() << "not refused";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "--out");
      EXPECT_NE(e.allowed().find(says), std::string::npos) << e.allowed();
    }
    EXPECT_EQ(read_file(path("out/" + file)), text);
  };
  refused("summary.json", model, "is a model file");
  refused("summary.csv", "id,time\nrun-1,1.5\n", "does not begin with its header");
  refused(std::string(kSmall) + ".json", model, "is a model file");
  // The manifest itself at summary.json.
  fs::remove_all(path("out"));
  const std::string text = "name: k3\nmodels: [gpt3-125m]\nclusters: [a100x8]\n";
  manifest_ = load_manifest(write("out/summary.json", text));
  EXPECT_THROW(run({0}), InputError);
  EXPECT_EQ(read_file(path("out/summary.json")), text);
}

TEST_F(Batch, EntriesLeftOutOfTheSummaryAreSaid) {
  // The same manifest name from another file (or the manifest edited)
  // with one entry of the three: the other two leave the summary, said.
  ASSERT_EQ(run().results.size(), 3u);
  Manifest one = manifest_;
  one.path = path("other/m.yaml");
  one.entries.resize(1);
  std::vector<std::string> warnings;
  options_.on_warning = [&warnings](const std::string& w) { warnings.push_back(w); };
  run_batch(one, {0}, options_);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 of the 3 entries in"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("are not in " + one.path), std::string::npos) << warnings[0];
  // The whole manifest again: nothing left out, nothing said.
  warnings.clear();
  run_batch(manifest_, {0}, options_);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

TEST_F(Batch, ADamagedPlanIsPlannedAgainNotSkipped) {
  ASSERT_EQ(run({0}).results[0].status, EntryStatus::found);
  const std::string plan = plan_path(options_.out_dir, kSmall);
  write_file_atomically(plan, "garbage\n");
  std::vector<std::string> warnings;
  const BatchReport r = run_warned(warnings, {0});
  EXPECT_EQ(r.results[0].status, EntryStatus::found);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("previous plan refused"), std::string::npos) << warnings[0];
  EXPECT_NO_THROW(read_plan(plan));
}

// A readable plan that is not the one the result describes: another
// entry's plan copied over it, or a result file whose numbers were edited.
// Either once stood in for the entry (skipped, with the result's numbers).
TEST_F(Batch, APlanOtherThanItsResultDescribesIsPlannedAgain) {
  ASSERT_EQ(run({0, 2}).results[0].status, EntryStatus::found);
  // Entry 0 run again: searched, not skipped, with one warning saying why.
  auto planned_again_because = [this](const std::string& why) {
    std::vector<std::string> warnings;
    EXPECT_EQ(run_warned(warnings, {0}).results[0].status, EntryStatus::found) << why;
    ASSERT_EQ(warnings.size(), 1u) << why;
    EXPECT_NE(warnings[0].find(why), std::string::npos) << warnings[0];
  };
  const std::string plan = plan_path(options_.out_dir, kSmall);
  fs::copy_file(plan_path(options_.out_dir, kMixed), plan, fs::copy_options::overwrite_existing);
  planned_again_because("other specs");

  const std::string sidecar = result_path(options_.out_dir, kSmall);
  EntryResult edited = *read_entry_result(sidecar, nullptr);
  edited.iteration_time_s *= 0.5;
  write_file_atomically(sidecar, entry_result_to_json(edited));
  planned_again_because("does not carry the time");
  EXPECT_EQ(run({0}).results[0].status, EntryStatus::skipped) << "planned again, then unchanged";

  // A plan whose stages were edited by hand, its predicted figures left as
  // they were, is no longer the plan its result describes: it had been
  // skipped, the summary giving the time of the plan replaced.
  Plan hand = read_plan(plan);
  ASSERT_FALSE(hand.stages.empty());
  const Recompute other = hand.stages[0].recompute == Recompute::full ? Recompute::none : Recompute::full;
  for (StagePlan& s : hand.stages) s.recompute = other;
  write_file_atomically(plan, plan_to_json(hand));
  planned_again_because("edited after it was written");
}

TEST(BatchSummaryTest, CsvQuotesFieldsThatNeedIt) {
  BatchSummary s;
  EntryResult r;
  r.name = "n";
  r.status = r.outcome = EntryStatus::failed;
  r.error = "cannot write \"x\", disk full";
  s.rows.push_back(r);
  const std::string csv = summary_csv(s);
  EXPECT_NE(csv.find(",failed,,,,,,0.000,\"cannot write \"\"x\"\", disk full\"\n"), std::string::npos) << csv;
}

}  // namespace
}  // namespace autohaap
