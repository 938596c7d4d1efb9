// Batch summary: one row per manifest entry, in manifest order, written as
// DIR/summary.csv (for spreadsheets and grep) and DIR/summary.json (for
// scripts). Columns: name, model, cluster, training, status,
// iteration_time_s, tokens_per_s, mfu, gpus, stages, wall_s, error; the
// numbers are empty in the CSV when the entry has no plan.
//
// The summary is always rebuilt from the result sidecars present in
// DIR/results/ (batch/entry_result.hpp), never patched, so tasks of a job
// array that each ran one entry still produce one complete summary: each
// task rebuilds it after its entry, under an exclusive flock on
// DIR/.summary.lock, and the last one to finish sees every result. An entry
// with no sidecar yet is listed as `pending`; sidecars of names the
// manifest no longer has are ignored (left on disk).
//
// Callers: the batch runner, tests. Cost: one small file read per entry plus
// two atomic writes; the lock is held for all of it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "autohaap/batch/entry_result.hpp"
#include "autohaap/batch/manifest.hpp"

namespace autohaap {

struct BatchSummary {
  std::string manifest_name;
  std::string manifest_path;
  std::vector<EntryResult> rows;  // manifest order

  std::size_t count(EntryStatus status) const;
};

// Paths inside an output folder, shared by the runner and the summary.
std::string plan_path(const std::string& out_dir, const std::string& entry);
std::string result_path(const std::string& out_dir, const std::string& entry);

// Reads every sidecar of `manifest`'s entries in `out_dir` and writes
// summary.csv and summary.json there, atomically, under the summary lock.
// Entries whose indices are in `running` are listed pending whatever their
// sidecars say: a run that starts them writes that first, so a run killed
// before its end (SIGKILL writes nothing after) leaves a summary that never
// vouches for a plan file it was replacing. So is an entry whose sidecar
// was made for other inputs than it has now (input_fingerprint): an
// interrupted run that never reached it, or another shard's entry, is not
// reported with its old plan as current.
BatchSummary rebuild_summary(const Manifest& manifest, const std::string& out_dir,
                             const std::vector<std::size_t>& running = {});

std::string summary_csv(const BatchSummary& summary);
std::string summary_json(const BatchSummary& summary);

}  // namespace autohaap
