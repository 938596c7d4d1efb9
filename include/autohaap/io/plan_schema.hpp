// Plan schema: the one description of the plan document. For each plan
// struct, describe() lists its keys in document order, each with the member
// that holds it, whether a document may leave it out (and what that means),
// and how its value is spelt. Every format is a visitor of these lists:
//
//   cereal archives — binary messages and checkpoints, plans nested in
//     other JSON documents (io/plan_serialization.hpp): every key, in this
//     order, file-only keys left out;
//   plan files, JSON and YAML — written, read, and the keys each mapping
//     may hold (io/plan_io.cpp): a key outside the description is refused
//     with a hint at the closest one.
//
// Adding a plan field is one edit: the member in plan.hpp and its line
// here. A key added after plan files were first written is `optional`,
// with the value that older files mean (as `vpp` and `cp`: 1).
//
// A visitor V provides, for a key (a string literal) and a member:
//   tag(key, text)                  a constant; reading refuses any other
//   field(key, member)              a required value
//   optional(key, member, absent)   a value whose absence means `absent`
//   range(key, begin, end)          two ints written [begin, end)
//   list(key, items, kind, item)    a list of described structs; `kind`
//                                   and `item` word the errors
//   either(key, items, kind, item, keys)
//                                   a list as `list`, or, where a file
//                                   leaves it out (the list empty), the
//                                   keys that keys() describes; a file
//                                   holds one or the other, an archive
//                                   both (keys first)
//   section(key, member, written)   a described struct that a file leaves
//                                   out while written(member) is false
//   informational(key, member)      a value the writer knows from context
//                                   (a stage's node count); files only:
//                                   read into member to be checked
//   specs(key, member)              the embedded specs (files only)
// Values are int, std::int64_t, double, bool, std::string, a list of
// doubles, or an enum spelt by EnumNames. Each describe() takes the struct
// const or not, so one description serves writers and readers.
#pragma once

#include <concepts>
#include <optional>
#include <string_view>
#include <type_traits>

#include "autohaap/plan.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

// The tag on the first line of every plan document; a reader refuses others.
inline constexpr const char* kPlanFormat = "autohaap-plan/1";

// The recompute names in the order of the enum, as the plan file spells them.
inline constexpr const char* kRecomputeNames = "none, selective or full";

namespace plan_schema {

// How an enum member is spelt in a document.
template <class E>
struct EnumNames;

template <>
struct EnumNames<Recompute> {
  static constexpr const char* kAllowed = kRecomputeNames;
  static const char* name(Recompute r) { return to_string(r); }
  static std::optional<Recompute> parse(std::string_view s) { return parse_recompute(s); }
};

template <>
struct EnumNames<TimeSource> {
  static constexpr const char* kAllowed = "measured, corrected or analytic";
  static const char* name(TimeSource s) { return to_string(s); }
  static std::optional<TimeSource> parse(std::string_view s) { return parse_time_source(s); }
};

template <class T>
concept Enum = std::is_enum_v<T>;

// S is T or const T.
template <class S, class T>
concept Of = std::same_as<std::remove_const_t<S>, T>;

template <class V, Of<ReplicaSet> R>
void describe(V& v, R& r) {
  v.field("device", r.device);
  v.field("group", r.group);
  v.field("first_gpu", r.first_gpu);
  v.field("gpus", r.gpus);
  v.field("sequences", r.sequences);
}

template <class V, Of<StagePlan> S>
void describe(V& v, S& s) {
  // A stage on one device names it, its group and first GPU; a stage whose
  // replicas sit on several devices lists its replica sets instead (plans
  // from before replica sets have none, and read unchanged).
  v.either("replicas", s.replicas, "a list of replica sets", "a mapping (one replica set)", [&] {
    v.field("device", s.device);
    v.field("group", s.group);
    v.field("first_gpu", s.first_gpu);
    v.informational("nodes", s.stated_nodes);  // nodes the stage's GPUs touch, for people reading the file
  });
  v.field("gpus", s.gpus);
  v.field("tp", s.tp);
  v.optional("cp", s.cp, 1);  // plans from before context parallelism
  v.field("dp", s.dp);
  v.range("layers", s.layer_begin, s.layer_end);
  v.optional("chunks", s.chunks, std::vector<int>{});  // interleaved plans only; before them: the even cut
  v.field("recompute", s.recompute);
}

template <class V, Of<PredictedPerformance> P>
void describe(V& v, P& p) {
  v.field("iteration_time_s", p.iteration_time_s);
  v.field("tokens_per_s", p.tokens_per_s);
  v.field("mfu", p.mfu);
  v.field("hfu", p.hfu);
  v.field("model_tflops_per_gpu", p.model_tflops_per_gpu);
  v.field("bubble_s", p.bubble_s);
  v.field("stage_time_s", p.stage_time_s);
  v.field("stage_memory_GiB", p.stage_memory_GiB);
  v.field("fits", p.fits);
  v.optional("time_source", p.time_source, TimeSource::analytic);  // plans from before profile corrections
}

template <class V, Of<SearchStats> S>
void describe(V& v, S& s) {
  v.field("strategy", s.strategy);
  v.field("evaluated", s.evaluated);
  v.field("pruned", s.pruned);
  v.field("cache_hits", s.cache_hits);
  v.field("cache_misses", s.cache_misses);
  v.field("wall_s", s.wall_s);
  v.field("ranks", s.ranks);
  v.field("threads", s.threads);
  v.optional("bound_s", s.bound_s, 0.0);  // plans from before proven bounds: nothing proven
  v.optional("gap", s.gap, 1.0);
}

// A plan that was never estimated has no stage times; one that did not come
// from a search has no strategy. A file writing their zeros would read as
// results.
inline bool estimated(const PredictedPerformance& p) { return !p.stage_time_s.empty(); }
inline bool searched(const SearchStats& s) { return !s.strategy.empty(); }

template <class V, Of<Plan> P>
void describe(V& v, P& p) {
  v.tag("format", kPlanFormat);  // first, so a file of another kind is named as such
  v.field("model", p.model);
  v.field("cluster", p.cluster);
  v.field("global_batch", p.global_batch);
  v.field("micro_batch_size", p.micro_batch_size);
  v.field("num_micro_batches", p.num_micro_batches);
  v.optional("vpp", p.vpp, 1);  // plans from before interleaving
  v.field("zero", p.zero);
  v.list("stages", p.stages, "a list of stages", "a mapping (one stage)");
  v.section("predicted", p.predicted, estimated);
  v.section("search", p.search, searched);
  v.specs("specs", p.specs);
}

}  // namespace plan_schema
}  // namespace autohaap
