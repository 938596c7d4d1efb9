// EntrySelection: which entries of a manifest one process runs — all of
// them, one index (a Slurm job-array task id), or shard I of N (entries
// whose index is I modulo N: round robin rather than blocks, so shards get
// a similar mix of small and large problems, as manifests list models by
// size). Indices are 0-based, as `sbatch --array=0-<count-1>` makes them.
//
// Out-of-range indices and malformed shards are InputError (exit 2) naming
// the flag and the allowed range. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace autohaap {

struct EntrySelection {
  enum class Kind { all, index, shard };
  Kind kind = Kind::all;
  long long index = 0;   // index, or the shard number I
  long long shards = 1;  // N

  static EntrySelection all() { return {}; }
  static EntrySelection one(long long i) { return {Kind::index, i, 1}; }
  static EntrySelection shard(long long i, long long n) { return {Kind::shard, i, n}; }
};

// "I/N" with integers 0 <= I < N.
EntrySelection parse_shard(const std::string& text);

// The selected indices of a manifest with `count` entries, ascending. A
// shard may be empty (more shards than entries); an index must exist.
std::vector<std::size_t> select_entries(std::size_t count, const EntrySelection& selection);

// "all", "index 3", "shard 1/4": for logs.
std::string describe(const EntrySelection& selection);

}  // namespace autohaap
