#include "autohaap/plan_builder.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "autohaap/error.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {

std::vector<int> even_split(int layers, int stages) {
  std::vector<int> ends;
  int end = 0;
  for (int c : stage_layer_counts(LayerSplit{}, layers, stages).counts) ends.push_back(end += c);
  return ends;
}

namespace {

// The named splits and their names, for parsing and writing alike.
struct NamedSplit {
  LayerSplit::Method method;
  const char* name;
};
constexpr NamedSplit kNamedSplits[] = {
    {LayerSplit::Method::even, "even"},
    {LayerSplit::Method::deepspeed_transformer, "type:transformer"},
    {LayerSplit::Method::deepspeed_transformer_embedding, "type:transformer|embedding"},
};

}  // namespace

LayerSplit parse_layer_split(const std::string& text, const std::string& source, const std::string& key) {
  LayerSplit split;
  for (const NamedSplit& named : kNamedSplits)
    if (text == named.name) {
      split.method = named.method;
      return split;
    }
  const std::string allowed =
      "even, type:transformer, type:transformer|embedding, or the layers of each stage as positive integers "
      "separated by commas (e.g. 7,7,6)";
  split.method = LayerSplit::Method::counts;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(item) <= 0)
      throw InputError(source, key, text, allowed);
    split.counts.push_back(std::stoi(item));
    begin = end + 1;
  }
  return split;
}

std::string layer_split_name(const LayerSplit& split) {
  for (const NamedSplit& named : kNamedSplits)
    if (split.method == named.method) return named.name;
  std::string text;
  for (int c : split.counts) text += (text.empty() ? "" : ",") + std::to_string(c);
  return text;
}

StageLayerCounts stage_layer_counts(const LayerSplit& split, int layers, int stages) {
  StageLayerCounts out;
  if (split.method == LayerSplit::Method::even) {
    for (int i = 0; i < stages; ++i) out.counts.push_back(layers / stages + (i < layers % stages ? 1 : 0));
    return out;
  }
  if (split.method == LayerSplit::Method::counts) {
    long long sum = 0;
    for (int c : split.counts) sum += c;
    if (static_cast<int>(split.counts.size()) != stages || sum != layers) {
      out.refusal = std::to_string(stages) + " counts (one per stage) that add up to the model's " +
                    std::to_string(layers) + " layers";
      return out;
    }
    out.counts = split.counts;
    return out;
  }
  // DeepSpeed's greedy fill at the least bottleneck: with unit weights the
  // bottleneck is ceil(items / stages) and each stage takes that many items
  // until none are left.
  const int slots = split.method == LayerSplit::Method::deepspeed_transformer_embedding ? 2 : 0;
  const long long items = static_cast<long long>(layers) + slots;
  const long long per_stage = (items + stages - 1) / stages;
  long long placed = 0;
  for (int i = 0; i < stages; ++i) {
    const long long begin = placed, end = std::min(items, placed + per_stage);
    placed = end;
    // Items [begin, end): slot 0 is the word embedding and slot items - 1
    // the output layer when they take slots.
    long long count = end - begin;
    if (slots > 0 && begin == 0 && end > 0) --count;
    if (slots > 0 && end == items && begin < items) --count;
    out.counts.push_back(static_cast<int>(std::max(0LL, count)));
  }
  for (int i = 0; i < stages; ++i) {
    if (out.counts[i] <= 0) {
      out.refusal = "a split that leaves every stage a transformer layer (" + std::to_string(layers) +
                    " layers" + (slots > 0 ? " + 2 embedding slots" : "") + " in stages of " +
                    std::to_string(per_stage) + " leave stage " + std::to_string(i) + " none)";
      out.counts.clear();
      return out;
    }
  }
  return out;
}

UniformPlanResult build_uniform_plan(const Problem& problem, const UniformPlanRequest& r) {
  const std::string src = "command line";
  auto refuse = [&](std::string flag, std::string value, std::string allowed) {
    return UniformPlanResult{std::nullopt, InputError(src, std::move(flag), std::move(value), std::move(allowed))};
  };
  for (const auto& [flag, v] : {std::pair{"--tp", r.tp}, {"--pp", r.pp}, {"--dp", r.dp}, {"--cp", r.cp},
                                {"--vpp", r.vpp}, {"--micro-batch", r.micro_batch_per_replica}}) {
    if (v <= 0) return refuse(flag, std::to_string(v), "a positive integer");
  }
  const ModelSpec& model = problem.model;
  if (const std::string pp_rule = pipeline_stages_violation(model, problem.training.runtime,
                                                            r.zero.value_or(problem.training.zero), r.pp);
      !pp_rule.empty())
    return refuse("--pp", std::to_string(r.pp), pp_rule);
  // Selective recompute replays the attention core (Korthikanti et al.
  // 2022); a list of generic layers has none, so it would be "none" under
  // another name.
  if (r.recompute == Recompute::selective && model.family == ModelFamily::generic)
    return refuse("--recompute", "selective",
                  "none or full (generic layers have no attention core for selective recompute to replay)");
  // Products in 64 bits: tp divides the heads and pp the layers (both
  // bounded by the model's validator), dp is bounded here first.
  const int total_gpus = problem.cluster.total_gpus();
  if (r.dp > total_gpus) {
    return refuse("--dp", std::to_string(r.dp), "at most the cluster's " + std::to_string(total_gpus) + " GPUs");
  }
  const long long B = static_cast<long long>(r.micro_batch_per_replica) * r.dp;
  const int G = r.global_batch.value_or(problem.training.global_batch);
  if (G % B != 0) {
    return refuse("--micro-batch", std::to_string(r.micro_batch_per_replica),
                  "micro-batch x dp (" + std::to_string(B) + ") must divide the global batch " + std::to_string(G));
  }
  // The stage rule before placement (every stage has these degrees), then
  // again on each stage's node group once placed.
  const StageDegrees degrees{r.tp, r.cp, r.dp};
  auto stage_refusal = [&](const StageViolation& v) {
    return refuse(std::string("--") + stage_field(v.rule), std::to_string(stage_field_value(v.rule, degrees)),
                  v.allowed);
  };
  // A runtime without context parallelism first: no model changes that.
  if (const std::string cp_rule = runtime_context_parallel_violation(problem.training.runtime, problem.training.precision, r.cp); !cp_rule.empty())
    return refuse("--cp", std::to_string(r.cp), cp_rule);
  if (const auto v = stage_violation(model, problem.seq_len(), problem.training.sequence_parallel, nullptr, degrees,
                                     static_cast<int>(B)))
    return stage_refusal(*v);
  const long long needed = static_cast<long long>(r.tp) * r.cp * r.pp * r.dp;
  if (needed > total_gpus) {
    return refuse("--tp x --cp x --pp x --dp", std::to_string(needed),
                  "at most the cluster's " + std::to_string(total_gpus) + " GPUs");
  }

  Plan plan;
  plan.model = model.name;
  plan.cluster = problem.cluster.name;
  plan.global_batch = G;
  plan.micro_batch_size = static_cast<int>(B);  // divides G
  plan.num_micro_batches = static_cast<int>(G / B);
  plan.vpp = r.vpp;
  plan.zero = r.zero.value_or(problem.training.zero);
  const StageLayerCounts split = stage_layer_counts(r.layer_split, model.layers, r.pp);
  if (!split.refusal.empty()) return refuse("--layer-split", layer_split_name(r.layer_split), split.refusal);
  const std::vector<int>& stage_layers = split.counts;
  std::vector<int> layer_end;
  for (int i = 0, end = 0; i < r.pp; ++i) layer_end.push_back(end += stage_layers[i]);
  const std::string vpp_rule =
      interleaving_violation(model, problem.training.runtime, r.vpp, stage_layers, plan.num_micro_batches);
  if (!vpp_rule.empty()) return refuse("--vpp", std::to_string(r.vpp), vpp_rule);
  const int stage_gpus = r.tp * r.cp * r.dp;
  int group = 0, next_gpu = 0;
  for (int i = 0; i < r.pp; ++i) {
    while (group < static_cast<int>(problem.cluster.groups.size()) &&
           next_gpu + stage_gpus > problem.cluster.groups[group].gpus()) {
      ++group;
      next_gpu = 0;
    }
    if (group >= static_cast<int>(problem.cluster.groups.size())) {
      return refuse("--pp", std::to_string(r.pp),
                    "stages of tp x cp x dp = " + std::to_string(stage_gpus) +
                        " GPUs that fit inside the cluster's node groups (a stage never spans two groups)");
    }
    const NodeGroup& g = problem.cluster.groups[group];
    if (const auto v = stage_violation(model, problem.seq_len(), problem.training.sequence_parallel, &g, degrees,
                                       static_cast<int>(B)))
      return stage_refusal(*v);
    if (const std::string cp_rule =
            device_context_parallel_violation(g.device, problem.training.runtime, problem.model.head_dim(), r.cp);
        !cp_rule.empty())
      return refuse("--cp", std::to_string(r.cp), cp_rule);
    // Where the stage's GPUs lie, by the rule plan files are read with: a
    // stage across part of a node (4 GPUs on nodes of 3) had been priced
    // here, its rings as if inside one node, and the plan then failed to
    // write (estimate -o).
    if (!own_gpus_placement_allowed(next_gpu, stage_gpus, g.gpus_per_node))
      return refuse("--tp x --cp x --dp", std::to_string(stage_gpus),
                    "stages that lie inside one node of " + std::to_string(g.gpus_per_node) +
                        " GPUs or on whole nodes (" + g.name + "'s nodes); stage " + std::to_string(i) +
                        " would take GPUs " + std::to_string(next_gpu) + ".." +
                        std::to_string(next_gpu + stage_gpus - 1) + " across part of a node");
    StagePlan s;
    s.group = group;
    s.device = g.device.name;
    s.first_gpu = next_gpu;
    s.gpus = stage_gpus;
    s.tp = r.tp;
    s.cp = r.cp;
    s.dp = r.dp;
    s.layer_begin = i == 0 ? 0 : layer_end[i - 1];
    s.layer_end = layer_end[i];
    s.recompute = r.recompute;
    plan.stages.push_back(s);
    next_gpu += s.gpus;
  }
  return UniformPlanResult{std::move(plan), std::nullopt};
}

Plan make_uniform_plan(const Problem& problem, const UniformPlanRequest& request) {
  UniformPlanResult result = build_uniform_plan(problem, request);
  if (result.refused) throw *result.refused;
  return std::move(*result.plan);
}

}  // namespace autohaap
