// FileLock: an exclusive lock serializes read-modify-write cycles of
// writers that each open the lock file themselves (as separate processes
// do), shared locks coexist, and a lock file that cannot be created is an
// InputError naming it.
#include "autohaap/io/file_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "batch_fixtures.hpp"

namespace autohaap {
namespace {

using FileLockTest = testing::BatchFolder;

TEST_F(FileLockTest, ExclusiveLocksSerializeReadModifyWrite) {
  const auto counter = path("counter");
  write_file_atomically(counter, "0");
  constexpr int kThreads = 4, kIncrements = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        FileLock lock(counter + ".lock", FileLock::Mode::exclusive);
        const int value = std::stoi(read_file(counter));
        std::this_thread::yield();  // widen the window a lost update would need
        write_file_atomically(counter, std::to_string(value + 1));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(read_file(counter), std::to_string(kThreads * kIncrements));
}

TEST_F(FileLockTest, SharedLocksCoexistAndExcludeWriters) {
  const auto lock_path = path("x.lock");
  auto reader1 = std::make_unique<FileLock>(lock_path, FileLock::Mode::shared);
  auto reader2 = std::make_unique<FileLock>(lock_path, FileLock::Mode::shared);  // blocks if shared excluded shared
  std::atomic<bool> writer_in{false};
  std::thread writer([&] {
    FileLock w(lock_path, FileLock::Mode::exclusive);
    writer_in = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(writer_in.load());
  reader1.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(writer_in.load());  // one reader still holds it
  reader2.reset();
  writer.join();
  EXPECT_TRUE(writer_in.load());
}

TEST_F(FileLockTest, UncreatableLockFileIsAnInputError) {
  try {
    FileLock lock(path("no/such/folder/x.lock"), FileLock::Mode::exclusive);
    ADD_FAILURE() << "locked a file in a missing folder";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path("no/such/folder/x.lock"));
  }
}

}  // namespace
}  // namespace autohaap
