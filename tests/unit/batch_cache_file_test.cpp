// The persistent latency cache: entries survive a save and a load; a file
// for another problem, another format, truncated, damaged or not a cache
// at all is rejected with a reason and replaced, never trusted; and
// concurrent saves of different entries keep all of them.
#include "autohaap/batch/cache_file.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "batch_fixtures.hpp"

namespace autohaap {
namespace {

using BatchCacheFile = testing::BatchFolder;

LayerKey layer_key(int tp) {
  LayerKey k;
  k.tp = tp;
  return k;
}

// A cache holding layer entries for tp = first .. first + n - 1, each with
// forward_s = tp.
void fill(LatencyCache& cache, int first, int n) {
  for (int tp = first; tp < first + n; ++tp)
    cache.layer(layer_key(tp), [tp] { return LayerEntry{double(tp), 2.0 * tp, 0, 0, 0}; });
}

TEST_F(BatchCacheFile, RoundTripsEntriesAndCountsTheirUseAsHits) {
  const auto file = cache_file_path(dir_.string(), "0123456789abcdef");
  EXPECT_EQ(file, path("0123456789abcdef.bin"));
  LatencyCache written;
  fill(written, 1, 5);
  StageKey sk;
  sk.layer_end = 3;
  written.stage(sk, [] { return StageEntry{1, 2, 3, 4, 5, 6, 7}; });
  EXPECT_EQ(save_cache_file(file, "0123456789abcdef", written), 6u);

  LatencyCache read;
  const CacheLoadReport r = load_cache_file(file, "0123456789abcdef", read);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.entries, 6u);
  EXPECT_TRUE(r.warning.empty()) << r.warning;
  int computed = 0;
  const LayerEntry e = read.layer(layer_key(3), [&] {
    ++computed;
    return LayerEntry{};
  });
  EXPECT_EQ(computed, 0);
  EXPECT_DOUBLE_EQ(e.backward_s, 6.0);
  EXPECT_DOUBLE_EQ(read.stage(sk, [] { return StageEntry{}; }).memory_bytes, 6.0);
  EXPECT_EQ(read.counters().hits, 2);
  EXPECT_EQ(read.counters().misses, 0);
}

TEST_F(BatchCacheFile, MissingFileIsNoWarning) {
  LatencyCache cache;
  const auto r = load_cache_file(path("none.bin"), "k", cache);
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(r.warning.empty());
}

TEST_F(BatchCacheFile, RejectsWhatItCannotTrust) {
  LatencyCache source;
  fill(source, 1, 4);
  const std::string good = encode_cache_file("key-a", source.snapshot());
  EXPECT_EQ(decode_cache_file(good, "key-a").layers.size(), 4u);

  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x40;
  std::string foreign_version = good;
  const auto at = foreign_version.find("autohaap-latency-cache");
  ASSERT_NE(at, std::string::npos);

  struct Case {
    std::string name, bytes, key, reason;
  };
  const std::vector<Case> cases = {
      {"another problem", good, "key-b", "built for problem key-a"},
      {"truncated", good.substr(0, good.size() - 5), "key-a", "truncated"},
      {"appended to", good + "xx", "key-a", "truncated or appended"},
      {"damaged", flipped, "key-a", "checksum"},
      {"not a cache", "hello, world", "key-a", "not a latency cache"},
      {"empty", "", "key-a", "not a latency cache"},
  };
  for (const auto& c : cases) {
    try {
      decode_cache_file(c.bytes, c.key);
      ADD_FAILURE() << c.name << " was accepted";
    } catch (const CacheFileError& e) {
      EXPECT_NE(std::string(e.what()).find(c.reason), std::string::npos) << c.name << ": " << e.what();
    }
  }

  // Loading a damaged file warns, imports nothing, and a save replaces it.
  const auto file = path("c.bin");
  write_file_atomically(file, flipped);
  LatencyCache cache;
  const auto r = load_cache_file(file, "key-a", cache);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.entries, 0u);
  EXPECT_NE(r.warning.find("rebuilt"), std::string::npos) << r.warning;
  fill(cache, 10, 2);
  EXPECT_EQ(save_cache_file(file, "key-a", cache), 2u);
  EXPECT_EQ(decode_cache_file(read_file(file), "key-a").layers.size(), 2u);
}

TEST_F(BatchCacheFile, AFlippedLengthByteIsRefusedAtOnce) {
  // Once one flipped byte in a string length made the reader allocate
  // gigabytes before any check. Every length is now checked against the
  // bytes left: in the header (the magic's length, the first 8 bytes) and
  // in a payload made to match its checksum.
  LatencyCache source;
  fill(source, 1, 4);
  const std::string good = encode_cache_file("key-a", source.snapshot());
  auto refusal = [](const std::string& bytes) {
    const auto start = std::chrono::steady_clock::now();
    std::string message;
    try {
      decode_cache_file(bytes, "key-a");
      ADD_FAILURE() << "accepted";
    } catch (const CacheFileError& e) {
      message = e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
    return message;
  };

  std::string header = good;
  header[6] ^= 0x40;  // the magic's length: 22 + 2^54
  const std::string h = refusal(header);
  EXPECT_EQ(h.rfind("not a latency cache (unreadable header: a string or list of 18014398509482006 elements"), 0u) << h;
  EXPECT_NE(h.find("bytes left"), std::string::npos) << h;

  // The header: magic, format version, tool version, problem key (each
  // string a 64-bit length and its bytes), payload size, checksum. The
  // payload's first field is the number of layer entries.
  std::string payload = good;
  const std::size_t checksum_at = 8 + 22 + 4 + 8 + std::strlen(AUTOHAAP_VERSION) + 8 + 5 + 8;
  const std::size_t first = checksum_at + 8;
  const std::uint64_t claimed = std::uint64_t{1} << 40;
  std::memcpy(payload.data() + first, &claimed, sizeof claimed);
  const std::uint64_t sum = fnv1a64(std::string_view(payload).substr(first));
  std::memcpy(payload.data() + checksum_at, &sum, sizeof sum);
  const std::string p = refusal(payload);
  EXPECT_EQ(p.rfind("payload cannot be decoded (a string or list of 1099511627776 elements", 0), 0u) << p;
}

TEST_F(BatchCacheFile, ConcurrentSavesKeepEveryonesEntries) {
  // Each writer opens the lock file itself, as separate processes would;
  // flock excludes separate open file descriptions, also within a process.
  const auto file = path("shared.bin");
  constexpr int kWriters = 6, kPerWriter = 20;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      LatencyCache mine;
      fill(mine, 1 + w * kPerWriter, kPerWriter);
      save_cache_file(file, "k", mine);
    });
  }
  for (auto& t : writers) t.join();
  const CacheDelta all = decode_cache_file(read_file(file), "k");
  EXPECT_EQ(all.layers.size(), std::size_t(kWriters * kPerWriter));
}

}  // namespace
}  // namespace autohaap
