// Plan serialization: cereal save/load functions for Plan and its parts. The
// JSON plan file (io/plan_io.hpp) and the distributed layer (binary archives
// for messages and checkpoints) both go through them, so a plan has one
// schema whatever carries it. Key names are those of DESIGN.md "Plan /
// result file": `layers` is a 2-element list [first, end), `recompute` a
// name (none|selective|full), the document starts with
// `format: autohaap-plan/1`. `vpp` (per plan) and `cp` (per stage) came
// later: a text document without them means 1 (io/plan_io.cpp fills them
// in before loading); binary archives always hold them.
//
// Loading names what failed: a missing key, a value of the wrong type, an
// unknown recompute name, a `layers` list that is not 2 long or a wrong
// format tag throws PlanFieldError carrying the key path ("stages[2].tp").
// Range and cross-field rules (tp >= 1, gpus == tp*dp, ...) are not checked
// here but by check_plan() in io/plan_io.hpp, so binary archives of trusted
// plans pay nothing for them.
//
// `ar(plan)` works on any cereal archive and always stores every section.
// save_plan/load_plan are for documents whose root is the plan itself (the
// JSON file): they may leave out `predicted` and `search`, and add each
// stage's informational `nodes` count, which loading ignores.
//
// Cost: linear in the number of stages. Stateless; safe from any thread.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autohaap/plan.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// The tag on the first line of every plan document; a reader refuses others.
inline constexpr const char* kPlanFormat = "autohaap-plan/1";

// The recompute names in the order of the enum, as the plan file spells them.
inline constexpr const char* kRecomputeNames = "none, selective or full";

// A plan document did not hold what the schema asks for at `key_path`.
// `value` is the offending value where the loader saw it (an unknown
// recompute name); it is empty when the archive could not even read the
// value (missing key, wrong type) — the JSON reader then looks it up in the
// document itself. Derives from cereal::Exception so code that handles
// corrupt archives generically still catches it.
class PlanFieldError : public cereal::Exception {
 public:
  PlanFieldError(std::string key_path, std::optional<std::string> value, std::string allowed)
      : cereal::Exception(compose(key_path, value, allowed)),
        key_path_(std::move(key_path)), value_(std::move(value)), allowed_(std::move(allowed)) {}

  const std::string& key_path() const { return key_path_; }
  const std::optional<std::string>& value() const { return value_; }
  const std::string& allowed() const { return allowed_; }

  // The same error one level up: `parent` is a key ("stages") or an index
  // ("[2]").
  PlanFieldError under(const std::string& parent) const {
    std::string path = parent;
    if (!key_path_.empty() && key_path_.front() != '[') path += '.';
    path += key_path_;
    return PlanFieldError(path, value_, allowed_);
  }

 private:
  static std::string compose(const std::string& key_path, const std::optional<std::string>& value,
                             const std::string& allowed) {
    std::string m = "plan: " + key_path + ": ";
    m += value ? "got '" + *value + "'; allowed: " : "expected ";
    return m + allowed;
  }
  std::string key_path_;
  std::optional<std::string> value_;
  std::string allowed_;
};

// Which optional sections a plan document holds. Binary archives hold both;
// a plan file may omit them (a hand-written plan has only its inputs).
struct PlanSections {
  bool predicted = true;
  bool search = true;
};

namespace serialization_detail {

// What a value of type T looks like, for "expected ..." messages.
template <class T>
constexpr const char* expected_kind() {
  if constexpr (requires { T::kKind; }) return T::kKind;
  else if constexpr (std::is_same_v<T, bool>) return "true or false";
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (std::is_same_v<T, std::vector<int>>) return "a list of integers";
  else if constexpr (std::is_same_v<T, std::vector<double>>) return "a list of numbers";
  else return "a mapping";
}

// Reads or writes one named field. On load, any archive failure below this
// key becomes a PlanFieldError whose path starts with `key`; the archive's
// own messages ("NVP not found", "rapidjson assertion IsInt()") name neither
// the key path nor the stage.
template <class Archive, class T>
void field(Archive& ar, const char* key, T&& value) {
  if constexpr (Archive::is_loading::value) {
    try {
      ar(cereal::make_nvp(key, value));
    } catch (const PlanFieldError& e) {
      throw e.under(key);
    } catch (const cereal::Exception&) {
      throw PlanFieldError(key, std::nullopt, expected_kind<std::decay_t<T>>());
    }
  } else {
    ar(cereal::make_nvp(key, value));
  }
}

template <class Archive>
void save_stage(Archive& ar, const StagePlan& s, int nodes) {
  ar(cereal::make_nvp("device", s.device), cereal::make_nvp("group", s.group),
     cereal::make_nvp("first_gpu", s.first_gpu));
  // Informational only, for people reading the file; text documents only, so
  // a binary archive keeps a fixed layout.
  if constexpr (cereal::traits::is_text_archive<Archive>::value)
    if (nodes > 0) ar(cereal::make_nvp("nodes", nodes));
  ar(cereal::make_nvp("gpus", s.gpus), cereal::make_nvp("tp", s.tp), cereal::make_nvp("cp", s.cp),
     cereal::make_nvp("dp", s.dp));
  const std::vector<int> layers{s.layer_begin, s.layer_end};
  ar(cereal::make_nvp("layers", layers));
  const std::string recompute = to_string(s.recompute);
  ar(cereal::make_nvp("recompute", recompute));
}

// A stage as written inside `stages`, with its `nodes` count.
struct StageOut {
  const StagePlan& stage;
  int nodes;
  template <class Archive>
  void save(Archive& ar) const { save_stage(ar, stage, nodes); }
};

// The `stages` list on save: like std::vector's own, plus per-stage nodes.
struct StagesOut {
  const std::vector<StagePlan>& stages;
  const std::vector<int>& nodes;  // per stage, or empty
  template <class Archive>
  void save(Archive& ar) const {
    ar(cereal::make_size_tag(static_cast<cereal::size_type>(stages.size())));
    for (std::size_t i = 0; i < stages.size(); ++i)
      ar(StageOut{stages[i], i < nodes.size() ? nodes[i] : 0});
  }
};

// The `stages` list on load: like std::vector's own, but an error inside a
// stage names its index.
struct StagesIn {
  static constexpr const char* kKind = "a list of stages";
  std::vector<StagePlan>& stages;
  template <class Archive>
  void load(Archive& ar) {
    cereal::size_type n = 0;
    ar(cereal::make_size_tag(n));
    stages.assign(static_cast<std::size_t>(n), StagePlan{});
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const std::string index = "[" + std::to_string(i) + "]";
      try {
        ar(stages[i]);
      } catch (const PlanFieldError& e) {
        throw e.under(index);
      } catch (const cereal::Exception&) {
        throw PlanFieldError(index, std::nullopt, "a mapping (one stage)");
      }
    }
  }
};

}  // namespace serialization_detail

template <class Archive>
void save(Archive& ar, const StagePlan& s) {
  serialization_detail::save_stage(ar, s, 0);
}

template <class Archive>
void load(Archive& ar, StagePlan& s) {
  using serialization_detail::field;
  field(ar, "device", s.device);
  field(ar, "group", s.group);
  field(ar, "first_gpu", s.first_gpu);
  field(ar, "gpus", s.gpus);
  field(ar, "tp", s.tp);
  field(ar, "cp", s.cp);
  field(ar, "dp", s.dp);
  std::vector<int> layers;
  field(ar, "layers", layers);
  if (layers.size() != 2) {
    std::string shown = "[";
    for (std::size_t i = 0; i < layers.size(); ++i) shown += (i ? ", " : "") + std::to_string(layers[i]);
    throw PlanFieldError("layers", shown + "]", "[first, end): a list of 2 integers");
  }
  s.layer_begin = layers[0];
  s.layer_end = layers[1];
  std::string recompute;
  field(ar, "recompute", recompute);
  auto parsed = parse_recompute(recompute);
  if (!parsed) throw PlanFieldError("recompute", recompute, kRecomputeNames);
  s.recompute = *parsed;
}

// One function for both directions keeps save and load in the same order,
// which binary archives need.
template <class Archive>
void serialize(Archive& ar, PredictedPerformance& p) {
  using serialization_detail::field;
  field(ar, "iteration_time_s", p.iteration_time_s);
  field(ar, "tokens_per_s", p.tokens_per_s);
  field(ar, "mfu", p.mfu);
  field(ar, "hfu", p.hfu);
  field(ar, "model_tflops_per_gpu", p.model_tflops_per_gpu);
  field(ar, "bubble_s", p.bubble_s);
  field(ar, "stage_time_s", p.stage_time_s);
  field(ar, "stage_memory_GiB", p.stage_memory_GiB);
  field(ar, "fits", p.fits);
}

template <class Archive>
void serialize(Archive& ar, SearchStats& s) {
  using serialization_detail::field;
  field(ar, "strategy", s.strategy);
  field(ar, "evaluated", s.evaluated);
  field(ar, "pruned", s.pruned);
  field(ar, "cache_hits", s.cache_hits);
  field(ar, "cache_misses", s.cache_misses);
  field(ar, "wall_s", s.wall_s);
  field(ar, "ranks", s.ranks);
  field(ar, "threads", s.threads);
}

// Writes the plan's keys into the archive's current node: the root of a JSON
// document, or a node opened by the caller. `stage_nodes` (one per stage, or
// empty) adds `nodes` to each stage of a text document.
template <class Archive>
void save_plan(Archive& ar, const Plan& p, PlanSections sections = {},
               const std::vector<int>& stage_nodes = {}) {
  const std::string format = kPlanFormat;
  ar(cereal::make_nvp("format", format), cereal::make_nvp("model", p.model),
     cereal::make_nvp("cluster", p.cluster), cereal::make_nvp("global_batch", p.global_batch),
     cereal::make_nvp("micro_batch_size", p.micro_batch_size),
     cereal::make_nvp("num_micro_batches", p.num_micro_batches), cereal::make_nvp("vpp", p.vpp),
     cereal::make_nvp("zero", p.zero));
  ar(cereal::make_nvp("stages", serialization_detail::StagesOut{p.stages, stage_nodes}));
  if (sections.predicted) ar(cereal::make_nvp("predicted", p.predicted));
  if (sections.search) ar(cereal::make_nvp("search", p.search));
}

// Reads what save_plan wrote with the same `sections`; an absent section is
// left at its default.
template <class Archive>
void load_plan(Archive& ar, Plan& p, PlanSections sections = {}) {
  using serialization_detail::field;
  std::string format;
  field(ar, "format", format);  // first, so a file of another kind is named as such
  if (format != kPlanFormat) throw PlanFieldError("format", format, kPlanFormat);
  field(ar, "model", p.model);
  field(ar, "cluster", p.cluster);
  field(ar, "global_batch", p.global_batch);
  field(ar, "micro_batch_size", p.micro_batch_size);
  field(ar, "num_micro_batches", p.num_micro_batches);
  field(ar, "vpp", p.vpp);
  field(ar, "zero", p.zero);
  field(ar, "stages", serialization_detail::StagesIn{p.stages});
  p.predicted = PredictedPerformance{};
  p.search = SearchStats{};
  if (sections.predicted) field(ar, "predicted", p.predicted);
  if (sections.search) field(ar, "search", p.search);
}

template <class Archive>
void save(Archive& ar, const Plan& p) {
  save_plan(ar, p);
}

template <class Archive>
void load(Archive& ar, Plan& p) {
  load_plan(ar, p);
}

}  // namespace autohaap
