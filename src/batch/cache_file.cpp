#include "autohaap/batch/cache_file.hpp"

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <filesystem>
#include <sstream>
#include <string_view>

#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/bounded_binary_archive.hpp"
#include "autohaap/io/file_lock.hpp"
#include "autohaap/io/search_serialization.hpp"

namespace autohaap {
namespace {

constexpr const char* kMagic = "autohaap-latency-cache";
// Bump when CacheDelta's layout or the header changes. 2: cereal's plain
// binary layout, read with every length checked (io/bounded_binary_archive.hpp).
// 3: stage keys name the vpp and the pipeline's other end (interleaving).
constexpr std::uint32_t kFormatVersion = 3;

struct Header {
  std::string magic;
  std::uint32_t format_version = 0;
  std::string tool_version;
  std::string problem_key;
  std::uint64_t payload_bytes = 0;
  std::uint64_t payload_checksum = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(magic, format_version, tool_version, problem_key, payload_bytes, payload_checksum);
  }
};

std::size_t count(const CacheDelta& d) { return d.layers.size() + d.stages.size(); }

}  // namespace

std::string cache_file_path(const std::string& cache_dir, const std::string& problem_key) {
  return (std::filesystem::path(cache_dir) / (problem_key + ".bin")).string();
}

std::string encode_cache_file(const std::string& problem_key, const CacheDelta& entries) {
  std::ostringstream payload;
  {
    cereal::BinaryOutputArchive ar(payload);
    ar(entries);
  }
  const std::string body = payload.str();
  Header h{kMagic, kFormatVersion, AUTOHAAP_VERSION, problem_key, body.size(), fnv1a64(body)};
  std::ostringstream out;
  {
    cereal::BinaryOutputArchive ar(out);
    ar(h);
  }
  return out.str() + body;
}

CacheDelta decode_cache_file(const std::string& bytes, const std::string& problem_key) {
  // Each length in the header and the payload is checked against the bytes
  // left before anything is allocated for it: a damaged length is refused
  // at once, never a request for gigabytes.
  BoundedBinaryInputArchive header(bytes);
  Header h;
  try {
    header(h);
  } catch (const std::exception& e) {
    throw CacheFileError(std::string("not a latency cache (unreadable header: ") + e.what() + ")");
  }
  if (h.magic != kMagic) throw CacheFileError("not a latency cache (wrong magic)");
  if (h.format_version != kFormatVersion)
    throw CacheFileError("format version " + std::to_string(h.format_version) + ", this build reads " +
                         std::to_string(kFormatVersion));
  if (h.tool_version != AUTOHAAP_VERSION)
    throw CacheFileError("written by autohaap " + h.tool_version + ", this is " + AUTOHAAP_VERSION);
  if (h.problem_key != problem_key) throw CacheFileError("built for problem " + h.problem_key + ", not " + problem_key);
  if (header.remaining() != h.payload_bytes)
    throw CacheFileError("payload is " + std::to_string(header.remaining()) + " bytes, header says " +
                         std::to_string(h.payload_bytes) + " (truncated or appended to)");
  const std::string_view body(bytes.data() + header.position(), header.remaining());
  if (fnv1a64(body) != h.payload_checksum) throw CacheFileError("checksum mismatch (damaged)");
  CacheDelta entries;
  try {
    BoundedBinaryInputArchive payload(body);
    payload(entries);
  } catch (const std::exception& e) {
    throw CacheFileError(std::string("payload cannot be decoded (") + e.what() + ")");
  }
  return entries;
}

CacheLoadReport load_cache_file(const std::string& path, const std::string& problem_key, LatencyCache& cache) {
  CacheLoadReport report;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return report;
  std::string bytes;
  {
    FileLock lock(path + ".lock", FileLock::Mode::shared);
    bytes = read_file(path);
  }
  report.found = true;
  try {
    const CacheDelta entries = decode_cache_file(bytes, problem_key);
    cache.import(entries, /*from_peer=*/false);
    report.entries = count(entries);
  } catch (const CacheFileError& e) {
    report.warning = "latency cache " + path + ": " + e.what() + "; not used, it will be rebuilt";
  }
  return report;
}

std::size_t save_cache_file(const std::string& path, const std::string& problem_key, LatencyCache& cache) {
  FileLock lock(path + ".lock", FileLock::Mode::exclusive);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    // Another task may have saved since this one loaded: keep its entries.
    try {
      cache.import(decode_cache_file(read_file(path), problem_key), /*from_peer=*/false);
    } catch (const CacheFileError&) {
      // A rejected file is replaced, as the load already warned.
    }
  }
  const CacheDelta all = cache.snapshot();
  write_file_atomically(path, encode_cache_file(problem_key, all));
  return count(all);
}

}  // namespace autohaap
