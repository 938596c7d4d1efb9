// FileLock: an advisory lock (flock) on a lock file, held for the lifetime
// of the object, so processes that share an output directory — the tasks of
// a Slurm job array, or two runs started by hand — take turns on a
// read-merge-write of a shared file (the batch summary, a persistent latency
// cache) instead of losing each other's updates.
//
// The lock lives on a separate file (`<target>.lock`), never on the target
// itself: targets are replaced by rename (io/atomic_file.hpp), and a lock on
// a file that has just been renamed away protects nothing. The lock file is
// created on first use and never removed, because removing it would let a
// late arrival lock a fresh inode while an earlier holder still holds the
// old one.
//
// Shared locks admit any number of readers; an exclusive lock waits for all
// of them. Linux implements flock on NFS (since 2.6.12) with byte-range
// locks, so the lock also holds across the nodes of a cluster. Failure to
// create or lock the file is an InputError naming it. Blocking: the
// constructor waits as long as another holder keeps the lock. Not
// reentrant: one process must not take the same lock twice.
#pragma once

#include <string>

namespace autohaap {

class FileLock {
 public:
  enum class Mode { shared, exclusive };

  // Opens (creating if needed) `lock_path` and waits for the lock.
  FileLock(const std::string& lock_path, Mode mode);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace autohaap
