// The fingerprints a plan file recorded for the specs it embeds
// (`specs.fingerprints`: model, cluster, training; plan_io.hpp), as they
// were when it was written. A spec embedded in the file whose fingerprint
// (specs/spec_fingerprint.hpp) no longer matches was edited after the plan
// was written: the CLI scores the plan with the spec as it stands and says
// so. A note, not a refusal: the fingerprint is informational, and a
// fingerprint function that changes between releases must not refuse the
// plans an older release wrote.
//
// Called by the CLI after read_plan() has read and checked the same file.
// Cost: one more parse of the file.
#pragma once

#include <map>
#include <string>

namespace autohaap {

// Spec name ("model", "cluster", "training") -> the fingerprint recorded
// for it. Empty when the file records none, or cannot be read again (the
// plan itself was read; this is informational only).
std::map<std::string, std::string> recorded_spec_fingerprints(const std::string& plan_file);

}  // namespace autohaap
