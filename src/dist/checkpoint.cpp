#include "autohaap/dist/checkpoint.hpp"

#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/bounded_binary_archive.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/plan_serialization.hpp"

namespace autohaap::dist {
namespace {

// 02: stage keys of the cache delta name the vpp (latency_cache.hpp).
// 03: an initialization's progress (InitProgress).
constexpr char kMagic[8] = {'A', 'H', 'C', 'K', 'P', 'T', '0', '3'};
constexpr std::size_t kHeaderBytes = 8 + 8 + 8;
constexpr const char* kRemedy = "remove the file or choose another --checkpoint path";

// Against damage, not tampering.
std::uint64_t checksum(const std::string& payload) { return fnv1a64(payload); }

void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}

std::uint64_t get_u64(const std::string& in, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, in.data() + at, 8);
  return v;
}

[[noreturn]] void refuse(const std::string& origin, const std::string& what) {
  throw InputError(origin, "checkpoint", what, std::string("a checkpoint written by this same search; ") + kRemedy);
}

}  // namespace

std::int64_t SearchCheckpoint::chunks_done() const {
  std::int64_t n = 0;
  for (std::uint8_t d : chunk_done) n += d != 0;
  return n;
}

std::uint64_t search_fingerprint(const Problem& problem, const CostParameters& parameters,
                                 const SearchSettings& settings) {
  // The problem's fingerprint (every spec field and the tool version, one
  // canonical list shared with the batch runner) plus what else changes
  // the answer: the settings describe_search names, every cost parameter,
  // and the prune rules a checkpoint counts (their number sets the layout
  // of its prune report).
  std::string text = "search checkpoint\nproblem=" + problem_fingerprint(problem) + "\nstrategy=" + settings.strategy +
                     "\ntop=" + std::to_string(settings.top_k) + "\nmax_skeletons=" +
                     std::to_string(settings.max_skeletons) + "\nmixed_stages=" +
                     (settings.mixed_stages ? "on" : "off") + "\nprune_rules=" + std::to_string(kPruneRuleCount) +
                     "\n" + canonical_text(parameters);
  return fnv1a64(text);
}

std::uint64_t skeleton_list_digest(const std::vector<Skeleton>& skeletons) {
  std::uint64_t h = fnv1a64(std::to_string(skeletons.size()));
  for (const Skeleton& s : skeletons) {
    const std::uint64_t id = s.id;
    const std::int32_t shape[2] = {s.micro_batch, s.num_stages()};
    const double values[2] = {s.lower_bound_s, s.work};
    h = fnv1a64(std::string_view(reinterpret_cast<const char*>(&id), sizeof id), h);
    h = fnv1a64(std::string_view(reinterpret_cast<const char*>(shape), sizeof shape), h);
    h = fnv1a64(std::string_view(reinterpret_cast<const char*>(values), sizeof values), h);
  }
  return h;
}

std::string describe_search(const Problem& problem, const SearchSettings& settings) {
  return problem.model.name + " on " + problem.cluster.name + ", strategy " + settings.strategy + ", top " +
         std::to_string(settings.top_k) + ", max skeletons " + std::to_string(settings.max_skeletons) +
         ", mixed stages " + (settings.mixed_stages ? "on" : "off");
}

std::string encode_checkpoint(const SearchCheckpoint& checkpoint) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(checkpoint);
  }
  const std::string payload = out.str();
  std::string bytes(kMagic, sizeof kMagic);
  put_u64(bytes, payload.size());
  put_u64(bytes, checksum(payload));
  return bytes + payload;
}

SearchCheckpoint decode_checkpoint(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    refuse(origin, "a file that is not an autohaap search checkpoint");
  if (bytes.size() < kHeaderBytes)
    refuse(origin, "a truncated checkpoint (" + std::to_string(bytes.size()) + " bytes)");
  // The sizes are checked before anything is parsed, so a damaged length
  // can never make the reader allocate or read past the file.
  const std::uint64_t size = get_u64(bytes, 8);
  const std::uint64_t sum = get_u64(bytes, 16);
  const std::uint64_t have = bytes.size() - kHeaderBytes;
  if (size != have)
    refuse(origin, "a damaged or truncated checkpoint (" + std::to_string(have) + " of " + std::to_string(size) +
                       " payload bytes)");
  const std::string payload = bytes.substr(kHeaderBytes);
  if (checksum(payload) != sum) refuse(origin, "a damaged checkpoint (checksum mismatch)");
  SearchCheckpoint checkpoint;
  try {
    // Every length inside is checked against the bytes left before it is
    // allocated: a checksum guards against damage, not against a file made
    // to match one.
    BoundedBinaryInputArchive archive(payload);
    archive(checkpoint);
  } catch (const std::exception& e) {
    refuse(origin, std::string("an unreadable checkpoint (") + e.what() + ")");
  }
  if (checkpoint.chunk_done.size() != checkpoint.chunk_end.size())
    refuse(origin, "an inconsistent checkpoint (chunk lists of different lengths)");
  // Its plans seed the resumed search and may be written out as its answer:
  // they must satisfy what a plan file must (io/plan_io.hpp).
  for (std::size_t i = 0; i < checkpoint.top.size(); ++i)
    check_plan(checkpoint.top[i], origin + " (saved plan " + std::to_string(i + 1) + ")");
  return checkpoint;
}

void write_checkpoint(const std::string& path, const SearchCheckpoint& checkpoint) {
  write_file_atomically(path, encode_checkpoint(checkpoint));
}

void check_checkpoint_plans(const SearchCheckpoint& checkpoint, const Problem& problem, const std::string& path) {
  auto check_all = [&](const std::vector<Plan>& plans, const std::string& what) {
    for (std::size_t i = 0; i < plans.size(); ++i)
      check_plan_against(plans[i], problem, path + " (" + what + " " + std::to_string(i + 1) + ")");
  };
  check_all(checkpoint.top, "saved plan");
  check_all(checkpoint.init.probes, "saved probe plan");
}

std::optional<SearchCheckpoint> read_checkpoint(const std::string& path, std::uint64_t fingerprint,
                                                const std::string& inputs) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  SearchCheckpoint checkpoint = decode_checkpoint(read_file(path), path);
  if (checkpoint.fingerprint != fingerprint) {
    throw InputError(path, "checkpoint", "a checkpoint written for other inputs (" + checkpoint.inputs + ")",
                     "a checkpoint of this search (" + inputs + ", same model, cluster, training, options and "
                     "version); " + kRemedy);
  }
  return checkpoint;
}

}  // namespace autohaap::dist
