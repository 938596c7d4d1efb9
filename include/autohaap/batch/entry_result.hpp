// EntryResult: what one batch entry's last run gave — the row of the batch
// summary, and the sidecar file DIR/results/<entry>.json beside the entry's
// plan DIR/<entry>.json. The sidecar carries the input fingerprint the
// result was computed from, which is how a later run knows it may skip the
// entry (batch/fingerprint.hpp).
//
// Statuses:
//   found       a feasible plan was written (its headline numbers are here)
//   infeasible  the search proved no plan fits; `error` gives the reason
//   failed      the entry could not be planned (bad input discovered late,
//               an internal error, a time limit with no plan); `error` says
//               why. Retried by the next run whatever its fingerprint.
//   skipped     this run found the inputs unchanged and kept the previous
//               result; `outcome` says what that was (found or infeasible)
//   pending     no result yet (summary rows of entries not run so far)
//
// Each sidecar is one JSON object (cereal). Reading a missing, damaged or
// foreign file gives nothing rather than an error: the entry is then simply
// run again, and the reason is passed on to be reported (a summary row, a
// warning). Cost: one small file per call. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace autohaap {

enum class EntryStatus { found, infeasible, failed, skipped, pending };

const char* to_string(EntryStatus status);
std::optional<EntryStatus> parse_entry_status(const std::string& name);

struct EntryResult {
  std::string name;
  std::string model;
  std::string cluster;
  std::string training;
  EntryStatus status = EntryStatus::pending;   // what the last run did
  EntryStatus outcome = EntryStatus::pending;  // what the search for these inputs gave
  std::string input_fingerprint;
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  int gpus = 0;
  int stages = 0;
  double wall_s = 0;          // the search's wall time (on skip: the skipped run's)
  std::string error;          // failed: the error; infeasible: the reason; found: a note
  std::string plan_file;      // relative to the output folder; empty without a plan
  std::int64_t cache_hits = 0;
  std::int64_t cache_misses = 0;
  std::string tool_version;   // AUTOHAAP_VERSION of the run that searched
};

std::string entry_result_to_json(const EntryResult& result);
// Nothing when `text` is not a result document (damaged, foreign, nested
// deeper than JSON inputs may be); `why`, when given, then says why.
std::optional<EntryResult> entry_result_from_json(const std::string& text, std::string* why = nullptr);
// Nothing when the file is missing or not a result document; for a file
// that is there but refused, `why` (when given) says why.
std::optional<EntryResult> read_entry_result(const std::string& path, std::string* why = nullptr);

}  // namespace autohaap
