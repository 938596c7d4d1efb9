#include "autohaap/batch/fingerprint.hpp"

#include "autohaap/cost/cost_parameters.hpp"
#include "autohaap/search/search_options.hpp"

namespace autohaap {
std::string canonical_text(const Problem& problem) {
  CanonicalText l;
  l.add("profiles.size", problem.profiles.size());
  // Only when set, so fingerprints from before the option stay valid.
  if (problem.profiles_only) l.add("profiles_only", true);
  if (problem.runnable_by != RunnableBy::any) l.add("runnable_by", to_string(problem.runnable_by));
  for (const auto& [k, latency] : problem.profiles.entries()) {
    l.add("profile", k.device + "|" + k.op + "|" + std::to_string(k.tp) + "|" + std::to_string(k.micro_batch) + "|" +
                         std::to_string(k.seq_len) + "|" + std::to_string(k.layer) + "|" + canonical_number(latency));
  }
  return canonical_text(problem.model) + canonical_text(problem.cluster) + canonical_text(problem.training) + l.str();
}

std::string canonical_text(const CostParameters& cost) {
  CanonicalText l;
  l.add("cost.nvlink_efficiency", cost.nvlink_efficiency)
      .add("cost.network_efficiency", cost.network_efficiency)
      .add("cost.zero3_exposed_fraction", cost.zero3_exposed_fraction)
      .add("cost.dp_overlap", cost.dp_overlap)
      .add("cost.per_layer_overhead_s", cost.per_layer_overhead_s)
      .add("cost.deepspeed_tp_allreduce_s", cost.deepspeed_tp_allreduce_s)
      .add("cost.cuda_context_GiB", cost.cuda_context_GiB)
      .add("cost.nccl_GiB_per_communicator", cost.nccl_GiB_per_communicator)
      .add("cost.allocator_fragmentation", cost.allocator_fragmentation)
      .add("cost.checkpointed_fragmentation", cost.checkpointed_fragmentation)
      .add("cost.deepspeed_state_fragmentation", cost.deepspeed_state_fragmentation);
  return l.str();
}

std::string problem_fingerprint(const Problem& problem) {
  // The cost model's calibrated constants decide every latency as much as
  // the specs do; a recalibration must not reuse old answers.
  CanonicalText l;
  l.add("version", AUTOHAAP_VERSION);
  return hex64(fnv1a64(l.str() + canonical_text(CostParameters{}) + canonical_text(problem)));
}

std::string input_fingerprint(const Problem& problem, const BatchOptions& options) {
  CanonicalText l;
  l.add("problem", problem_fingerprint(problem));
  // Every search option a manifest sets, by its manifest key, but the
  // thread count: the answer does not depend on it (the search is
  // deterministic whatever its threads), and every other one can change it
  // (a tighter gap, mixed stages switched off, another skeleton limit).
  const SearchConfig config{options, {}};
  for (const SearchOption& option : kSearchOptions) {
    if (!option.in_manifest || option.name == "threads") continue;
    std::visit([&](auto member) { l.add(manifest_key(option), setting(config, member)); }, option.member);
  }
  return hex64(fnv1a64(l.str()));
}

}  // namespace autohaap
