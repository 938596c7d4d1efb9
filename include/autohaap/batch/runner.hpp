// Batch runner: runs the selected entries of a manifest one after another,
// each one search (search/searcher.hpp) with the manifest's options, and
// leaves in the output folder DIR:
//
//   DIR/<entry>.json           the best plan (plan_io's schema), written
//                              atomically; removed when the entry turns out
//                              infeasible, left as it was when it fails
//   DIR/results/<entry>.json   the entry's result and input fingerprint
//   DIR/summary.csv, .json     every entry of the manifest (batch/summary.hpp)
//   <cache dir>/<problem>.bin  the persistent latency cache (batch/cache_file.hpp);
//                              cache dir defaults to DIR/cache
//
// Per entry, in order: if its sidecar holds the same input fingerprint and a
// found (with its plan file present) or infeasible outcome, it is skipped;
// otherwise the problem's latency cache is loaded, the search runs, the plan
// and then the sidecar are written (a kill between the two only costs a
// re-run), and the cache is merged back. Any exception while planning an
// entry makes it `failed`, with the message, and the next entry runs. A
// search with no feasible plan is a result (`infeasible` + reason). A time
// limit with a plan is `found` with a note; without one, `failed`.
//
// Cancellation (SIGTERM from scancel or a Slurm time limit, via `cancel`):
// the running search stops, its entry is not recorded (it runs again next
// time), no further entry starts, and the summary is still rebuilt.
//
// Exit codes (BatchReport::exit_code): 0 when every selected entry is
// found, infeasible or skipped — infeasible is an answer, not an error;
// 1 when any entry failed; 4 when interrupted. Invalid manifests and
// selections never get here: they are InputError (exit 2) before any work.
//
// Concurrency: several processes may run disjoint selections of the same
// manifest into the same DIR at once (a job array); the shared files are
// protected by file locks. Within a process, one entry at a time; each
// search uses the configured threads. Cost: the sum of the searches, plus
// file I/O linear in the number of entries for the summary.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/batch/entry_result.hpp"
#include "autohaap/batch/manifest.hpp"
#include "autohaap/batch/summary.hpp"

namespace autohaap {

struct BatchRunOptions {
  std::string out_dir;                        // created if missing
  std::string cache_dir;                      // empty: <out_dir>/cache
  int threads = -1;                           // -1: the manifest's
  const std::atomic<bool>* cancel = nullptr;  // set by a signal handler
  // After each entry that was run or skipped (position counts from 1).
  std::function<void(const EntryResult&, std::size_t position, std::size_t selected)> on_entry;
  std::function<void(const std::string&)> on_warning;  // e.g. a rejected cache file
};

struct BatchReport {
  std::vector<EntryResult> results;  // entries run or skipped, in order
  bool interrupted = false;
  BatchSummary summary;              // the whole manifest, as rebuilt at the end

  std::size_t count(EntryStatus status) const;
  int exit_code() const;
};

BatchReport run_batch(const Manifest& manifest, const std::vector<std::size_t>& selected,
                      const BatchRunOptions& options);

// One entry, as run_batch does it, without rebuilding the summary. Nothing
// when cancelled before it finished (nothing is written then).
std::optional<EntryResult> run_entry(const Manifest& manifest, const BatchEntry& entry,
                                     const BatchRunOptions& options);

}  // namespace autohaap
