#include "autohaap/batch/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "autohaap/batch/cache_file.hpp"
#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/batch/summary.hpp"
#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/refinement.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/spec_fingerprint.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

// `dir`, created if need be; `flag` names the option it came from in an
// error (the folder itself, a file there, says nothing of which option).
void make_folder(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw InputError("command line", flag, dir,
                     std::string("a folder that can be created (") + (ec ? ec.message() : "not a folder") + ")");
}

// A folder another manifest's batch wrote (its summary.json names that
// manifest) is refused: this one's entries would replace those of the
// same name and orphan the rest, and the summary would list this
// manifest's alone. A summary that does not read, or reads as something
// else, is rewritten, with a warning, as a damaged result or cache file
// is. The same name from another file, or the manifest edited, may leave
// entries out of the new summary: said, with how many and from where.
// Refuses to let the batch write `path` when it holds a file of another
// kind: the manifest itself, or anything that reads as a plan input (a
// model, cluster, device or training file; a launch manifest), or parses
// as YAML or JSON at all when `parsed_is_other` (summary.json: a summary is
// told by its manifest name before this is asked). A file that does not
// parse is a damaged output, written anew. `what` names the output,
// `allowed` what may stand there.
void refuse_other_kind(const std::string& path, const Manifest& manifest, const char* what, const char* allowed,
                       bool parsed_is_other = true) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  auto refuse = [&](const std::string& is) {
    throw InputError("command line", "--out", fs::path(path).parent_path().string(),
                     std::string("a folder whose ") + what + " is a new file or " + allowed + " (" + path + " is " +
                         is + ", which the batch would overwrite)");
  };
  if (fs::equivalent(path, manifest.path, ec)) refuse("the manifest this batch reads");
  const std::string kind = input_kind(path);
  if (!kind.empty()) {
    if (kind != "plan") refuse("a " + kind + " file");
    return;
  }
  bool parses = false;
  try {
    parses = YAML::Load(read_file(path)).IsMap();
  } catch (const std::exception&) {
    parses = false;
  }
  if (parses && parsed_is_other) refuse("a file of another kind");
}

void check_folder_is_this_manifests(const BatchRunOptions& o, const Manifest& manifest) {
  const fs::path summary = fs::path(o.out_dir) / "summary.json";
  std::error_code ec;
  if (!fs::is_regular_file(summary, ec)) return;
  std::string written_for, written_from;
  std::vector<std::string> written_entries;
  try {
    const YAML::Node root = YAML::Load(read_file(summary.string()));
    if (!root.IsMap() || !root["manifest"] || !root["manifest"].IsScalar())
      throw std::runtime_error("not a batch summary: no manifest name");
    written_for = root["manifest"].Scalar();
    if (root["manifest_path"] && root["manifest_path"].IsScalar()) written_from = root["manifest_path"].Scalar();
    if (root["entries"] && root["entries"].IsSequence())
      for (const YAML::Node& e : root["entries"])
        if (e.IsMap() && e["name"] && e["name"].IsScalar()) written_entries.push_back(e["name"].Scalar());
  } catch (const std::exception& e) {
    // A file of another kind (a model, a cluster, this very manifest) is
    // not the batch's to replace; one that does not parse at all is a
    // damaged summary, rewritten.
    refuse_other_kind(summary.string(), manifest, "summary.json", "an earlier batch summary");
    if (o.on_warning)
      o.on_warning(summary.string() + " does not read (" + e.what() + "); it is written anew for manifest '" +
                   manifest.name + "'");
    return;
  }
  if (written_for != manifest.name)
    throw InputError("command line", "--out", o.out_dir,
                     "a new folder, or one written for manifest '" + manifest.name +
                         "' (this one holds the results of manifest '" + written_for + "': " + summary.string() + ")");
  std::set<std::string> names;
  for (const BatchEntry& e : manifest.entries) names.insert(e.name);
  const auto left_out = std::count_if(written_entries.begin(), written_entries.end(),
                                      [&](const std::string& n) { return !names.count(n); });
  if (left_out > 0 && o.on_warning)
    o.on_warning(std::to_string(left_out) + " of the " + std::to_string(written_entries.size()) + " entries in " +
                 summary.string() + " (manifest '" + written_for + "' read from " + written_from +
                 ") are not in " + manifest.path + " and leave the summary; their files stay in " + o.out_dir);
}

// What the run writes besides summary.json may replace only what a batch
// wrote there: summary.csv when it begins with the summary's header, and
// each selected entry's plan file when it is a plan (or a damaged one,
// planned again). A model file at DIR/<entry>.json, or the manifest named
// so, had been overwritten without a word.
void check_outputs_are_the_batchs(const BatchRunOptions& o, const Manifest& manifest,
                                  const std::vector<std::size_t>& selected) {
  const fs::path csv = fs::path(o.out_dir) / "summary.csv";
  std::error_code ec;
  if (fs::is_regular_file(csv, ec)) {
    refuse_other_kind(csv.string(), manifest, "summary.csv", "an earlier batch summary", false);
    const std::string header = summary_csv(BatchSummary{}), text = read_file(csv.string());
    if (text.compare(0, header.size(), header) != 0)
      throw InputError("command line", "--out", o.out_dir,
                       "a folder whose summary.csv is a new file or an earlier batch summary (" + csv.string() +
                           " does not begin with its header, which the batch would overwrite)");
  }
  for (const std::size_t i : selected)
    refuse_other_kind(plan_path(o.out_dir, manifest.entries.at(i).name), manifest, "plan files",
                      "earlier plans", false);
}

std::string cache_dir_of(const BatchRunOptions& o) {
  return o.cache_dir.empty() ? (fs::path(o.out_dir) / "cache").string() : o.cache_dir;
}

void warn(const BatchRunOptions& o, const std::string& message) {
  if (o.on_warning) o.on_warning(message);
}

bool cancelled(const BatchRunOptions& o) { return o.cancel && o.cancel->load(); }

// The previous result may stand in for a new search: same inputs, an
// answer (not a failure), and for a found plan, the plan still on disk and
// readable (why it is not goes into `refused_plan`).
bool can_skip(const std::optional<EntryResult>& previous, const BatchEntry& entry, const std::string& fingerprint,
              const std::string& out_dir, std::string* refused_plan) {
  if (!previous || previous->name != entry.name || previous->input_fingerprint != fingerprint) return false;
  if (previous->outcome == EntryStatus::infeasible) return true;
  const std::string path = plan_path(out_dir, entry.name);
  std::error_code ec;
  if (previous->outcome != EntryStatus::found || !fs::is_regular_file(path, ec)) return false;
  // The plan must still read back: a damaged one is planned again.
  Plan plan;
  try {
    plan = read_plan(path);
  } catch (const std::exception& e) {
    *refused_plan = e.what();
    return false;
  }
  // And it must be the answer the result file describes: made for this
  // entry's specs, with the result's time and GPUs (a plan copied over it,
  // or a result file edited by hand, once stood in for the entry).
  const bool same_specs = plan.specs && spec_fingerprint(plan.specs->model) == spec_fingerprint(entry.problem.model) &&
                          spec_fingerprint(plan.specs->cluster) == spec_fingerprint(entry.problem.cluster) &&
                          spec_fingerprint(plan.specs->training) == spec_fingerprint(entry.problem.training);
  const double t = plan.predicted.iteration_time_s;
  const bool same_answer = t > 0 && std::abs(previous->iteration_time_s - t) <= 1e-6 * t &&
                           previous->gpus == plan.num_gpus() && previous->mfu > 0 && previous->mfu <= 1;
  if (!same_specs || !same_answer) {
    *refused_plan = path + (!same_specs ? " was made for other specs than this entry's"
                                        : " does not carry the time, GPUs and MFU its result file gives");
    return false;
  }
  // And its stages must still be the plan that time is of: a plan whose
  // stages were edited by hand, its `predicted` block left as it was, had
  // been skipped, the summary reporting the time of a plan no longer there.
  try {
    check_plan_against(plan, entry.problem, path);
    const double now = CostModel(entry.problem).estimate(plan).iteration_time_s;
    if (!(std::abs(now - t) <= 1e-6 * t)) {
      *refused_plan = path + " is priced at " + std::to_string(now) + " s, not the " + std::to_string(t) +
                      " s it carries (edited after it was written?)";
      return false;
    }
  } catch (const std::exception& e) {
    *refused_plan = e.what();
    return false;
  }
  return true;
}

}  // namespace

std::size_t BatchReport::count(EntryStatus status) const {
  std::size_t n = 0;
  for (const auto& r : results) n += r.status == status;
  return n;
}

int BatchReport::exit_code() const {
  // A batch ends as its worst entry: stopped, else failed, else answered
  // (found, infeasible and skipped are all answers).
  if (interrupted) return autohaap::exit_code(PlanStatus::stopped_no_plan);
  return count(EntryStatus::failed) > 0 ? autohaap::exit_code(PlanStatus::failed) : kExitOk;
}

std::optional<EntryResult> run_entry(const Manifest& manifest, const BatchEntry& entry,
                                     const BatchRunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::string fingerprint = input_fingerprint(entry.problem, manifest.options);
  const std::string sidecar = result_path(options.out_dir, entry.name);
  const std::string plan_file = plan_path(options.out_dir, entry.name);

  std::string refused;
  const auto previous = read_entry_result(sidecar, &refused);
  if (!refused.empty()) warn(options, "previous result " + sidecar + " refused (" + refused + "); searching again");
  std::string refused_plan;
  const bool skip = can_skip(previous, entry, fingerprint, options.out_dir, &refused_plan);
  if (!refused_plan.empty()) warn(options, "previous plan refused (" + refused_plan + "); searching again");
  if (skip) {
    EntryResult r = *previous;
    r.status = EntryStatus::skipped;
    write_file_atomically(sidecar, entry_result_to_json(r));
    return r;
  }

  EntryResult r;
  r.name = entry.name;
  r.model = entry.model;
  r.cluster = entry.cluster;
  r.training = entry.training;
  r.input_fingerprint = fingerprint;
  r.tool_version = AUTOHAAP_VERSION;

  // The cache is an accelerator: when it cannot be read or written the
  // entry is still planned, only slower, so its problems are warnings.
  const std::string problem_key = problem_fingerprint(entry.problem);
  const std::string cache_path = cache_file_path(cache_dir_of(options), problem_key);
  LatencyCache cache;
  try {
    const CacheLoadReport loaded = load_cache_file(cache_path, problem_key, cache);
    if (!loaded.warning.empty()) warn(options, loaded.warning);
  } catch (const std::exception& e) {
    warn(options, std::string("latency cache not loaded: ") + e.what());
  }

  bool interrupted = false;
  try {
    SearchOptions so;
    static_cast<SearchSettings&>(so) = manifest.options;
    if (options.threads >= 0) so.threads = options.threads;
    so.cancel = options.cancel;
    so.cache = &cache;
    const SearchResult searched = run_search(entry.problem, so);
    // The plans `autohaap search` answers with for the same inputs; a
    // signal during their refinement interrupts the entry as one during
    // the search does.
    SearchResult result = searched;
    std::vector<Plan> top;
    if (has_plan(searched.status) && !(stopped_early(searched.status) && cancelled(options))) {
      FinishedSearch finished = finish_search(CostModel(entry.problem), searched, so, so.cancel);
      top = std::move(finished.plans);
      result = std::move(finished.result);
    }
    interrupted = stopped_early(result.status) && cancelled(options);
    const CacheCounters counters = cache.counters();
    r.cache_hits = counters.hits + counters.peer_hits;
    r.cache_misses = counters.misses;
    if (interrupted) {
      // Not recorded: a partial answer must not be mistaken for the answer.
    } else if (has_plan(result.status)) {
      const Plan& best = top.front();
      write_plan(best, plan_file, entry.problem);
      r.status = r.outcome = EntryStatus::found;
      r.iteration_time_s = best.predicted.iteration_time_s;
      r.tokens_per_s = best.predicted.tokens_per_s;
      r.mfu = best.predicted.mfu;
      r.gpus = best.num_gpus();
      r.stages = static_cast<int>(best.stages.size());
      r.plan_file = fs::path(plan_file).filename().string();
      // Stopped short of a proof: by what (the time limit, or the skeleton
      // limit's stop_reason), and how far the plan may be from the best.
      // Ended within the gap asked for (the answer asked for, a success,
      // but not the optimum): how far it may be, as search says it.
      char gap[48];
      std::snprintf(gap, sizeof gap, " (proven within %.2f%% of the best)", 100 * result.stats.gap);
      if (result.status == PlanStatus::stopped_with_plan) {
        r.error = (!result.stop_reason.empty() ? result.stop_reason
                   : searched.status != result.status
                       ? "time limit of " + seconds_text(manifest.options.time_limit_s) +
                             " s reached while refining the search's plans: best plan so far"
                       : "time limit of " + seconds_text(manifest.options.time_limit_s) + " s reached: best plan so far") +
                  gap;
      } else if (result.status == PlanStatus::gap_reached) {
        r.error = "gap of " + seconds_text(manifest.options.gap) + " reached: stopped early" + gap;
      }
    } else if (result.status == PlanStatus::stopped_no_plan) {
      r.status = r.outcome = EntryStatus::failed;
      r.error = "time limit of " + seconds_text(manifest.options.time_limit_s) +
                " s reached before any feasible plan was found";
    } else {
      r.status = r.outcome = EntryStatus::infeasible;
      r.error = result.infeasible_reason.empty() ? "no feasible plan" : result.infeasible_reason;
      std::error_code ec;
      fs::remove(plan_file, ec);  // a plan for earlier inputs would contradict this answer
    }
  } catch (const std::exception& e) {
    r.status = r.outcome = EntryStatus::failed;
    r.error = e.what();
  }

  if (cache.counters().misses > 0) {
    try {
      save_cache_file(cache_path, problem_key, cache);
    } catch (const std::exception& e) {
      warn(options, std::string("latency cache not saved: ") + e.what());
    }
  }
  if (interrupted) return std::nullopt;

  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_file_atomically(sidecar, entry_result_to_json(r));
  return r;
}

BatchReport run_batch(const Manifest& manifest, const std::vector<std::size_t>& selected,
                      const BatchRunOptions& options) {
  make_folder(options.out_dir, "--out");
  check_folder_is_this_manifests(options, manifest);
  check_outputs_are_the_batchs(options, manifest, selected);
  make_folder((fs::path(options.out_dir) / "results").string(), "--out");
  make_folder(cache_dir_of(options), options.cache_dir.empty() ? "--out" : "--cache");

  // The entries this run starts are pending until it ends: a kill that
  // writes nothing more (SIGKILL) had left the last run's summary saying
  // `found` beside plan files this run had replaced.
  rebuild_summary(manifest, options.out_dir, selected);
  BatchReport report;
  for (std::size_t k = 0; k < selected.size(); ++k) {
    if (cancelled(options)) {
      report.interrupted = true;
      break;
    }
    const BatchEntry& entry = manifest.entries.at(selected[k]);
    auto r = run_entry(manifest, entry, options);
    if (!r) {
      report.interrupted = true;
      break;
    }
    report.results.push_back(*r);
    if (options.on_entry) options.on_entry(*r, k + 1, selected.size());
  }
  report.summary = rebuild_summary(manifest, options.out_dir);
  return report;
}

}  // namespace autohaap
