// Fuzz target: the binary decoders of files a run leaves behind — the
// latency cache file (batch/cache_file.hpp) and the search checkpoint
// (dist/checkpoint.hpp; its decoder needs no MPI). The first byte picks the
// decoder and whether the rest is the whole file or only its payload:
//
//   0  cache file        1  cache payload, under a valid cache header
//   2  checkpoint file   3  checkpoint payload, under a valid header
//
// A whole file almost never passes the checksum; a payload under a header
// made for it reaches the archive itself, which must refuse any length or
// value it cannot hold. Whatever decodes must encode and decode again.
#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <cstring>
#include <sstream>

#include "autohaap/batch/cache_file.hpp"
#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/dist/checkpoint.hpp"
#include "autohaap/io/plan_serialization.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace autohaap;

constexpr const char* kProblemKey = "0123456789abcdef";

template <class T>
std::string payload_of(const T& value) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(value);
  }
  return out.str();
}

void put_u64(std::string& out, std::size_t at, std::uint64_t v) { std::memcpy(out.data() + at, &v, sizeof v); }

// A cache file around `payload`: the header of an empty cache with its last
// two fields, payload size and checksum, set for `payload`.
std::string cache_file_around(const std::string& payload) {
  const std::string empty = encode_cache_file(kProblemKey, CacheDelta{});
  std::string header = empty.substr(0, empty.size() - payload_of(CacheDelta{}).size());
  put_u64(header, header.size() - 16, payload.size());
  put_u64(header, header.size() - 8, fnv1a64(payload));
  return header + payload;
}

// A checkpoint around `payload`: magic, payload size, checksum.
std::string checkpoint_around(const std::string& payload) {
  std::string header = std::string("AHCKPT03") + std::string(16, '\0');
  put_u64(header, 8, payload.size());
  put_u64(header, 16, fnv1a64(payload));
  return header + payload;
}

// The headers made above must be the ones the encoders write, or the
// payload modes would test nothing: checked once, on a sample of each.
void check_headers() {
  CacheDelta delta;
  delta.layers.push_back({LayerKey{1, 2, 1, 4, 1, -1, 1, 0}, LayerEntry{0.5, 1.0, 1e9, 2e9, 3e8}});
  delta.stages.push_back({StageKey{}, StageEntry{0.1, 0.2, 0.01, 0.02, 0.03, 4e10, 8e10}});
  if (cache_file_around(payload_of(delta)) != encode_cache_file(kProblemKey, delta))
    fuzz::finding("the cache header made here is not the one encode_cache_file writes");
  dist::SearchCheckpoint checkpoint;
  checkpoint.inputs = "gpt3-125m on a100x8";
  checkpoint.chunk_end = {3, 7};
  checkpoint.chunk_done = {1, 0};
  checkpoint.top.resize(1);
  checkpoint.top[0].stages.resize(2);
  checkpoint.cache = delta;
  if (checkpoint_around(payload_of(checkpoint)) != dist::encode_checkpoint(checkpoint))
    fuzz::finding("the checkpoint header made here is not the one encode_checkpoint writes");
}

void decode_again(const std::string& bytes, bool cache) {
  try {
    if (cache)
      decode_cache_file(bytes, kProblemKey);
    else
      dist::decode_checkpoint(bytes, "re-encoded");
  } catch (const std::exception& e) {
    fuzz::finding(std::string("a decoded ") + (cache ? "cache" : "checkpoint") +
                  " does not decode once encoded again: " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  check_headers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 4;
  const std::string rest = fuzz::bytes_of(data + 1, size - 1);
  if (mode < 2) {
    const std::string bytes = mode == 0 ? rest : cache_file_around(rest);
    fuzz::read_or_refuse<CacheFileError>(
        [&] { decode_again(encode_cache_file(kProblemKey, decode_cache_file(bytes, kProblemKey)), true); });
  } else {
    const std::string bytes = mode == 2 ? rest : checkpoint_around(rest);
    fuzz::read_or_refuse([&] {
      const dist::SearchCheckpoint checkpoint = dist::decode_checkpoint(bytes, "input");
      // A resumed search reads every field; each must hold a value of its
      // type (UndefinedBehaviorSanitizer checks the loads).
      for (const Plan& plan : checkpoint.top) {
        volatile bool fits = plan.predicted.fits;
        (void)fits;
      }
      decode_again(dist::encode_checkpoint(checkpoint), false);
    });
  }
  return 0;
}
