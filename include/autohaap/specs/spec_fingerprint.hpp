// Spec fingerprints: short hashes that say whether two specs are the same —
// every field the cost model reads, not the files they came from (moving or
// renaming a file, or editing its comments, changes nothing; a changed
// device efficiency inside a cluster does). Batch fingerprints
// (batch/fingerprint.hpp) are built on them, and a plan file records those
// of the specs it embeds (io/plan_io.hpp), so a reader can tell whether a
// given --model, --cluster or --train is the one the plan was made for.
//
// The hash is 64-bit FNV-1a over a canonical text form (one `key=value` line
// per field in a fixed order, numbers with round-trip precision), written
// as 16 hex digits. It guards against accidents, not adversaries. Whoever
// adds a field to a spec must add it to its canonical text here, or changes
// to that field will not be noticed.
// Cost: linear in the size of the spec. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// 64-bit FNV-1a of `bytes`, continuing from `state` (the offset basis by default).
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state = 0xcbf29ce484222325ULL);

// 16 lower-case hex digits.
std::string hex64(std::uint64_t value);

// A double with round-trip precision, so two doubles that differ print
// differently.
std::string canonical_number(double value);

// A canonical text being built: one `key=value` line per add().
class CanonicalText {
 public:
  template <class T>
  CanonicalText& add(const std::string& key, const T& value) {
    out_ << key << '=';
    if constexpr (std::is_floating_point_v<T>) {
      out_ << canonical_number(value);
    } else {
      out_ << value;
    }
    out_ << '\n';
    return *this;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

// The canonical text of each spec, its keys prefixed "model.", "cluster."
// and "training.".
std::string canonical_text(const ModelSpec& model);
std::string canonical_text(const ClusterSpec& cluster);
std::string canonical_text(const TrainingSpec& training);
// One device's fields as a cluster's canonical text lists them for each
// group, its keys prefixed "device.".
std::string canonical_text(const DeviceSpec& device);

// hex64(fnv1a64(canonical_text(spec))).
std::string spec_fingerprint(const ModelSpec& model);
std::string spec_fingerprint(const ClusterSpec& cluster);
std::string spec_fingerprint(const TrainingSpec& training);

}  // namespace autohaap
