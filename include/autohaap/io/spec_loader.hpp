// Spec loader: turns `--model`, `--cluster`, `--train` arguments — each a
// catalog name or a YAML file path — into validated specs.
//
// A reference is a path when it contains '/', ends in .yaml/.yml, or names
// an existing file; otherwise it is a catalog name (io/catalog.hpp). File
// formats: DESIGN.md "Interfaces" and the commented files under configs/.
//
// Promises: a returned spec satisfies every invariant the cost model relies
// on (see specs/*.hpp). Any bad input — missing or unknown key, wrong type,
// out-of-range value, unknown catalog name, malformed YAML — throws one
// InputError naming file, key path, value and what is allowed. Nothing is
// defaulted silently: optional keys have the documented defaults, and
// unknown keys are rejected. Callers: the CLI, batch manifests, tests.
// Cost: one file read and parse per call (cluster: plus its device files).
// Thread-safe.
#pragma once

#include <string>

#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/device.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/problem.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// True when `ref` is to be read as a file path rather than a catalog name.
bool is_file_reference(const std::string& ref);

ModelSpec load_model(const std::string& path_or_name);
DeviceSpec load_device(const std::string& path_or_name);
// Group devices given as relative paths resolve against the cluster file's
// folder.
ClusterSpec load_cluster(const std::string& path_or_name);
// Empty => the catalog's default training setup.
TrainingSpec load_training(const std::string& path_or_name);

// The three inputs of one planning question; `training` may be empty.
Problem load_problem(const std::string& model, const std::string& cluster, const std::string& training);

// Detects what kind of input `path` holds from its top-level keys, validates
// it with the matching loader, and returns the kind: "model", "device",
// "cluster", "training", or "plan" (a file with `format: autohaap-plan/1`;
// only recognized here — plan_io validates it). Throws InputError when the
// kind cannot be told or the file is invalid.
std::string validate_file(const std::string& path);

// The invariants a loaded spec must meet, for specs built in code (catalog
// entries, specs embedded in other files). `file` names the source in the
// error; key paths are those of the YAML form.
void check_model(const ModelSpec& model, const std::string& file);
void check_device(const DeviceSpec& device, const std::string& file);

}  // namespace autohaap
