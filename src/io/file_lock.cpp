#include "autohaap/io/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "autohaap/error.hpp"

namespace autohaap {

FileLock::FileLock(const std::string& lock_path, Mode mode) : path_(lock_path) {
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw InputError(lock_path, "", std::strerror(errno), "a lock file that can be created and opened");
  const int operation = mode == Mode::shared ? LOCK_SH : LOCK_EX;
  // A signal (e.g. Slurm's SIGTERM before a kill) interrupts the wait; keep
  // waiting — the caller checks its cancel flag once it holds the lock.
  int rc;
  do {
    rc = ::flock(fd_, operation);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd_);
    throw InputError(lock_path, "", reason, "a file that can be locked (flock)");
  }
}

FileLock::~FileLock() {
  // Closing the descriptor releases the lock.
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace autohaap
