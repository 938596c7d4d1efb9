// SearchCheckpoint: the state of a distributed search at an exchange —
// which chunks of the skeleton list are finished, the best plans so far,
// the latency cache and the finished initialization — saved so a killed
// or requeued job resumes where it stopped and still prints the plan an
// uninterrupted run prints. While the initialization runs (on many node
// groups most of a search), it holds that instead (`initializing`,
// InitProgress: the rounds of tasks walked, the list and probe plans so
// far), and a resumed job goes on from there.
//
// Why resuming gives the same answer: the skeleton list and its chunks are
// rebuilt identically (same inputs, same list digest); a finished chunk's
// every skeleton was either offered to the incumbent or skipped because it
// could not beat the K-th best plan of that time; the saved top-K holds
// every plan offered that could still be among the final K. Unfinished
// chunks are searched again with that top-K as the incumbent, so the
// final top-K is the same set, in the same canonical order.
//
// File format (binary, little-endian as written by this machine):
//   8 bytes  magic "AHCKPT03"
//   8 bytes  payload size
//   8 bytes  FNV-1a 64 checksum of the payload (batch/fingerprint.hpp)
//   payload  cereal binary archive of SearchCheckpoint
// Written with write_file_atomically, so a kill during a write leaves the
// previous checkpoint. On reading, a file that is not a checkpoint, is
// truncated, fails its checksum, or was written for other inputs (its
// fingerprint differs) is refused with InputError naming the file: never
// silently mixed into a search. Every length in the file, header and
// payload, is checked against the bytes there before anything is allocated
// for it (io/bounded_binary_archive.hpp).
//
// The fingerprint hashes the problem's fingerprint (batch/fingerprint.hpp:
// every field of model, cluster, training and measured profiles, and the
// tool version), the cost parameters, the strategy and top-K: everything
// that changes the answer. Threads, ranks
// and intervals do not change it, so a job may resume with another rank
// count. Cost: reading and writing are linear in the file; the fingerprint
// is linear in the inputs. Stateless functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/cost/cost_parameters.hpp"
#include "autohaap/io/search_serialization.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/search/latency_cache.hpp"
#include "autohaap/search/memory_pruning.hpp"
#include "autohaap/search/search_options.hpp"
#include "autohaap/search/search_space.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap::dist {

struct SearchCheckpoint {
  std::uint64_t fingerprint = 0;
  std::string inputs;             // what was searched, in words, for messages
  std::uint64_t skeletons = 0;    // size of the initialized skeleton list
  std::uint64_t list_digest = 0;  // of that list (ids and lower bounds)
  std::vector<std::uint64_t> chunk_end;    // chunk c holds positions [chunk_end[c-1], chunk_end[c])
  std::vector<std::uint8_t> chunk_done;    // per chunk: 1 when searched to the end
  std::vector<Plan> top;                   // best plans so far, canonical order
  std::int64_t evaluated = 0;              // search-phase totals so far, all ranks
  PruneReport pruned;                      // search-phase skips so far (bound, no split)
  CacheDelta cache;                        // latency cache entries
  // Saved during the initialization: only `init` (and the fingerprint and
  // inputs) mean anything; there is no list and no chunk yet. Saved during
  // the search: `init` is the whole initialization (next_task == tasks),
  // from which a resume rebuilds the list without walking a round again
  // (a kill loses at most an interval, not the initialization's minutes).
  bool initializing = false;
  InitProgress init;

  std::int64_t chunks_done() const;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(fingerprint, inputs, skeletons, list_digest, chunk_end, chunk_done, top, evaluated, pruned, cache,
       initializing, init);
  }
};

// Hash of everything that changes a search's answer (see above): the
// problem, the cost parameters and the settings that do (strategy, top K,
// the skeleton limit, which sets what the initialization keeps, and mixed
// stages, which refine the plans a finished checkpoint holds).
std::uint64_t search_fingerprint(const Problem& problem, const CostParameters& parameters,
                                 const SearchSettings& settings);

// Digest of an initialized skeleton list (ids, lower bounds, work
// estimates, in order): equal lists on two ranks or two runs have equal
// digests.
std::uint64_t skeleton_list_digest(const std::vector<Skeleton>& skeletons);

// "llama3-8b on mixed-a100-v100, strategy autohaap, top 1, max skeletons
// 250000, mixed stages on": names the search a checkpoint belongs to in
// messages, by the settings search_fingerprint hashes.
std::string describe_search(const Problem& problem, const SearchSettings& settings);

// Replaces `path` atomically. InputError if it cannot be written.
void write_checkpoint(const std::string& path, const SearchCheckpoint& checkpoint);

// The checkpoint at `path`, or nothing if no file is there. InputError
// (naming the file) if it is damaged, not a checkpoint, or its fingerprint
// is not `fingerprint`; `inputs` then describes the search asking.
std::optional<SearchCheckpoint> read_checkpoint(const std::string& path, std::uint64_t fingerprint,
                                                const std::string& inputs);

// The checkpoint's plans (its best so far and an initialization's probes)
// against the search's model, cluster and sequence length, as a plan file
// is (check_plan_against): a checksum guards against damage, not against a
// file made to match one, and these plans may be written as the answer.
// InputError naming `path` and the saved plan.
void check_checkpoint_plans(const SearchCheckpoint& checkpoint, const Problem& problem, const std::string& path);

// The checkpoint's bytes and back, without the file (for tests and for
// sending a checkpoint to other ranks). decode throws InputError naming
// `origin` on damage.
std::string encode_checkpoint(const SearchCheckpoint& checkpoint);
SearchCheckpoint decode_checkpoint(const std::string& bytes, const std::string& origin);

}  // namespace autohaap::dist
