#include "autohaap/search/mixed_stages.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "autohaap/search/cluster_merge.hpp"
#include "autohaap/search/refinement.hpp"
#include "autohaap/search/replica_shares.hpp"
#include "autohaap/search/search_space.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {
namespace {

constexpr double kNoPlan = std::numeric_limits<double>::infinity();

// GPUs [begin, end) of one group that no stage or replica set uses, never
// across two parts of a merged group (cluster.hpp NodeGroup::parts).
struct FreeRange {
  int group = 0, begin = 0, end = 0;
};

std::vector<FreeRange> free_ranges(const Plan& plan, const ClusterSpec& cluster) {
  std::vector<std::vector<std::pair<int, int>>> used(cluster.groups.size());
  for (const StagePlan& s : plan.stages) {
    if (!s.has_replica_sets()) used.at(s.group).emplace_back(s.first_gpu, s.first_gpu + s.gpus);
    for (const ReplicaSet& r : s.replicas) used.at(r.group).emplace_back(r.first_gpu, r.first_gpu + r.gpus);
  }
  std::vector<FreeRange> out;
  for (int g = 0; g < static_cast<int>(cluster.groups.size()); ++g) {
    const NodeGroup& group = cluster.groups[g];
    auto& ranges = used[g];
    std::sort(ranges.begin(), ranges.end());
    auto add = [&](int begin, int end) {
      const int part = group.part_gpus();
      for (int b = begin; b < end;) {
        const int e = std::min(end, (b / part + 1) * part);
        out.push_back({g, b, e});
        b = e;
      }
    };
    int at = 0;
    for (const auto& [begin, end] : ranges) {
      if (begin > at) add(at, begin);
      at = std::max(at, end);
    }
    if (at < group.gpus()) add(at, group.gpus());
  }
  return out;
}

// `ranges` less each wholly free group identical (cluster_merge.hpp
// identical_groups) to a wholly free group before it: a set on either is
// priced alike, and the first is the one a strict improvement would pick.
// A group holding part of the plan is never dropped (its stages' links
// differ). Why: 300 one-node groups of one kind took 46 s in these rounds,
// every round pricing the same set on each free group.
std::vector<FreeRange> wholly_free_classes(const std::vector<FreeRange>& ranges, const ClusterSpec& cluster) {
  std::vector<FreeRange> out;
  std::vector<int> free_kinds;  // the wholly free groups kept
  for (const FreeRange& r : ranges) {
    const NodeGroup& g = cluster.groups.at(r.group);
    if (r.begin == 0 && r.end == g.gpus()) {
      const bool seen = std::any_of(free_kinds.begin(), free_kinds.end(),
                                    [&](int k) { return identical_groups(cluster.groups.at(k), g); });
      if (seen) continue;
      free_kinds.push_back(r.group);
    }
    out.push_back(r);
  }
  return out;
}

// The replica counts tried for a range holding at most `most`: 1, 2, 4, ...
// and `most` itself.
std::vector<int> replica_counts(int most) {
  std::vector<int> out;
  for (int r = 1; r < most; r *= 2) out.push_back(r);
  if (most >= 1) out.push_back(most);
  return out;
}

// At most this many micro-batch sizes per move (the smallest): a bound on
// the work of a move whatever the global batch's divisors.
constexpr std::size_t kMostMicroBatchesPerMove = 16;

// The divisors of `n`, ascending, each once, in O(sqrt(n)).
std::vector<int> divisors_of(int n) {
  std::vector<int> out;
  for (int d = 1; static_cast<long long>(d) * d <= n; ++d)
    if (n % d == 0) out.insert(out.end(), {d, n / d});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Micro-batch sizes to try once stage `i` has `replicas` replicas, from
// the plan's B (and one sequence per replica) up: where the training
// file's sizes are per pipeline (the default), those it lists that divide
// the global batch (of `listed`, the search's own, which holds those that
// do not too: the walk counts them under their prune rule); where they are per
// replica (micro_batch_per_replica), the divisors of the global batch
// (`batch_divisors`) up to the larger of the search's largest B and the
// largest per-replica size times those replicas.
std::vector<int> micro_batches_to_try(const Problem& problem, const Plan& plan, int replicas,
                                      const std::vector<int>& listed, const std::vector<int>& batch_divisors) {
  const std::vector<int>& per_replica = problem.training.micro_batch_sizes;
  const bool each_replica = problem.training.micro_batch_per_replica;
  long long most = listed.empty() ? 0 : listed.back();
  if (each_replica && !per_replica.empty())
    most = std::max(most, static_cast<long long>(*std::max_element(per_replica.begin(), per_replica.end())) * replicas);
  most = std::min<long long>(most, plan.global_batch);
  std::vector<int> out;
  for (int b : each_replica ? batch_divisors : listed)
    if (b >= std::max(plan.micro_batch_size, replicas) && b <= most && plan.global_batch % b == 0 &&
        out.size() < kMostMicroBatchesPerMove)
      out.push_back(b);
  return out;
}

// Under --profiles-only, whether every stage and replica set runs a layer
// the profiles measure: its device, tp and sequences per replica (what the
// search's layout_rule asks of a stage of one device). A set of another
// device, or a B that changes a replica's share, can leave the measured
// points the search kept to.
bool on_profiled_points(const Problem& problem, const Plan& plan) {
  if (!problem.profiles_only) return true;
  const int seq_len = problem.seq_len();
  for (const StagePlan& s : plan.stages) {
    if (!s.has_replica_sets()) {
      if (!problem.profiles.measures_layer(s.device, s.tp, plan.micro_batch_size / s.dp, seq_len)) return false;
      continue;
    }
    for (std::size_t k = 0; k < s.replicas.size(); ++k) {
      const ReplicaSet& r = s.replicas[k];
      const int replicas = s.set_replicas(k);
      if (r.sequences % replicas != 0 ||
          !problem.profiles.measures_layer(r.device, s.tp, r.sequences / replicas, seq_len))
        return false;
    }
  }
  return true;
}

// `plan` at micro-batch B with every mixed stage at its best shares, scored
// by candidate_time (search/refinement.hpp) against `least`, the plan
// given's time source; kNoPlan also when a one-device stage cannot share B
// evenly, a mixed stage has no split that fits, a stage leaves the measured
// points under --profiles-only (on_profiled_points) or `stop` says so.
double priced_at(const CostModel& model, Plan& plan, int B, TimeSource least, const StopCondition& stop) {
  plan.micro_batch_size = B;
  plan.num_micro_batches = plan.global_batch / B;
  std::vector<int> stage_layers;
  for (const StagePlan& s : plan.stages) stage_layers.push_back(s.num_layers());
  const Problem& problem = model.problem();
  if (!interleaving_searched(problem, plan.vpp, stage_layers, plan.num_micro_batches)) plan.vpp = 1;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    StagePlan& s = plan.stages[i];
    if (!s.has_replica_sets()) {
      if (B % s.dp != 0) return kNoPlan;
      continue;
    }
    const ReplicaShares shares = choose_replica_shares(model, plan, i, stop);
    if (!shares.found()) return kNoPlan;
    for (std::size_t k = 0; k < s.replicas.size(); ++k) s.replicas[k].sequences = shares.sequences[k];
  }
  if (!on_profiled_points(problem, plan)) return kNoPlan;
  return candidate_time(model, plan, least);
}

// The first GPU of `range` where a set of the stage's replicas may start,
// keeping each tensor-parallel group inside a node (a multiple of tp, tp
// dividing the node); -1 when the group's nodes cannot hold the stage's tp.
int set_start(const Problem& problem, const StagePlan& s, const FreeRange& range) {
  if (problem.cluster.groups.at(range.group).gpus_per_node % s.tp != 0) return -1;
  return (range.begin + s.tp - 1) / s.tp * s.tp;
}

// Stage i with one more set: `replicas` replicas from set_start of `range`;
// false when the range cannot hold them or the group cannot hold the
// stage's tp.
bool add_set(const Problem& problem, StagePlan& s, const FreeRange& range, int replicas) {
  const NodeGroup& g = problem.cluster.groups.at(range.group);
  const int first = set_start(problem, s, range);
  const int gpus = replicas * s.tp * s.cp;
  if (first < 0 || first + gpus > range.end) return false;
  // A set lies where a stage of its own GPUs may (the plan files' rule).
  if (!own_gpus_placement_allowed(first, gpus, g.gpus_per_node)) return false;
  if (stage_violation(problem.model, problem.seq_len(), problem.training.sequence_parallel, &g,
                      StageDegrees{s.tp, s.cp, replicas}, replicas))
    return false;
  if (!device_context_parallel_violation(g.device, problem.training.runtime, problem.model.head_dim(), s.cp).empty())
    return false;
  std::vector<ReplicaSet> sets = s.replicas;
  if (sets.empty()) sets.push_back({s.device, s.group, s.first_gpu, s.gpus, 0});
  sets.push_back({g.device.name, range.group, first, gpus, 0});
  set_replica_sets(s, std::move(sets));
  return true;
}

// The largest replica count of the stage's shape that `range` holds.
int most_replicas(const Problem& problem, const StagePlan& s, const FreeRange& range) {
  const int first = set_start(problem, s, range);
  return first < 0 ? 0 : std::max(0, (range.end - first) / (s.tp * s.cp));
}

// A stage whose replica sets are one run of GPUs of one group, every
// replica with the same share of the micro-batch, laid out as a stage of
// its own GPUs may lie (own_gpus_placement_allowed, within one part of a
// merged group): that stage, with the sets' replicas as its dp. The same
// GPUs and work; the answer lists it as the plain stage the search's own
// space holds (a100-80gb:1x2, not a100-80gb+a100-80gb:1x(1+1)), so the two
// are one plan, not two.
void own_gpus_where_one_run(const Problem& problem, StagePlan& s) {
  if (!s.has_replica_sets()) return;
  std::vector<ReplicaSet> sets = s.replicas;
  std::sort(sets.begin(), sets.end(), [](const ReplicaSet& a, const ReplicaSet& b) { return a.first_gpu < b.first_gpu; });
  const int width = s.tp * s.cp;
  const ReplicaSet& first = sets.front();
  int end = first.first_gpu;
  for (const ReplicaSet& r : sets) {
    const bool same_share = static_cast<long long>(r.sequences) * (first.gpus / width) ==
                            static_cast<long long>(first.sequences) * (r.gpus / width);
    if (r.group != first.group || r.first_gpu != end || !same_share) return;
    end += r.gpus;
  }
  const NodeGroup& g = problem.cluster.groups.at(first.group);
  const int part = g.part_gpus();
  if (!own_gpus_placement_allowed(first.first_gpu, end - first.first_gpu, g.gpus_per_node) ||
      first.first_gpu / part != (end - 1) / part)
    return;
  s.replicas.clear();
  s.group = first.group;
  s.device = g.device.name;
  s.first_gpu = first.first_gpu;
  s.gpus = end - first.first_gpu;
  s.dp = s.gpus / width;
}

}  // namespace

Plan add_idle_replica_sets(const CostModel& model, const Plan& plan, const StopCondition& stop) {
  const Problem& problem = model.problem();
  Plan best = plan;
  double best_time = candidate_time(model, best);
  if (best_time == kNoPlan) return best;  // only a plan that runs is improved
  const TimeSource least = best.predicted.time_source;
  // The B the search lists, ascending (searched_micro_batches, once per
  // plan: with micro_batch_per_replica it walks every group's layouts).
  const std::vector<int> listed = searched_micro_batches(problem);
  const std::vector<int> batch_divisors = divisors_of(plan.global_batch);

  for (bool improved = true; improved && !stop();) {
    improved = false;
    Plan round_best;
    double round_time = best_time;
    const std::vector<FreeRange> ranges = wholly_free_classes(free_ranges(best, problem.cluster), problem.cluster);
    for (int i = 0; i < static_cast<int>(best.stages.size()); ++i) {
      if (stop()) return best;  // the round unfinished: what the last whole round made
      for (const FreeRange& range : ranges) {
        if (stop()) return best;
        for (int r : replica_counts(most_replicas(problem, best.stages[i], range))) {
          Plan moved = best;
          if (!add_set(problem, moved.stages[i], range, r)) continue;
          for (int B : micro_batches_to_try(problem, moved, moved.stages[i].dp, listed, batch_divisors)) {
            Plan candidate = moved;
            const double t = priced_at(model, candidate, B, least, stop);
            if (t < round_time) {
              round_time = t;
              round_best = std::move(candidate);
            }
          }
        }
      }
    }
    if (round_time < best_time) {
      best_time = round_time;
      round_best.search = best.search;
      best = std::move(round_best);
      improved = true;
    }
  }
  // Sets that are a plain stage, as one: kept only where the price is the
  // same (it is the same work on the same GPUs).
  Plan plain = best;
  for (StagePlan& s : plain.stages) own_gpus_where_one_run(problem, s);
  if (candidate_time(model, plain, least) == best_time) {
    plain.search = best.search;
    return plain;
  }
  return best;
}

}  // namespace autohaap
