// Plan files: the one schema (io/plan_schema.hpp) that `search` and
// `estimate -o` write and `estimate --plan`, `report` and `export` read back
// (DESIGN.md "Plan / result file"). JSON when the file name ends in `.json`,
// YAML otherwise; both carry the same keys, written and read by visitors of
// that schema.
//
// Self-contained: a plan written with its Problem embeds the specs it was
// made for under `specs` — the model, the cluster (devices inline) and the
// training settings, each in the form of its YAML file, with every field
// explicit, and the fingerprint of each (specs/spec_fingerprint.hpp) — so
// the file alone re-reads, re-scores and draws the plan in any folder, and
// a reader can tell whether a --model/--cluster/--train given with it is the
// one it was made for. Plan files without `specs` (older ones, hand-written
// ones) read as before and name their model and cluster only.
//
// Reading validates everything a plan says about itself and throws
// InputError naming the file, the key path (`stages[2].tp`), the value and
// what is allowed: wrong format tag, missing or unknown keys (with a hint
// at the closest known one), a key given twice, wrong types, non-positive
// degrees, gpus != tp*cp*dp, a layer range that is not [a, b) with
// 0 <= a < b, an unknown recompute mode, malformed JSON or YAML, embedded
// specs that are invalid or name another model or cluster than the plan.
// `predicted`, `search` and `specs` are optional (a hand-written plan has
// only its inputs); `vpp` and each stage's `cp` may be absent (plans from
// before they existed: 1); each stage's `nodes` is informational and
// ignored. Whether the plan fits a given model and cluster is a separate
// question, answered by check_plan_against() once the specs are known.
//
// Called by the CLI (estimate, search, batch, validate, report, export).
// Cost: linear in the number of stages and the size of the specs; writing
// goes through write_file_atomically. Stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "autohaap/io/plan_serialization.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

// True when `path` names a JSON plan (ends in ".json", any letter case).
bool is_json_path(std::string_view path);

// A plan is written as JSON (".json") or YAML (".yaml", ".yml"), any letter
// case. Another name is refused, naming the command-line `flag`, before the
// work whose result it would hold: "plan.txt" would otherwise silently hold
// YAML and "plan.jsn" a YAML plan a JSON reader cannot read.
void check_plan_file_name(const std::string& path, const std::string& flag);

// Reads and validates a plan file (check_plan included).
Plan read_plan(const std::string& path);

// Parses plan text; `file` only names the source in errors.
Plan plan_from_string(const std::string& text, bool is_json, const std::string& file);

// The specs of `problem` as a plan carries them (its model, cluster and
// training; not its measured profiles).
PlanSpecs plan_specs(const Problem& problem);

// The plan as a document. The informational `nodes` key of each stage needs
// the GPUs per node of the stage's group: give one count for all groups
// (`gpus_per_node_hint`; 0 = the embedded cluster's, or leave `nodes` out),
// the cluster, or the Problem — which also embeds its specs (plan.specs is
// replaced by plan_specs(problem)). `predicted` is left out while it holds
// no stage times (the plan was never estimated), `search` while it names no
// strategy (the plan did not come from a search), `specs` while unset.
std::string plan_to_yaml(const Plan& plan, int gpus_per_node_hint = 0);
std::string plan_to_yaml(const Plan& plan, const ClusterSpec& cluster);
std::string plan_to_yaml(const Plan& plan, const Problem& problem);
std::string plan_to_json(const Plan& plan, int gpus_per_node_hint = 0);
std::string plan_to_json(const Plan& plan, const ClusterSpec& cluster);
std::string plan_to_json(const Plan& plan, const Problem& problem);

// Writes the plan atomically, JSON or YAML by the file name. With its
// problem, the plan is first checked as check_plan_against reads it back: a
// plan that breaks a rule is a std::logic_error, never a file.
void write_plan(const Plan& plan, const std::string& path, int gpus_per_node_hint = 0);
void write_plan(const Plan& plan, const std::string& path, const ClusterSpec& cluster);
void write_plan(const Plan& plan, const std::string& path, const Problem& problem);

// The rules a plan must satisfy on its own (what reading enforces), for
// plans built in code: names non-empty and without NUL characters (the
// search's strategy may be empty), batch numbers >= 1, zero in 0..3, at
// least one stage, group/first_gpu >= 0, tp/dp/gpus >= 1, gpus == tp*dp,
// layers [a, b) with 0 <= a < b, one predicted entry per stage where given,
// search counts >= 0 and ranks/threads >= 1, embedded specs (if any)
// naming the plan's model and cluster. Throws InputError.
void check_plan(const Plan& plan, const std::string& file);

// The rules that need the model and cluster; runs check_plan first. The plan
// names this model and cluster; global_batch == micro_batch_size *
// num_micro_batches; layers run contiguously from 0 to the model's layer
// count in stage order; each stage's group exists and has the stage's
// device; its GPUs [first_gpu, first_gpu + gpus) lie inside the group and
// overlap no other stage's; tp divides the group's gpus_per_node, every
// tensor-parallel group (tp consecutive GPUs, Megatron's rank order) stays
// inside one node, and tp divides the attention heads and KV heads (generic
// models: tp == 1), cp splits `seq_len` (the training's, which may
// override the model's: Problem::seq_len); micro_batch_size is divisible
// by each stage's dp. Throws InputError naming `file` and the offending key.
// This form knows no training: sequence parallelism is taken as off.
void check_plan_against(const Plan& plan, const ModelSpec& model, const ClusterSpec& cluster, int seq_len,
                        const std::string& file);
// The same against a whole problem: with its training's sequence
// parallelism, whose tp must split each sequence (the stage rule,
// specs/parallel_rules.hpp). What every command that reads or writes a
// plan for a problem applies.
void check_plan_against(const Plan& plan, const Problem& problem, const std::string& file);

}  // namespace autohaap
