#include "autohaap/io/plan_printer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autohaap/report/timeline.hpp"
#include "autohaap/units.hpp"

namespace autohaap {
namespace {

// A fit closer to capacity than this is within the memory model's error
// against measured peaks (tests/unit/measured_runs_test.cpp): say so.
constexpr double kTightFraction = 0.05;

std::string printf_string(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string layer_range(const StagePlan& s) {
  return printf_string("[%d,%d)", s.layer_begin, s.layer_end);
}

// "tp x dp", or "tp x cp x dp" where the stage splits its sequences.
std::string parallel_degrees(const StagePlan& s, const char* separator) {
  std::string out = std::to_string(s.tp) + separator;
  if (s.cp > 1) out += std::to_string(s.cp) + separator;
  return out + std::to_string(s.dp);
}

}  // namespace

std::string replica_set_label(int stage_index, std::size_t set_index) {
  return std::to_string(stage_index) +
         (set_index < 26 ? std::string(1, static_cast<char>('a' + set_index)) : "." + std::to_string(set_index));
}

std::vector<StageRow> stage_rows(const CostModel& model, const Plan& plan, int i) {
  const StagePlan& s = plan.stages.at(i);
  if (!s.has_replica_sets())
    return {{std::to_string(i), s.device, s.group, s.first_gpu, s.gpus, s.dp, plan.micro_batch_size, false, false,
             model.stage(plan, i)}};
  const std::vector<StageEstimate> sets = model.replica_set_estimates(plan, i);
  std::vector<StageRow> rows;
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const ReplicaSet& r = s.replicas[k];
    rows.push_back({replica_set_label(i, k), r.device, r.group, r.first_gpu, r.gpus, s.set_replicas(k), r.sequences,
                    true, false, sets[k]});
  }
  rows[CostModel::pacing_set(sets)].paces = true;
  return rows;
}

std::string format_stage_table(const CostModel& model, const Plan& plan) {
  const bool any_cp = std::any_of(plan.stages.begin(), plan.stages.end(), [](const StagePlan& s) { return s.cp > 1; });
  std::string out = printf_string("%-5s %-10s %5s %11s %-10s %-9s %9s %9s %8s %8s %8s %8s %8s %s\n", "stage", "device",
                                  "gpus", any_cp ? "tp x cp x dp" : "tp x dp", "layers", "recompute", "fwd ms", "bwd ms", "send ms", "sync ms",
                                  "opt ms", "mem GiB", "cap GiB", "fits");
  bool any_sets = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const StagePlan& s = plan.stages[i];
    for (const StageRow& row : stage_rows(model, plan, i)) {
      const StageEstimate& e = row.estimate;
      StagePlan shown = s;
      shown.dp = row.dp;
      const std::string tpdp = parallel_degrees(shown, " x ");
      std::string line = printf_string("%-5s %-10s %5d %11s %-10s %-9s %9.2f %9.2f %8.2f %8.2f %8.2f %8.2f %8.2f %s",
                                       row.label.c_str(), row.device.c_str(), row.gpus, tpdp.c_str(),
                                       layer_range(s).c_str(), to_string(s.recompute), e.forward_s * 1e3,
                                       e.backward_s * 1e3, e.p2p_s * 1e3, e.dp_sync_s * 1e3, e.optimizer_s * 1e3,
                                       e.memory.total() / kGiB, e.capacity_bytes / kGiB, e.fits() ? "yes" : "NO");
      if (row.replica_set) {
        any_sets = true;
        line += printf_string("  %d of %d sequences%s", row.sequences, plan.micro_batch_size,
                              row.paces ? ", slowest" : "");
      }
      out += line + "\n";
    }
  }
  // Each stage's estimate, once, for the notes below that read them.
  std::vector<StageEstimate> stages;
  if (!model.problem().profiles.empty() || plan.vpp > 1)
    for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) stages.push_back(model.stage(plan, i));
  if (any_sets)
    out += "stages 'Na', 'Nb', ...: the replica sets of stage N, each on its own device with its share of each "
           "micro-batch (tp x dp: its replicas); the slowest paces the stage, the gradient sync spans all of them\n";
  // With measured profiles: where each stage's times come from, and the
  // factors that scaled the unmeasured ones (cost/profile_correction.hpp).
  if (!model.problem().profiles.empty()) {
    out += "stage times:";
    bool edges_apart = false;
    for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
      const StageEstimate& e = stages[i];
      out += printf_string(" %d %s", i, to_string(e.time_source));
      if (e.layers_source != e.time_source) {
        out += printf_string(" (layers %s)", to_string(e.layers_source));
        edges_apart = true;
      }
    }
    out += " (measured: every op profiled; corrected: the roofline times a profile's measured / analytic factor)\n";
    if (edges_apart)
      out += "a stage's source is its least measured part's; '(layers ...)' names its transformer layers' where its "
             "embedding or output layer, which the profiles do not measure, is less measured\n";
    for (const CorrectionFactor& c : model.profile_correction().factors())
      out += printf_string("profile correction %s %s: x%.3f, median of %d measured points (x%.3f..x%.3f)\n",
                           c.device.c_str(), c.op.c_str(), c.factor, c.points, c.min_ratio, c.max_ratio);
  }
  if (plan.vpp > 1) {
    out += printf_string("interleaved 1F1B: %d chunks per stage; fwd/bwd are all of a stage's chunks for one "
                         "micro-batch, send all of its chunks' transfers\n",
                         plan.vpp);
    // Chunks that differ across stages (unequal layers, a remainder of
    // layers, the output layer in the last chunk): Megatron-LM runs each
    // chunk for a group of micro-batches in turn, so a stage's steps differ
    // and the stages wait for each other's. The estimate counts a stage's
    // chunks together; the schedule's event simulation (report/
    // timeline.hpp) runs the plan's chunks as they are. Said where the two
    // differ by more than 2%.
    const double estimated = CostModel::iteration_time_1f1b(stages, plan.num_micro_batches, plan.vpp);
    if (static_cast<int>(plan.stages.size()) <= kMaxTimelineStages && plan.num_micro_batches >= 1) {
      const double simulated = plan_timeline(plan, stages).iteration_s;
      if (std::abs(simulated - estimated) > 0.02 * estimated)
        out += printf_string(
            "note: Megatron-LM runs each chunk for a group of micro-batches in turn; with these chunks (unequal "
            "in time across stages: unequal layers or devices, or the output layer in the last chunk) its "
            "schedule, simulated event by event, takes %.4g s (%+.0f%%) against the %.4g s estimated, which "
            "counts a stage's chunks together\n",
            simulated, 100 * (simulated - estimated) / estimated, estimated);
    }
  }
  // An fp8 plan on a device without FP8 runs that stage's GEMMs (or that
  // replica set's) in 16 bits.
  const Problem& problem = model.problem();
  if (problem.training.precision == Precision::fp8) {
    auto note = [&](const std::string& label, int group) {
      const DeviceSpec& d = problem.cluster.groups.at(group).device;
      if (!gemms_in_fp8(problem.training.precision, d))
        out += printf_string("stage %s (%s) has no FP8: its GEMMs run in %s\n", label.c_str(), d.name.c_str(),
                             d.has_bf16 ? "BF16" : "FP16");
    };
    for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
      const StagePlan& s = plan.stages[i];
      if (!s.has_replica_sets()) note(std::to_string(i), s.group);
      for (std::size_t k = 0; k < s.replicas.size(); ++k) note(replica_set_label(i, k), s.replicas[k].group);
    }
  }
  return out;
}

std::string format_memory_table(const CostModel& model, const Plan& plan) {
  std::string out = printf_string("%-5s %9s %9s %9s %11s %8s %9s %9s %9s %9s\n", "stage", "weights", "grads",
                                  "optim", "activations", "logits", "runtime", "allocator", "headroom", "total");
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    for (const StageRow& row : stage_rows(model, plan, i)) {
      const MemoryBreakdown& m = row.estimate.memory;
      out += printf_string("%-5s %9.2f %9.2f %9.2f %11.2f %8.2f %9.2f %9.2f %9.2f %9.2f\n", row.label.c_str(),
                           m.weights / kGiB, m.gradients / kGiB, m.optimizer / kGiB, m.activations / kGiB,
                           m.logits / kGiB, m.runtime / kGiB, m.allocator / kGiB, m.headroom / kGiB, m.total() / kGiB);
    }
  }
  out += "runtime: CUDA context and NCCL buffers; allocator: caching-allocator fragmentation of activations and "
         "logits (under deepspeed, of its optimizer's states too); headroom: the training file's safety margin "
         "(headroom_GiB)\n";
  return out;
}

std::string format_fit_problems(const CostModel& model, const Plan& plan) {
  std::string out;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    for (const StageRow& row : stage_rows(model, plan, i)) {
      const StageEstimate& e = row.estimate;
      const std::string where = (row.replica_set ? "stage " + row.label + " (replica set" : "stage " + row.label + " (") +
                                (row.replica_set ? " on " : "") + row.device + ", layers " + layer_range(plan.stages[i]) + ")";
      const double spare = e.capacity_bytes - e.memory.total();
      if (e.fits() && spare < kTightFraction * e.capacity_bytes) {
        out += printf_string("%s fits with only %.2f GiB to spare of %.2f GiB: the prediction's "
                             "own error is larger; raise headroom_GiB to refuse such plans\n",
                             where.c_str(), spare / kGiB, e.capacity_bytes / kGiB);
      }
      if (e.fits()) continue;
      out += printf_string("%s does not fit: needs %.2f GiB per GPU, has %.2f GiB (over by %.2f GiB)\n", where.c_str(),
                           e.memory.total() / kGiB, e.capacity_bytes / kGiB,
                           (e.memory.total() - e.capacity_bytes) / kGiB);
    }
  }
  return out;
}

std::string format_summary_block(const Plan& plan, PlanStatus status,
                                 const std::vector<std::pair<std::string, std::string>>& extra) {
  const PredictedPerformance& p = plan.predicted;
  const double max_mem = p.stage_memory_GiB.empty()
                             ? 0.0
                             : *std::max_element(p.stage_memory_GiB.begin(), p.stage_memory_GiB.end());
  std::string stages;
  for (const StagePlan& s : plan.stages) {
    if (!stages.empty()) stages += " | ";
    stages += s.devices() + " " + parallel_degrees(s, "x") + " " + layer_range(s) + " " +
              to_string(s.recompute);
  }
  std::string out = "== AutoHAAP summary ==\n";
  out += std::string("status              : ") + summary_label(status) + "\n";
  out += "model               : " + plan.model + "\n";
  out += "cluster             : " + plan.cluster + "\n";
  out += printf_string("gpus                : %d\n", plan.num_gpus());
  out += printf_string("pipeline_stages     : %zu\n", plan.stages.size());
  out += printf_string("vpp                 : %d\n", plan.vpp);
  out += "stages              : " + stages + "\n";
  out += printf_string("micro_batch_size    : %d\n", plan.micro_batch_size);
  out += printf_string("num_micro_batches   : %d\n", plan.num_micro_batches);
  out += printf_string("iteration_time_s    : %.6g\n", p.iteration_time_s);
  out += printf_string("tokens_per_s        : %.6g\n", p.tokens_per_s);
  out += printf_string("mfu                 : %.4f\n", p.mfu);
  out += printf_string("hfu                 : %.4f\n", p.hfu);
  // MFU counts a causal model's whole score matrix, as Megatron-LM and
  // torchtitan count it, so it compares with their figures; a fused
  // kernel computes half of it (hfu, cost_model.cpp). At long sequences
  // that half is most of the work, and mfu passes hfu (and can pass 1):
  // said where it does, rather than read as more work than was done.
  if (p.mfu > p.hfu)
    out += "mfu_counts          : the whole causal score matrix (Megatron-LM, torchtitan); the fused attention "
           "kernel computes half, which hfu counts\n";
  out += printf_string("tflops_per_gpu      : %.2f\n", p.model_tflops_per_gpu);
  out += printf_string("max_memory_GiB      : %.2f\n", max_mem);
  out += std::string("fits                : ") + (p.fits ? "yes" : "no") + "\n";
  if (!plan.search.strategy.empty()) {
    const SearchStats& s = plan.search;
    out += "strategy            : " + s.strategy + "\n";
    out += printf_string("evaluated           : %lld\n", static_cast<long long>(s.evaluated));
    out += printf_string("pruned              : %lld\n", static_cast<long long>(s.pruned));
    out += printf_string("cache_hits          : %lld\n", static_cast<long long>(s.cache_hits));
    out += printf_string("cache_misses        : %lld\n", static_cast<long long>(s.cache_misses));
    out += printf_string("wall_s              : %.3f\n", s.wall_s);
    out += printf_string("ranks               : %d\n", s.ranks);
    out += printf_string("threads             : %d\n", s.threads);
    // The search's proven lower bound on the optimum and the relative gap
    // of its best plan to it (plan.hpp: SearchStats).
    out += printf_string("bound_s             : %.6g\n", s.bound_s);
    out += printf_string("gap                 : %.4f\n", s.gap);
  }
  for (const auto& [key, value] : extra) out += printf_string("%-20s: ", key.c_str()) + value + "\n";
  out += "== end summary ==\n";
  return out;
}

}  // namespace autohaap
