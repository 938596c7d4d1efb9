// Atomic file writes: the target is replaced whole, nothing is left beside
// it, permissions survive, concurrent writers leave one complete version,
// and every failure is an InputError naming the path and the reason.
#include "autohaap/io/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "autohaap/error.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("autohaap_atomic_file_" + std::string(info->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    return names;
  }

  fs::path dir_;
};

TEST_F(AtomicFile, ReplacesContentAndLeavesNoTemporaryFile) {
  const std::string path = (dir_ / "plan.yaml").string();
  write_file_atomically(path, "first version, longer than the second\n");
  write_file_atomically(path, "second\n");
  EXPECT_EQ(read_file(path), "second\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"plan.yaml"});
}

// A writer killed between creating its temporary and renaming it leaves
// the temporary (a checkpoint's: tens of MB a kill). Those idle past the
// limit go; a fresh one (a live write), the file itself and other names
// stay.
TEST_F(AtomicFile, AbandonedTemporariesAreRemovedOnceIdle) {
  const std::string path = (dir_ / "ck.bin").string();
  write_file_atomically(path, "checkpoint\n");
  auto touch = [&](const std::string& name, double age_s) {
    std::ofstream(dir_ / name) << "partial";
    fs::last_write_time(dir_ / name, fs::file_time_type::clock::now() -
                                         std::chrono::duration_cast<fs::file_time_type::duration>(
                                             std::chrono::duration<double>(age_s)));
  };
  touch(".ck.bin.tmp.4242.3", 3600);    // killed an hour ago
  touch(".ck.bin.tmp.4243.0", 700);     // killed 11 minutes ago
  touch(".ck.bin.tmp.4244.1", 5);       // being written now
  touch(".ck.bin.tmp.notapid.1", 3600); // not a name the writer makes
  touch(".other.bin.tmp.4242.3", 3600); // another file's
  EXPECT_EQ(remove_abandoned_temporaries(path), 2);
  std::vector<std::string> left = entries();
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".ck.bin.tmp.4244.1", ".ck.bin.tmp.notapid.1", ".other.bin.tmp.4242.3",
                                            "ck.bin"}));
  EXPECT_EQ(read_file(path), "checkpoint\n");
  EXPECT_EQ(remove_abandoned_temporaries((dir_ / "missing-dir" / "x.bin").string()), 0);
}

// A file name holds 255 bytes; the temporary beside a name of 241-255
// had held more (".NAME.tmp.PID.N") and every write of such a name failed.
TEST_F(AtomicFile, ANameOfTheLongestLegalLengthIsWritten) {
  const std::string name = std::string(250, 'p') + ".json";
  const std::string path = (dir_ / name).string();
  write_file_atomically(path, "{}\n");
  EXPECT_EQ(read_file(path), "{}\n");
  EXPECT_EQ(entries(), std::vector<std::string>{name});
  // Its abandoned temporaries are still found by the same prefix.
  const std::string temporary = "." + name.substr(0, 218) + ".tmp.4242.3";
  std::ofstream(dir_ / temporary) << "partial";
  fs::last_write_time(dir_ / temporary, fs::file_time_type::clock::now() - std::chrono::hours(1));
  EXPECT_EQ(remove_abandoned_temporaries(path), 1);
}

TEST_F(AtomicFile, WritesEmptyAndBinaryContents) {
  const std::string path = (dir_ / "blob").string();
  write_file_atomically(path, "");
  EXPECT_EQ(read_file(path), "");
  const std::string bytes("a\0b\xff", 4);
  write_file_atomically(path, bytes);
  EXPECT_EQ(read_file(path), bytes);
}

TEST_F(AtomicFile, KeepsThePermissionsOfTheFileItReplaces) {
  const std::string path = (dir_ / "cache.bin").string();
  write_file_atomically(path, "old");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_file_atomically(path, "new");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(AtomicFile, ConcurrentWritersLeaveOneCompleteVersion) {
  const std::string path = (dir_ / "shared.txt").string();
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) write_file_atomically(path, std::string(1000, static_cast<char>('a' + t)));
    });
  for (auto& w : writers) w.join();
  const std::string text = read_file(path);
  ASSERT_EQ(text.size(), 1000u);
  EXPECT_EQ(text, std::string(1000, text.front()));
  EXPECT_EQ(entries(), std::vector<std::string>{"shared.txt"});
}

TEST_F(AtomicFile, MissingDirectoryIsAClearError) {
  const std::string path = (dir_ / "no-such-dir" / "plan.json").string();
  try {
    write_file_atomically(path, "x");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.allowed(), "a writable path");
    EXPECT_NE(e.value().find("No such file or directory"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFile, ADirectoryCannotBeReplaced) {
  fs::create_directories(dir_ / "out");
  EXPECT_THROW(write_file_atomically((dir_ / "out").string(), "x"), InputError);
  EXPECT_THROW(write_file_atomically((dir_ / "out").string() + "/", "x"), InputError);
  EXPECT_THROW(write_file_atomically("", "x"), InputError);
  // The failed rename took its temporary file with it.
  EXPECT_EQ(entries(), std::vector<std::string>{"out"});
}

TEST_F(AtomicFile, AFileInPlaceOfTheDirectoryIsAClearError) {
  write_file_atomically((dir_ / "plans").string(), "not a directory");
  try {
    write_file_atomically((dir_ / "plans" / "plan.yaml").string(), "x");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.value().find("Not a directory"), std::string::npos) << e.what();
  }
}

TEST_F(AtomicFile, UnwritableDirectoryIsAClearError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write anywhere";
  fs::create_directories(dir_ / "locked");
  fs::permissions(dir_ / "locked", fs::perms::owner_read | fs::perms::owner_exec);
  const std::string path = (dir_ / "locked" / "plan.yaml").string();
  try {
    write_file_atomically(path, "x");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.value().find("Permission denied"), std::string::npos) << e.what();
  }
  fs::permissions(dir_ / "locked", fs::perms::owner_all);
}

TEST_F(AtomicFile, WriteProtectedFileIsKept) {
  // A rename replaced a file of mode 0444 (the inode changed, the mode was
  // kept): whoever runs, a file without any write permission is kept.
  const fs::path target = dir_ / "plan.json";
  std::ofstream(target) << "kept";
  fs::permissions(target, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  for (const bool preflight : {true, false}) {
    try {
      if (preflight)
        check_writable(target.string());
      else
        write_file_atomically(target.string(), "replaced");
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), target.string());
      EXPECT_NE(e.value().find("write-protected"), std::string::npos) << e.what();
    }
  }
  std::ifstream in(target);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "kept");
  fs::permissions(target, fs::perms::owner_all);
}

TEST_F(AtomicFile, CheckWritableSaysWhatAWriteWouldAndTouchesNothing) {
  // For outputs written after long work: the same error before it starts.
  check_writable((dir_ / "plan.json").string());
  EXPECT_TRUE(entries().empty());  // neither the file nor a temporary one
  const std::string missing = (dir_ / "no-such-dir" / "plan.json").string();
  try {
    check_writable(missing);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), missing);
    EXPECT_EQ(e.allowed(), "a writable path");
    EXPECT_NE(e.value().find("No such file or directory"), std::string::npos) << e.what();
  }
  fs::create_directories(dir_ / "out");
  try {
    check_writable((dir_ / "out").string());
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.value(), "a directory, not a file name");
  }
  EXPECT_THROW(check_writable(""), InputError);
  write_file_atomically((dir_ / "kept").string(), "old");
  check_writable((dir_ / "kept").string());
  std::ifstream in(dir_ / "kept");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
}

TEST_F(AtomicFile, ReadingMissingFilesAndDirectoriesFailsClearly) {
  const std::string missing = (dir_ / "absent.yaml").string();
  try {
    read_file(missing);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), missing);
    EXPECT_NE(e.value().find("No such file or directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_file(dir_.string()), InputError);
  EXPECT_THROW(read_file(""), InputError);
}

TEST_F(AtomicFile, OnlyRegularFilesAreReadAndReplaced) {
  // A named pipe with no writer: opening it must not wait for one, and
  // neither it nor an endless device (/dev/zero) is read.
  const std::string pipe = (dir_ / "plan.json").string();
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  for (const std::string& path : {pipe, std::string("/dev/zero")}) {
    try {
      read_file(path);
      FAIL() << path << ": no error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.value(), "not a regular file (a device, pipe or socket)") << e.what();
    }
  }
  // An output never replaces a device or pipe with a file (a plan written
  // to /dev/null as root would otherwise turn it into one).
  try {
    write_file_atomically(pipe, "plan\n");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.value().find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(pipe));
  EXPECT_THROW(check_writable(pipe), InputError);
  // /dev/stdout in a shell pipe: a link to a pipe with no path of its own
  // (/proc/self/fd/N -> "pipe:[...]"), once "a symbolic link that cannot be
  // followed", is named for what it is.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string unnamed = "/proc/self/fd/" + std::to_string(fds[1]);
  try {
    write_file_atomically(unnamed, "plan\n");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.value().find("not a regular file"), std::string::npos) << e.what();
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(AtomicFile, WritingThroughASymbolicLinkReplacesTheFileItPointsTo) {
  fs::create_directories(dir_ / "plans");
  const fs::path file = dir_ / "plans" / "latest.json";
  const fs::path link = dir_ / "plan.json";
  write_file_atomically(file.string(), "old\n");
  fs::create_symlink(fs::path("plans") / "latest.json", link);
  check_writable(link.string());
  write_file_atomically(link.string(), "new\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(file.string()), "new\n");
  // A link that leads nowhere it can follow is refused by name.
  fs::create_symlink("loop", dir_ / "loop");
  EXPECT_THROW(write_file_atomically((dir_ / "loop").string(), "x"), InputError);
}

}  // namespace
}  // namespace autohaap
