// Manifest: a batch of planning questions read from one YAML file under
// jobs/ — a sweep (models x clusters x trainings, or an explicit list) or a
// fleet (per cluster, the models to plan for it) — expanded into entries,
// each one search with the manifest's options.
//
// File format (every key checked; an unknown key is an error):
//
//   name: sweep-gpt3            # optional; default: the file's stem
//   options:                    # optional; these are the defaults
//     strategy: autohaap        # autohaap | exhaustive | reference | uniform | metis
//     threads: 0                # per search; 0 = all cores
//     top: 1                    # plans kept per search
//     time_limit_s: 0           # per search; 0 = none
//     max_skeletons: 250000     # per search; 0 = no limit
//   (the keys are the option table's: search/search_options.hpp)
//   # then exactly one of the three forms:
//   models: [gpt3-1.3b, ../configs/models/gpt3-2.7b.yaml]   # product form:
//   clusters: [a100x8]                                       #   every model x
//   trainings: [default]        # optional, default [default] # cluster x training
//   entries:                    # explicit form
//     - {model: llama3-8b, cluster: a100x8, training: default, name: my-run}
//   fleet:                      # fleet form
//     - {cluster: ../configs/clusters/a100x8.yaml, models: [gpt3-1.3b], training: default}
//
// A reference is a catalog name or a YAML file; a relative path is read
// relative to the manifest's folder, not the working directory, so a
// manifest means the same wherever it is run from.
//
// Promises: load_manifest validates everything before any search runs —
// every model, cluster and training is loaded and checked, lists are
// non-empty, options are in range, entry names are unique — and a failure
// is one InputError naming the manifest, the key path of the entry
// (`entries[3].model`, `fleet[1].models[0]`), the value and what is allowed
// (for a bad referenced file, also that file's own key path).
//
// Entries come in a fixed order (product: models outer, then clusters, then
// trainings; lists: as written; fleet: clusters in order, each cluster's
// models in order), so an index — a Slurm array task id — always means the
// same entry. Each entry has a stable name, `<model>__<cluster>__<training>`
// from the labels of its references (catalog name, or file stem), unless
// the explicit form gives `name:`. Names are file names: letters, digits,
// `.`, `_` and `-` only (other characters become `-`).
//
// Cost: one load per distinct reference (cluster files also read their
// device files). Callers: the batch command, tests. Thread-safe (no state).
#pragma once

#include <string>
#include <vector>

#include "autohaap/search/search_options.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// How each entry's search runs; the same for every entry of a manifest:
// the `options:` keys, one per row of the option table that applies to a
// one-process search (search_options.hpp). threads does not change the
// result.
using BatchOptions = SearchSettings;

struct BatchEntry {
  std::string name;      // unique within the manifest; plan file DIR/<name>.json
  std::string source;    // where it came from: "entries[3]", "fleet[1].models[0]", ...
  std::string model;     // labels: catalog name or file stem
  std::string cluster;
  std::string training;  // "default" when none was given
  Problem problem;       // loaded and validated
};

enum class ManifestForm { product, entries, fleet };

// The most entries one manifest expands to. Each holds its loaded Problem
// (about a kilobyte), and a product of three lists grows as their product:
// three lists of 400 files would be 64 million entries and tens of GB
// before the first one ran. Counted before expanding; past it the manifest
// is refused (split it, or shard a sweep over several manifests).
inline constexpr long long kMaxManifestEntries = 100'000;

struct Manifest {
  std::string path;
  std::string name;
  ManifestForm form = ManifestForm::product;
  BatchOptions options;
  std::vector<BatchEntry> entries;  // in the fixed order described above
};

// Reads, validates and expands a manifest file.
Manifest load_manifest(const std::string& path);

// The same from text; relative references resolve against `base_dir`, and
// `source` names the text in errors (tests, manifests built in memory).
Manifest parse_manifest(const std::string& text, const std::string& source, const std::string& base_dir);

const char* to_string(ManifestForm form);

}  // namespace autohaap
