#include "plan_problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/plan_fingerprints.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/specs/spec_fingerprint.hpp"
#include "autohaap/specs/training.hpp"
#include "autohaap/units.hpp"
#include "problem_args.hpp"

namespace autohaap::cli {
namespace {

// "note: ..." when the spec given is not the one the plan was made for.
template <class Spec>
std::string differs(const char* what, const std::string& flag, const Spec& given, const Spec& embedded,
                    const std::string& plan_file) {
  const std::string ours = spec_fingerprint(given), theirs = spec_fingerprint(embedded);
  if (ours == theirs) return "";
  return std::string("note: the ") + what + " given (" + flag + ") is not the one " + plan_file +
         " was made for (fingerprint " + ours + ", the plan's " + theirs + "); scored with the one given\n";
}

// "note: ..." when a spec embedded in the plan file is not what the file
// recorded for it when written: edited since (io/plan_fingerprints.hpp).
template <class Spec>
std::string edited(const char* what, const Spec& embedded, const std::map<std::string, std::string>& recorded,
                   const std::string& plan_file) {
  const auto it = recorded.find(what);
  const std::string now = spec_fingerprint(embedded);
  if (it == recorded.end() || it->second == now) return "";
  return std::string("note: the ") + what + " embedded in " + plan_file +
         " was edited after the plan was written (fingerprint " + now + ", written as " + it->second +
         "); scored as it stands\n";
}

}  // namespace

PlanProblem load_plan_problem(const std::string& plan_file, const ProblemArgs& args) {
  PlanProblem out;
  out.plan = read_plan(plan_file);
  const std::optional<PlanSpecs>& embedded = out.plan.specs;
  if (!embedded) {
    ProblemArgs named = args;
    if (named.model.empty()) named.model = out.plan.model;
    if (named.cluster.empty()) named.cluster = out.plan.cluster;
    try {
      out.problem = load_problem_args(named);
    } catch (const InputError& e) {
      // A name the plan gives that is neither a catalog entry nor a file:
      // said of the plan file that gave it.
      if (!e.file().empty()) throw;
      throw InputError(plan_file, e.key(), e.value(), e.allowed());
    }
    // The plan states its global batch, which its micro-batches make up;
    // the training's (the built-in 512, or a file's) is taken as the plan's,
    // so what the plan is written with again (export --to json embeds the
    // training) reads back: it had embedded 512 beside the plan's 64 and
    // was refused. A training file that says otherwise is told.
    TrainingSpec& training = out.problem.training;
    if (!args.train.empty() && training.global_batch != out.plan.global_batch)
      out.notes += "note: " + plan_file + " is priced at its own global batch of " +
                   std::to_string(out.plan.global_batch) + " sequences, not the " +
                   std::to_string(training.global_batch) + " of " + args.train + "\n";
    training.global_batch = out.plan.global_batch;
  } else {
    // Only what was given is loaded; the rest is the plan's own.
    Problem& p = out.problem;
    p.model = args.model.empty() ? embedded->model : load_model(args.model);
    p.cluster = args.cluster.empty() ? embedded->cluster : load_cluster(args.cluster);
    p.training = args.train.empty() ? embedded->training : load_training(args.train);
    check_training_for_model(p.model, p.training, args.train.empty() ? plan_file : args.train);
    if (!args.profiles.empty()) p.profiles = load_profiles_arg(args.profiles, p);
    const std::map<std::string, std::string> recorded = recorded_spec_fingerprints(plan_file);
    if (args.model.empty()) out.notes += edited("model", embedded->model, recorded, plan_file);
    if (args.cluster.empty()) out.notes += edited("cluster", embedded->cluster, recorded, plan_file);
    if (args.train.empty()) out.notes += edited("training", embedded->training, recorded, plan_file);
    if (!args.model.empty())
      out.notes += differs("model", "--model " + args.model, p.model, embedded->model, plan_file);
    if (!args.cluster.empty())
      out.notes += differs("cluster", "--cluster " + args.cluster, p.cluster, embedded->cluster, plan_file);
    if (!args.train.empty())
      out.notes += differs("training", "--train " + args.train, p.training, embedded->training, plan_file);
  }
  // A plan priced on measured profiles and read back without them is
  // priced by the analytic model: a different figure, said so (the plan
  // file records where its times came from, not which profiles).
  if (out.plan.predicted.time_source != TimeSource::analytic && args.profiles.empty())
    out.notes += std::string("note: ") + plan_file + " was priced on measured profiles (time_source: " +
                 to_string(out.plan.predicted.time_source) +
                 "); without --profiles it is priced by the analytic model here: give the same --profiles to "
                 "price it as it was written\n";
  check_plan_against(out.plan, out.problem, plan_file);
  // What the training's runtime runs (specs/parallel_rules.hpp); the plan
  // file's own checks are Megatron-LM's.
  const Runtime runtime = out.problem.training.runtime;
  std::vector<int> stage_layers;
  for (std::size_t i = 0; i < out.plan.stages.size(); ++i) {
    const StagePlan& s = out.plan.stages[i];
    stage_layers.push_back(s.num_layers());
    if (const std::string cp_rule = runtime_context_parallel_violation(runtime, out.problem.training.precision, s.cp); !cp_rule.empty())
      throw InputError(plan_file, "stages[" + std::to_string(i) + "].cp", std::to_string(s.cp), cp_rule);
    if (const std::string rule =
            stage_context_parallel_violation(out.problem.cluster, runtime, out.problem.model.head_dim(), s, s.cp);
        !rule.empty())
      throw InputError(plan_file, "stages[" + std::to_string(i) + "].cp", std::to_string(s.cp), rule);
  }
  const std::string vpp_rule =
      interleaving_violation(out.problem.model, runtime, out.plan.vpp, stage_layers, out.plan.num_micro_batches);
  if (!vpp_rule.empty()) throw InputError(plan_file, "vpp", std::to_string(out.plan.vpp), vpp_rule);
  const int stages = static_cast<int>(out.plan.stages.size());
  if (const std::string rule = pipeline_stages_violation(out.problem.model, runtime, out.plan.zero, stages);
      !rule.empty())
    throw InputError(plan_file, "stages", std::to_string(stages) + " stages", rule);
  // The plan's micro-batches are cut from its global batch, so it is scored
  // at that batch whatever a training file given says (its other settings
  // apply), and the note says so. A plan whose own specs disagree with it is
  // damaged.
  const int batch = out.problem.training.global_batch;
  if (batch != out.plan.global_batch) {
    if (!args.train.empty()) {
      out.notes += "note: --train " + args.train + " has global_batch " + std::to_string(batch) + "; the plan's " +
                   std::to_string(out.plan.global_batch) + " is kept (" + std::to_string(out.plan.num_micro_batches) +
                   " micro-batches of " + std::to_string(out.plan.micro_batch_size) +
                   "); search again for another batch\n";
      out.problem.training.global_batch = out.plan.global_batch;
    } else if (embedded) {
      throw InputError(plan_file, "specs.training.global_batch", std::to_string(batch),
                       "the plan's global_batch, " + std::to_string(out.plan.global_batch));
    }
  }
  // The ZeRO stage is the plan's (a plan field, as Megatron's
  // --use-distributed-optimizer is a launch flag), whatever a training
  // file given says: said so, as for the batch (a training file of zero 3
  // had been taken without a word for a plan of zero 1).
  if (!args.train.empty() && out.problem.training.zero != out.plan.zero)
    out.notes += "note: --train " + args.train + " has zero " + std::to_string(out.problem.training.zero) +
                 "; the plan's zero " + std::to_string(out.plan.zero) +
                 " is kept (a plan field: search again, or estimate --tp/--pp/--dp with --zero, for another)\n";
  // A plan priced here at another time or memory than its file says (other
  // profiles, specs edited, another version's cost model) is said to be,
  // with both: read back with latencies twice its own, 0.2417 s had become
  // 0.4576 s without a word, and a predicted block claiming 100 GiB that fit
  // on 40 GiB GPUs was read as it stood.
  const PredictedPerformance priced = CostModel(out.problem).estimate(out.plan);
  const std::vector<double>& file_GiB = out.plan.predicted.stage_memory_GiB;
  if (!file_GiB.empty() && file_GiB.size() == priced.stage_memory_GiB.size()) {
    const double was = *std::max_element(file_GiB.begin(), file_GiB.end());
    const double now = *std::max_element(priced.stage_memory_GiB.begin(), priced.stage_memory_GiB.end());
    if (std::abs(now - was) > 1e-3 * std::max(1.0, now) || out.plan.predicted.fits != priced.fits) {
      char line[512];
      std::snprintf(line, sizeof line,
                    "note: %s says %.2f GiB on its fullest GPU (%s); priced here %.2f GiB (%s)\n", plan_file.c_str(),
                    was, out.plan.predicted.fits ? "fits" : "does not fit", now, priced.fits ? "fits" : "does not fit");
      out.notes += line;
    }
  }
  if (const double was = out.plan.predicted.iteration_time_s; was > 0) {
    const double now = priced.iteration_time_s;
    if (std::abs(now / was - 1) > 1e-3) {
      char line[512];
      std::snprintf(line, sizeof line,
                    "note: %s says %.6g s an iteration; priced here %.6g s (%+.1f%%): the specs, profiles or cost "
                    "model it was written with differ from these\n",
                    plan_file.c_str(), was, now, 100 * (now / was - 1));
      out.notes += line;
    }
  }
  return out;
}

bool warn_if_out_of_memory(const PlanProblem& pp, const std::string& plan_file) {
  const CostModel model(pp.problem);
  // The stage that overflows most (by its share of its capacity), and how
  // many do: the first alone said too little when all of them did.
  int over = 0, worst = -1;
  double worst_ratio = 0, worst_need = 0, worst_has = 0;
  for (std::size_t i = 0; i < pp.plan.stages.size(); ++i) {
    const StageEstimate e = model.stage(pp.plan, static_cast<int>(i));
    if (e.fits()) continue;
    ++over;
    const double ratio = e.memory.total() / e.capacity_bytes;
    if (worst < 0 || ratio > worst_ratio) {
      worst = static_cast<int>(i);
      worst_ratio = ratio;
      worst_need = e.memory.total();
      worst_has = e.capacity_bytes;
    }
  }
  if (over == 0) return true;
  char line[320];
  std::snprintf(line, sizeof line,
                "warning: %s does not fit in memory: stage %d needs %.1f GiB per GPU of its %.1f GiB (%d of %zu "
                "stages overflow, this one the most); a run of it would run out of memory\n",
                plan_file.c_str(), worst, worst_need / kGiB, worst_has / kGiB, over, pp.plan.stages.size());
  std::cerr << line;
  return false;
}

}  // namespace autohaap::cli
