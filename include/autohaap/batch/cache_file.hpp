// Cache file: a LatencyCache kept on disk between runs, so a batch that
// re-plans a problem it has seen (new search options, a deleted plan, a
// failed or interrupted entry) does not recompute the latencies it already
// knows.
//
// One file per problem: <cache dir>/<problem fingerprint>.bin. Latency-cache
// keys do not name the model or devices (search/latency_cache.hpp), so
// entries of different problems must never meet in one table; the file name
// keeps them apart and the header says which problem the file is for.
//
// Format: a cereal binary header — magic, format version, tool version,
// problem fingerprint, payload size, FNV-1a checksum of the payload —
// followed by the payload, a cereal binary CacheDelta (this machine's byte
// order). A file that fails any check (another format or version, another
// problem, truncated, checksum mismatch, undecodable) is never trusted:
// loading reports why in `warning` and starts empty, and the next save
// replaces it. Every length in the file is checked against the file's size
// before anything is allocated for it (io/bounded_binary_archive.hpp), so a
// damaged length costs nothing but the refusal.
//
// Concurrency: tasks of a job array may load and save the same file at
// once. Loading holds a shared flock and saving an exclusive one on
// `<file>.lock` (io/file_lock.hpp); saving re-reads the file under the lock
// and merges it with the entries in memory before writing it atomically, so
// no task's entries are lost. Cost: load and save are linear in the entries
// (a save also reads the current file); the lock is held only for that.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "autohaap/search/latency_cache.hpp"

namespace autohaap {

// The file that holds the cache of the problem with this fingerprint.
std::string cache_file_path(const std::string& cache_dir, const std::string& problem_key);

struct CacheLoadReport {
  bool found = false;       // a file was there
  std::size_t entries = 0;  // entries imported
  std::string warning;      // non-empty: the file was rejected, and why
};

// Imports the entries of `path` into `cache` (hits on them count as plain
// hits). A missing file is no error; a rejected one sets `warning`.
CacheLoadReport load_cache_file(const std::string& path, const std::string& problem_key, LatencyCache& cache);

// Merges the file's current entries into `cache`, then writes all of the
// cache's entries back; returns how many. Call between searches (it takes a
// snapshot). Failures to write are InputError naming the path.
std::size_t save_cache_file(const std::string& path, const std::string& problem_key, LatencyCache& cache);

// The reason a file's contents were rejected.
class CacheFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The bytes of a cache file, and back (decode throws CacheFileError).
std::string encode_cache_file(const std::string& problem_key, const CacheDelta& entries);
CacheDelta decode_cache_file(const std::string& bytes, const std::string& problem_key);

}  // namespace autohaap
