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

#include "autohaap/io/yaml_value.hpp"
#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/device.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/problem.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// True when `ref` reads as a path whatever exists: it holds a '/' or ends
// in .yaml or .yml.
bool looks_like_path(const std::string& ref);

// True when `ref` is to be read as a file path rather than a catalog name:
// it looks like a path, or names a file that exists.
bool is_file_reference(const std::string& ref);

ModelSpec load_model(const std::string& path_or_name);
DeviceSpec load_device(const std::string& path_or_name);
// Group devices given as relative paths resolve against the cluster file's
// folder.
ClusterSpec load_cluster(const std::string& path_or_name);
// Empty => the catalog's default training setup.
TrainingSpec load_training(const std::string& path_or_name);

// The training's sequence length against the model: a layer list (family
// generic) is priced per sequence of its own seq_len, so a training file
// that sets another would scale tokens/s and not the work; InputError
// naming `training_file` then.
void check_training_for_model(const ModelSpec& model, const TrainingSpec& training, const std::string& training_file);

// A catalog entry by name alone, never a file of that name in the working
// directory (a manifest's bare names mean the same wherever the batch
// runs); InputError naming the catalog's entries when there is none.
ModelSpec named_model(const std::string& name);
ClusterSpec named_cluster(const std::string& name);
TrainingSpec named_training(const std::string& name);

// The same from a mapping already parsed — a spec written inside another
// file, as the specs a plan file embeds (io/plan_io.hpp). Key paths in
// errors lie under obj.path(); a group's device given as a relative path
// resolves against obj.file()'s folder. `default_name` names a spec whose
// mapping has no `name`.
ModelSpec read_model(const YamlObject& obj, const std::string& default_name);
ClusterSpec read_cluster(const YamlObject& obj, const std::string& default_name);
TrainingSpec read_training(const YamlObject& obj);

// The three inputs of one planning question; `training` may be empty.
Problem load_problem(const std::string& model, const std::string& cluster, const std::string& training);

// Detects what kind of input `path` holds from its top-level keys, validates
// it with the matching loader, and returns the kind: "model", "device",
// "cluster", "training", "plan" (a file with `format: autohaap-plan/1`;
// only recognized here — plan_io validates it) or "launch manifest"
// (`format: autohaap-launch/1`; only recognized here — io/launch_manifest
// validates it). Throws InputError when the kind cannot be told or the file
// is invalid.
std::string validate_file(const std::string& path);

// validate_file's kind, or "" when the file reads as none of them (what an
// output about to replace it asks: an input is never replaced).
std::string input_kind(const std::string& path);

// The ranges of the inputs. Each bound lies far beyond any model or machine
// built so far, and far inside where the cost model's arithmetic stays exact
// and finite: with every input at its bound, the largest quantities formed
// (a layer's FLOPs over the whole batch, ~b·s²·h = 2^92; the times they give
// at the slowest rate allowed, ~1e23 s; GPU counts and micro-batches times
// layers in 64-bit integers) remain far from overflow, so no later
// computation can produce an infinity, a NaN or a wrapped integer. Each
// bound is checked by the validator of its spec below (and by check_plan for
// the same quantity in a plan file).
namespace limits {
// The deepest trained transformers have under 200 layers (GPT-3 96, PaLM
// 118, Llama 3 405B 126); the split search grows about as the cube of the
// layers (a 1000-layer toy model on 8 GPUs: about 30 s, 2000: over a
// minute), so a model far beyond real ones is refused rather than left to
// run for hours.
inline constexpr int kMaxLayers = 1024;
// Widest trained: 25,600 (hidden); the default GPT MLP is 4x that.
inline constexpr int kMaxHidden = 1 << 20;
inline constexpr int kMaxFfnHidden = 1 << 22;
// Largest trained vocabularies: ~256k.
inline constexpr int kMaxVocab = 1 << 24;
// Tokens per sequence: the longest trained contexts are ~10M.
inline constexpr int kMaxSeqLen = 1 << 24;
// Sequences per iteration (and so micro-batches): published batches hold
// at most tens of thousands of sequences.
inline constexpr int kMaxGlobalBatch = 1 << 24;
// GPUs per node: the largest NVLink domain sold has 576.
inline constexpr int kMaxGpusPerNode = 1 << 10;
// GPUs per cluster (all groups): the largest clusters built have ~200,000.
inline constexpr int kMaxClusterGpus = 1 << 22;
// Ranks of a launch manifest (export --to launch-json): every rank is
// listed with its pipeline peers, about 800 bytes of JSON each and several
// kilobytes while it is built, so 2^18 (more than any cluster built) take
// 200 MB and 0.7 GB; a plan on 2^22 GPUs once took over 5 GB and a minute.
inline constexpr int kMaxLaunchRanks = 1 << 18;
// Bandwidths per GPU and direction (GB/s): 1 MB/s, slower than any link
// sold, to 1 PB/s, faster than any. The lower bound keeps every transfer
// time finite (a bandwidth of 1e-308 once gave infinite times and a crash).
inline constexpr double kMinGBps = 1e-3;
inline constexpr double kMaxGBps = 1e6;
// Latencies: up to one second per message.
inline constexpr double kMaxLatencyUs = 1e6;
// Dense peak per GPU (TFLOP/s): 1 GFLOP/s to 1 EFLOP/s.
inline constexpr double kMinTflops = 1e-3;
inline constexpr double kMaxTflops = 1e6;
// A kernel efficiency (fraction of the device's peak: a GEMM curve point,
// memory, attention): from 1% to 1. Every kernel of a GPU that trains runs
// far above 1% of its peak; a figure below it is a typo or a broken timing,
// and at 1e-300 it once made every time infinite and the plan's figures NaN.
inline constexpr double kMinEfficiency = 0.01;
// FP8 over the 16-bit peak: dense FP8 is twice the rate on every GPU that
// has it (2.02 on L40S by its rounded figures), with a little room.
inline constexpr double kMostFp8Over16Bit = 2.1;
// Memory per GPU, and the headroom kept free of it (GiB): 1 MiB to 1 PiB.
inline constexpr double kMinMemoryGiB = 1.0 / 1024;
inline constexpr double kMaxMemoryGiB = 1 << 20;
// A measured latency of one operation (ms), from a profile: up to 1e9 (11
// days), so that a pass over every micro-batch and layer stays finite.
inline constexpr double kMaxOpLatencyMs = 1e9;
// A generic layer, per sequence: parameters, forward GFLOP, MB stored.
inline constexpr double kMaxLayerParams = 1e15;
inline constexpr double kMaxLayerGflop = 1e12;
inline constexpr double kMaxLayerMB = 1e9;
// A name, in bytes: it is printed in every table and plan, a hostfile
// column and a prefix of host names (which DNS caps at 63); the longest
// catalog name has 26. A 10 MB name once took 18 s and 1.6 GB to search.
inline constexpr std::size_t kMaxNameBytes = 256;
}  // namespace limits

// The invariants a loaded spec must meet, for specs built in code (catalog
// entries, specs embedded in other files). `file` names the source in the
// error; key paths are those of the YAML form, under `path` (e.g.
// "groups[1].device" for a device written inline in a cluster).
// A name goes into plan files, tables, hostfiles and Megatron arguments as
// it is: InputError(file, key, name with its control characters escaped,
// ...) when it is blank, longer than limits::kMaxNameBytes, not UTF-8, or
// holds a control character (a newline would start a line of its own
// there) or an invisible one (a zero-width space or a bidirectional
// override reads as another name, or reorders the line around it) and,
// `one_word` (a group's name, which prefixes its hosts' names in a
// hostfile), when it holds anything but letters, digits, '-', '_', '.'.
void check_name(const std::string& file, const std::string& key, const std::string& name, bool one_word);
void check_model(const ModelSpec& model, const std::string& file, const std::string& path = "");
void check_device(const DeviceSpec& device, const std::string& file, const std::string& path = "");
void check_cluster(const ClusterSpec& cluster, const std::string& file);
void check_training(const TrainingSpec& training, const std::string& file);

}  // namespace autohaap
