#include "autohaap/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>

#include "autohaap/error.hpp"

namespace autohaap {
namespace {

std::string os_reason() { return std::strerror(errno); }

[[noreturn]] void fail_write(const std::string& path, const std::string& what) {
  throw InputError(path, "", what, "a writable path");
}

[[noreturn]] void fail_read(const std::string& path, const std::string& what) {
  throw InputError(path, "", what, "a readable file");
}

// Removes the temporary file unless the rename consumed it, so a failed write
// leaves the directory as it was.
class TemporaryFile {
 public:
  TemporaryFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // close() reports deferred write errors (NFS reports quota errors here), so
  // its result matters and it is called explicitly rather than left to the
  // destructor.
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void commit() { committed_ = true; }

 private:
  std::string path_;
  int fd_;
  bool committed_ = false;
};

// What every temporary of `base` begins with: ".<base>.tmp.", then
// "<pid>.<n>". A file name holds 255 bytes: of a longer base only the
// first 218 are kept (1 + 218 + 5 + 10 + 1 + 20 = 255), so a legal output
// name of 241-255 bytes still has a temporary beside it.
std::string temporary_prefix(const std::string& base) {
  constexpr std::size_t kNameMax = 255, kTail = 5 + 10 + 1 + 20;
  return "." + base.substr(0, kNameMax - 1 - kTail) + ".tmp.";
}

// A name no other writer uses: the process id separates processes, the
// counter separates threads and calls, and O_EXCL settles collisions between
// hosts sharing a file system.
TemporaryFile create_temporary(const std::string& path, const std::filesystem::path& dir,
                               const std::string& base) {
  static std::atomic<unsigned long> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = temporary_prefix(base) + std::to_string(::getpid()) + "." + std::to_string(counter++);
    std::string tmp = (dir / name).string();
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return TemporaryFile(tmp, fd);
    if (errno != EEXIST)
      fail_write(path, "cannot create a temporary file in '" + dir.string() + "': " + os_reason());
  }
  fail_write(path, "cannot find a free temporary file name in '" + dir.string() + "'");
}

void write_all(const std::string& path, const TemporaryFile& tmp, std::string_view contents) {
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(tmp.fd(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_write(path, "cannot write '" + tmp.path() + "': " + os_reason());
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// Makes the rename itself durable. File systems that cannot sync a directory
// answer EINVAL; the file is in place then, only less durable, so that is not
// an error.
void sync_directory(const std::string& path, const std::filesystem::path& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // e.g. a write-only directory: nothing more we can do
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL && err != ENOTSUP) {
    errno = err;
    fail_write(path, "cannot sync directory '" + dir.string() + "': " + os_reason());
  }
}

// The folder the file `path` names is written in and its base name, a
// symbolic link followed to the file it points to (the new file replaces
// that one, and the link stays); InputError for a name that cannot be a
// file, a link that cannot be followed, or a device, pipe or socket, which
// a write by rename would replace with a file.
std::pair<std::filesystem::path, std::string> target_of(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) fail_write(path, "an empty file name");
  fs::path target(path);
  std::error_code ec;
  const char* not_a_file =
      "not a regular file (a device, pipe or socket): an output replaces a file (a command that prints its output "
      "writes to standard output without one)";
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    // What the link leads to first: /dev/stdout in a pipe leads to a pipe,
    // which has no path to follow.
    const fs::file_status pointed = fs::status(target, ec);
    if (fs::exists(pointed) && !fs::is_regular_file(pointed) && !fs::is_directory(pointed))
      fail_write(path, not_a_file);
    target = fs::weakly_canonical(target, ec);
    if (ec) fail_write(path, "a symbolic link that cannot be followed: " + ec.message());
  }
  const fs::file_status status = fs::status(target, ec);
  if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status)) fail_write(path, not_a_file);
  // A rename replaces a file its permissions forbid writing: such a file,
  // or one without any write permission (write-protected, as rm treats it,
  // whoever runs), is kept.
  if (fs::is_regular_file(status) &&
      ((status.permissions() & (fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write)) ==
           fs::perms::none ||
       ::access(target.c_str(), W_OK) != 0))
    fail_write(path, "a write-protected file (its permissions forbid writing it; the output would replace it)");
  const std::string base = target.filename().string();
  if (base.empty() || base == "." || base == "..") fail_write(path, "a directory name, not a file name");
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  return {dir, base};
}

}  // namespace

void check_writable(const std::string& path) {
  const auto [dir, base] = target_of(path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail_write(path, "a directory, not a file name");
  // What write_file_atomically does first; the file is removed again.
  create_temporary(path, dir, base);
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  const auto [dir, base] = target_of(path);
  TemporaryFile tmp = create_temporary(path, dir, base);

  // Replacing a file should not change who may read it.
  struct stat old_stat;
  if (::stat((dir / base).c_str(), &old_stat) == 0 && S_ISREG(old_stat.st_mode))
    ::fchmod(tmp.fd(), old_stat.st_mode & 07777);

  write_all(path, tmp, contents);
  if (::fsync(tmp.fd()) != 0) fail_write(path, "cannot sync '" + tmp.path() + "': " + os_reason());
  if (tmp.close() != 0) fail_write(path, "cannot close '" + tmp.path() + "': " + os_reason());
  if (::rename(tmp.path().c_str(), (dir / base).c_str()) != 0)
    fail_write(path, "cannot replace the file: " + os_reason());
  tmp.commit();
  sync_directory(path, dir);
}

int remove_abandoned_temporaries(const std::string& path, double idle_seconds) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = temporary_prefix(target.filename().string());
  // "<pid>.<n>": digits, a dot, digits (create_temporary's names).
  auto is_tail = [](const std::string& tail) {
    const std::size_t dot = tail.find('.');
    auto digits = [](std::string_view t) {
      return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    return dot != std::string::npos && digits(std::string_view(tail).substr(0, dot)) &&
           digits(std::string_view(tail).substr(dot + 1));
  };
  int removed = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !is_tail(name.substr(prefix.size()))) continue;
    std::error_code e;
    if (it->is_symlink(e) || !it->is_regular_file(e)) continue;
    const auto written = fs::last_write_time(it->path(), e);
    if (e || std::chrono::duration<double>(now - written).count() < idle_seconds) continue;
    if (fs::remove(it->path(), e)) ++removed;
  }
  return removed;
}

std::string lowercase_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

std::string read_file(const std::string& path) {
  if (path.empty()) fail_read(path, "an empty file name");
  // Non-blocking, so that opening a named pipe with no writer does not
  // wait; only regular files are read (a device or pipe never ends:
  // /dev/zero would fill memory).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail_read(path, "cannot open: " + os_reason());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat st;
  if (::fstat(fd, &st) != 0) fail_read(path, "cannot stat: " + os_reason());
  if (S_ISDIR(st.st_mode)) fail_read(path, "a directory");
  if (!S_ISREG(st.st_mode)) fail_read(path, "not a regular file (a device, pipe or socket)");

  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_read(path, "cannot read: " + os_reason());
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace autohaap
