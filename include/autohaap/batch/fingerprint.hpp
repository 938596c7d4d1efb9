// Fingerprints: short hashes that say whether two planning questions are the
// same, so a batch can skip an entry whose answer is already on disk and a
// persistent latency cache is never used for a problem it was not built for.
//
// They hash the specs as loaded — every field the cost model reads — not the
// files: moving a file, renaming it, or editing its comments changes
// nothing, while a changed device efficiency inside a cluster's device file
// does. Every fingerprint also covers the tool version (AUTOHAAP_VERSION)
// and the cost model's calibrated constants (cost/cost_parameters.hpp, as
// the search uses them), since either may change every cost.
//
//   problem_fingerprint  model + cluster (with its devices) + training +
//                        measured profiles: what a latency-cache entry
//                        depends on.
//   input_fingerprint    the problem plus the search options that change the
//                        answer: every manifest option of kSearchOptions
//                        (strategy, top, time limit, gap, mixed stages, max
//                        skeletons) but threads, on which the result does
//                        not depend.
//
// The hash is 64-bit FNV-1a over a canonical text form (numbers printed with
// round-trip precision), written as 16 hex digits: the specs' own
// (specs/spec_fingerprint.hpp, where a new spec field must be added) and the
// measured profiles. It guards against accidents, not adversaries.
// Cost: linear in the size of the specs. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "autohaap/batch/manifest.hpp"
#include "autohaap/cost/cost_parameters.hpp"
#include "autohaap/specs/problem.hpp"
#include "autohaap/specs/spec_fingerprint.hpp"  // fnv1a64, hex64, the specs' canonical texts

namespace autohaap {

// The problem as canonical text: one `key=value` line per field, in a fixed
// order (model, cluster, training, profiles).
std::string canonical_text(const Problem& problem);
// Every calibrated constant of the cost model, one `key=value` line each:
// the one list that fingerprints and checkpoints hash.
std::string canonical_text(const CostParameters& parameters);

std::string problem_fingerprint(const Problem& problem);
std::string input_fingerprint(const Problem& problem, const BatchOptions& options);

}  // namespace autohaap
