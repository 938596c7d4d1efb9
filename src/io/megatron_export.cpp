#include "autohaap/io/megatron_export.hpp"

#include <algorithm>
#include <functional>
#include <optional>

#include "autohaap/error.hpp"
#include "autohaap/io/megatron_layout.hpp"
#include "autohaap/plan_builder.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/specs/runnable_by.hpp"
#include "job_precision.hpp"

namespace autohaap {
namespace {

// "stage 2", "stages 0–1, 3": stage indices as compact ranges.
std::string stage_list(const std::vector<int>& stages) {
  std::string out = stages.size() == 1 ? "stage " : "stages ";
  for (std::size_t k = 0; k < stages.size();) {
    std::size_t e = k;
    while (e + 1 < stages.size() && stages[e + 1] == stages[e] + 1) ++e;
    if (k > 0) out += ", ";
    out += std::to_string(stages[k]);
    if (e > k) out += "–" + std::to_string(stages[e]);
    k = e + 1;
  }
  return out;
}

// "tp 4 (stages 0–1), tp 2 (stage 2)": stages [first, end) grouped by the
// property `describe` puts in words, in order of first use; `groups` counts
// the distinct values.
std::string grouped(const Plan& plan, int first, int end, const std::function<std::string(const StagePlan&)>& describe,
                    std::size_t* groups_out = nullptr) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // in first-use order
  for (int i = first; i < end; ++i) {
    const std::string v = describe(plan.stages[i]);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
    if (it == groups.end()) {
      groups.push_back({v, {i}});
    } else {
      it->second.push_back(i);
    }
  }
  if (groups_out) *groups_out = groups.size();
  std::string out;
  for (const auto& [value, stages] : groups) out += (out.empty() ? "" : ", ") + value + " (" + stage_list(stages) + ")";
  return out;
}

// The same when the stages disagree, else "".
std::string disagreement(const Plan& plan, int first, int end,
                         const std::function<std::string(const StagePlan&)>& describe) {
  std::size_t groups = 0;
  std::string out = grouped(plan, first, end, describe, &groups);
  return groups < 2 ? "" : out;
}

// "v100-32gb (stage 2)": the stages whose device lacks what `has` asks
// for, grouped by device; "" when every device has it. (With a negated
// `has`: the stages whose device has it.)
std::string stages_lacking(const Problem& problem, const Plan& plan,
                           const std::function<bool(const DeviceSpec&)>& has) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // device, its stages; in first-use order
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const StagePlan& s = plan.stages[i];
    if (has(problem.cluster.groups.at(s.group).device)) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == s.device; });
    if (it == groups.end()) {
      groups.push_back({s.device, {i}});
    } else {
      it->second.push_back(i);
    }
  }
  std::string out;
  for (const auto& [device, stages] : groups) out += (out.empty() ? "" : ", ") + device + " (" + stage_list(stages) + ")";
  return out;
}

bool gemms_in_fp8_everywhere(const Problem& problem, const Plan& plan) {
  for (const StagePlan& s : plan.stages) {
    if (!gemms_in_fp8(problem.training.precision, problem.cluster.groups.at(s.group).device)) return false;
  }
  return true;
}

}  // namespace

namespace {

// The 16-bit type Megatron-LM trains `plan` in (--bf16 or --fp16), none for
// fp32 and tf32: bf16 (and fp8's 16-bit part) where every stage's device
// has it, else fp16.
std::optional<Precision> megatron_sixteen_bit(const Problem& problem, const Plan& plan) {
  const Precision p = problem.training.precision;
  if (p == Precision::fp16) return Precision::fp16;
  if (p != Precision::bf16 && p != Precision::fp8) return std::nullopt;
  return detail::every_device_has_bf16(problem, plan) ? Precision::bf16 : Precision::fp16;
}

}  // namespace

std::string megatron_training_blocker(const Problem& problem, int zero) {
  const TrainingSpec& training = problem.training;
  // Megatron-LM's GPT embedding has no LayerNorm (BLOOM's is Megatron-
  // DeepSpeed's --embed-layernorm): a model costed with one is not its.
  if (problem.model.embedding_norm)
    return "the model's embedding_norm: true (a LayerNorm after the word embedding, BLOOM's) has no Megatron-LM "
           "flag; Megatron-DeepSpeed's --embed-layernorm runs it";
  if (training.optimizer == Optimizer::adam8bit)
    return "optimizer: adam8bit (8-bit Adam) is Megatron-DeepSpeed's --use-bnb-optimizer; stock Megatron-LM's "
           "--optimizer has no 8-bit Adam — train with optimizer: adam, or launch with Megatron-DeepSpeed";
  if (training.optimizer == Optimizer::sgd && zero >= 1)
    return "optimizer: sgd with zero: 1 (the distributed optimizer): Megatron-Core's DistributedOptimizer runs Adam "
           "only (it asserts an optimizer with an init_state_fn, which its SGD is built without) — train with "
           "zero: 0, or optimizer: adam";
  return "";
}

std::vector<std::string> megatron_blockers(const Plan& plan, const Problem& problem) {
  std::vector<std::string> why;
  if (const std::string any_layout = megatron_training_blocker(problem, plan.zero); !any_layout.empty())
    why.push_back(any_layout);
  // Megatron-LM reduces a 16-bit run's gradients in fp32 or in that type:
  // not bf16 training's in fp16, nor fp16 training's in bf16.
  if (const std::optional<Precision> sixteen = megatron_sixteen_bit(problem, plan);
      sixteen && grad_precision(problem.training) != Precision::fp32 && grad_precision(problem.training) != *sixteen)
    why.push_back(std::string("gradients reduced in ") + to_string(grad_precision(problem.training)) + " under " +
                  to_string(*sixteen) + " training: Megatron-LM reduces them in fp32 or in " + to_string(*sixteen) +
                  " — set grad_reduce_dtype to one of those");
  if (problem.model.family == ModelFamily::generic) {
    why.push_back("the model is a generic layer list; Megatron-LM's pretrain_gpt.py trains GPT and Llama transformers");
  }
  const int p = static_cast<int>(plan.stages.size());
  // Stages on different device types need no flag: the launcher puts each
  // pipeline rank on its nodes (io/hostfile.hpp, node_order). What every
  // rank must share is checked below.
  auto tp = [](const StagePlan& s) { return "tp " + std::to_string(s.tp); };
  auto dp = [](const StagePlan& s) { return "dp " + std::to_string(s.dp); };
  auto cp = [](const StagePlan& s) { return "cp " + std::to_string(s.cp); };
  auto recompute = [](const StagePlan& s) { return std::string(to_string(s.recompute)); };
  if (const std::string d = disagreement(plan, 0, p, tp); !d.empty()) {
    why.push_back("tensor-parallel degree differs across stages: " + d +
                  "; --tensor-model-parallel-size is one number");
  }
  if (const std::string d = disagreement(plan, 0, p, dp); !d.empty()) {
    why.push_back("data-parallel degree differs across stages: " + d +
                  "; Megatron-LM derives one dp from the world size");
  }
  if (const std::string d = disagreement(plan, 0, p, cp); !d.empty()) {
    why.push_back("context-parallel degree differs across stages: " + d +
                  "; --context-parallel-size is one number");
  }
  if (const std::string d = disagreement(plan, 0, p, recompute); !d.empty()) {
    why.push_back("recompute mode differs across stages: " + d + "; --recompute-granularity applies to every stage");
  }
  // Any layer split is expressible (--decoder-first/last-pipeline-num-layers
  // or --pipeline-model-parallel-layout). One precision for every rank is
  // required (megatron_shares_precision, specs/runnable_by.hpp: FP8 and
  // non-FP8 devices cannot share an fp8 run); the stages are named.
  const auto& device_of = [&](const StagePlan& s) -> const DeviceSpec& { return problem.cluster.groups.at(s.group).device; };
  const bool one_precision = std::all_of(plan.stages.begin(), plan.stages.end(), [&](const StagePlan& s) {
    return megatron_shares_precision(problem.training.precision, device_of(plan.stages.front()), device_of(s));
  });
  if (!one_precision) {
    const Precision fp8 = problem.training.precision;
    const std::string with =
        stages_lacking(problem, plan, [&](const DeviceSpec& d) { return !gemms_in_fp8(fp8, d); });
    const std::string without =
        stages_lacking(problem, plan, [&](const DeviceSpec& d) { return gemms_in_fp8(fp8, d); });
    if (!with.empty() && !without.empty()) {
      why.push_back("fp8 training on devices with and without FP8: FP8 on " + with + ", no FP8 on " + without +
                    "; Megatron-LM's --fp8-format applies to every rank — train in bf16 (precision: bf16), or "
                    "place every stage on FP8 devices");
    }
  }
  // Replica sets (plan.hpp): Megatron-LM splits each global batch evenly
  // over the data-parallel ranks (--micro-batch-size is per rank), so
  // replicas with unequal shares, or on other devices, cannot be expressed.
  for (int i = 0; i < p; ++i) {
    const StagePlan& s = plan.stages[i];
    if (!s.has_replica_sets()) continue;
    std::string shares;
    for (std::size_t k = 0; k < s.replicas.size(); ++k)
      shares += (k ? ", " : "") + std::to_string(s.set_replicas(k)) + " x " + s.replicas[k].device + " with " +
                std::to_string(s.replicas[k].sequences / s.set_replicas(k)) + " sequences each";
    why.push_back("stage " + std::to_string(i) +
                  (s.mixes_devices() ? " mixes device types in its replicas" : " splits its replicas into sets") +
                  " (" + shares +
                  "); Megatron-LM gives every data-parallel replica the same micro-batch on one range of ranks");
  }
  for (int i = 1; i + 1 < p; ++i)
    if (plan.stages[i].num_layers() == 0)
      why.push_back("stage " + std::to_string(i) +
                    " holds no transformer layer; Megatron-LM's pipeline layout gives a stage the embedding, the "
                    "output layer or layers, and only the first and the last stage can do without layers");
  if (plan.zero > kMegatronMaxZero) {
    why.push_back("ZeRO stage " + std::to_string(plan.zero) +
                  " shards gradients" + (plan.zero >= 3 ? " and weights" : "") +
                  "; Megatron-LM's --use-distributed-optimizer shards optimizer states only (ZeRO-1)");
  }
  return why;
}

std::vector<std::pair<std::string, std::string>> megatron_arguments(const Plan& plan, const Problem& problem) {
  const ModelSpec& m = problem.model;
  const TrainingSpec& tr = problem.training;
  const StagePlan& s0 = plan.stages.front();
  const int p = static_cast<int>(plan.stages.size());
  std::vector<std::pair<std::string, std::string>> a;
  auto add = [&a](std::string flag, std::string value = "") { a.emplace_back(std::move(flag), std::move(value)); };

  add("--tensor-model-parallel-size", std::to_string(s0.tp));
  add("--pipeline-model-parallel-size", std::to_string(p));
  if (s0.cp > 1) add("--context-parallel-size", std::to_string(s0.cp));
  // Megatron's micro-batch is per data-parallel replica (DESIGN.md "What a
  // micro-batch means"): B / dp.
  add("--micro-batch-size", std::to_string(plan.micro_batch_size / s0.dp));
  add("--global-batch-size", std::to_string(plan.global_batch));
  add("--num-layers", std::to_string(m.layers));
  add("--hidden-size", std::to_string(m.hidden));
  add("--ffn-hidden-size", std::to_string(m.ffn_hidden));
  add("--num-attention-heads", std::to_string(m.heads));
  if (m.kv_heads > 0 && m.kv_heads != m.heads) {
    add("--group-query-attention");
    add("--num-query-groups", std::to_string(m.kv_heads));
  }
  add("--seq-length", std::to_string(problem.seq_len()));
  add("--max-position-embeddings", std::to_string(std::max(m.seq_len, problem.seq_len())));
  if (m.family == ModelFamily::llama) {
    add("--position-embedding-type", "rope");
    add("--swiglu");
    add("--normalization", "RMSNorm");
    add("--disable-bias-linear");
  }
  if (!m.tied_embeddings) add("--untie-embeddings-and-output-weights");
  // FlashAttention where every stage's GPU runs it; where one does not (a
  // V100: Ampere or newer, fused_attention_kernel), the flag would stop
  // that rank at its first attention, and the plan was costed with
  // attention unfused there: Transformer Engine, Megatron-LM's default,
  // picks its fused kernel on the GPUs that have one and runs unfused on
  // the others. (Stages of replica sets are not expressible: each stage is
  // on its own device.) FlashAttention takes 16-bit inputs only: fp32 and
  // tf32 training run attention unfused, as they are costed.
  const bool every_gpu_fused = stages_lacking(problem, plan, [&](const DeviceSpec& d) {
                                 return fused_attention_kernel(d.architecture, Runtime::megatron, m.head_dim());
                               }).empty();
  if (m.flash_attention && every_gpu_fused && !full_precision(problem.training.precision)) add("--use-flash-attn");
  // Megatron-LM's dropout defaults are 0.1 in attention and after each
  // block; a model that trains without (Llama, BLOOM, MPT) is costed
  // without its masks, so the run must not draw them either.
  if (!m.dropout) {
    add("--attention-dropout", "0.0");
    add("--hidden-dropout", "0.0");
  }

  // The layer split: equal chunks need only their size; first and last
  // stages that differ from equal middle ones take
  // --decoder-first/last-pipeline-num-layers (Megatron divides the rest
  // evenly); any other split is written out whole as
  // --pipeline-model-parallel-layout (io/megatron_layout.hpp).
  std::vector<int> stage_layers;
  for (const StagePlan& s : plan.stages) stage_layers.push_back(s.num_layers());
  const auto equal_to = [&](int from, int to, int n) {
    return std::all_of(stage_layers.begin() + from, stage_layers.begin() + to, [n](int l) { return l == n; });
  };
  const auto write_layout = [&] {
    std::string quoted(1, '"');  // for the shell: '|' and '*' stay text
    quoted += format_megatron_layout(plan.chunk_cut());
    quoted += '"';
    add("--pipeline-model-parallel-layout", quoted);
  };
  // A first stage of the embedding alone ("E") or a last of the output
  // layer alone ("L") only the layout can say (megatron_blockers refuses
  // an empty stage between them).
  if (std::find(stage_layers.begin(), stage_layers.end(), 0) != stage_layers.end()) {
    write_layout();
  } else if (plan.vpp > 1) {
    const int per_chunk = m.layers / (p * plan.vpp);
    const bool even_chunks = std::all_of(plan.stages.begin(), plan.stages.end(), [&](const StagePlan& s) {
      for (int v = 0; v < plan.vpp; ++v)
        if (s.chunk(plan.vpp, v) != per_chunk) return false;
      return true;
    });
    if (even_chunks) {
      add("--num-layers-per-virtual-pipeline-stage", std::to_string(per_chunk));
    } else {
      write_layout();
    }
  } else if (p == 2) {
    if (stage_layers[0] != stage_layers[1]) add("--decoder-first-pipeline-num-layers", std::to_string(stage_layers[0]));
  } else if (p >= 3) {
    const int middle = stage_layers[1];
    if (!equal_to(1, p - 1, middle)) {
      write_layout();
    } else {
      if (stage_layers.front() != middle) add("--decoder-first-pipeline-num-layers", std::to_string(stage_layers.front()));
      if (stage_layers.back() != middle) add("--decoder-last-pipeline-num-layers", std::to_string(stage_layers.back()));
    }
  }

  switch (s0.recompute) {
    case Recompute::none: break;
    case Recompute::selective: add("--recompute-granularity", "selective"); break;
    case Recompute::full:
      // Every layer recomputed from its input: the cost model's "full".
      add("--recompute-granularity", "full");
      add("--recompute-method", "uniform");
      add("--recompute-num-layers", "1");
      break;
  }
  if (tr.sequence_parallel && s0.tp > 1) add("--sequence-parallel");
  if (plan.zero >= 1) add("--use-distributed-optimizer");
  if (tr.overlap_grad_reduce) {
    add("--overlap-grad-reduce");
    if (plan.zero >= 1) add("--overlap-param-gather");
  }
  const std::optional<Precision> sixteen = megatron_sixteen_bit(problem, plan);
  const bool as_bf16 = sixteen == Precision::bf16, as_fp16 = sixteen == Precision::fp16;
  if (as_bf16) add("--bf16");
  if (as_fp16) add("--fp16");
  // The gradients' reduce type as costed (grad_precision): Megatron-LM
  // reduces bf16 training's in fp32 unless --grad-reduce-in-bf16, fp16
  // training's in fp16 unless --accumulate-allreduce-grads-in-fp32
  // (megatron/training/arguments.py).
  if (as_bf16 && grad_precision(tr) == Precision::bf16) add("--grad-reduce-in-bf16");
  if (as_fp16 && grad_precision(tr) == Precision::fp32) add("--accumulate-allreduce-grads-in-fp32");
  // The loss as costed: a fused kernel keeps no fp32 copy of the logits.
  if (tr.fused_cross_entropy) add("--cross-entropy-loss-fusion");
  if (gemms_in_fp8_everywhere(problem, plan)) {
    // Transformer Engine's recipe as NeMo runs it: E4M3 forward, E5M2
    // gradients, delayed scaling over a 1024-step amax history.
    add("--fp8-format", "hybrid");
    add("--fp8-amax-history-len", "1024");
    add("--fp8-amax-compute-algo", "max");
  }
  // Megatron-LM's --optimizer takes adam or sgd (8-bit Adam blocks the
  // export: megatron_training_blocker).
  add("--optimizer", tr.optimizer == Optimizer::sgd ? "sgd" : "adam");
  return a;
}

std::string format_megatron_arguments(const Plan& plan, const Problem& problem, const std::string& node_order) {
  const StagePlan& s0 = plan.stages.front();
  const int p = static_cast<int>(plan.stages.size());
  std::size_t devices = 0;
  const std::string device_stages = grouped(plan, 0, p, [](const StagePlan& s) { return s.device; }, &devices);
  std::string out = std::string(kMegatronArgumentsHeading) + " (pretrain_gpt.py) for " + plan.model + " on " + plan.cluster + ": " +
                    std::to_string(p) + (p == 1 ? " stage" : " stages") + " x (tp " + std::to_string(s0.tp) +
                    (s0.cp > 1 ? " x cp " + std::to_string(s0.cp) : std::string()) + " x dp " +
                    std::to_string(s0.dp) + ") = " + std::to_string(plan.num_gpus()) + " GPUs " +
                    (devices == 1 ? "of " + s0.device : "on " + device_stages) + "\n";
  // Megatron-LM ties no rank to a device: the launcher must start the nodes
  // in the plan's rank order (io/hostfile.hpp, node_order).
  out += "# launch " + std::to_string(plan.num_gpus()) +
         " ranks node by node in the order of " + node_order + " (node rank = its position), "
         "so each stage runs on its devices; rank order: tensor-parallel fastest, then context-parallel, then "
         "data-parallel, then stage (GPU of each rank: --to hostfile)\n";
  // One precision flag for every rank: a device without BF16 takes the
  // whole run to FP16 with loss scaling.
  const Precision precision = problem.training.precision;
  if (precision == Precision::bf16 || precision == Precision::fp8) {
    if (const std::string lacking = stages_lacking(problem, plan, [](const DeviceSpec& d) { return d.has_bf16; });
        !lacking.empty()) {
      out += "# no BF16 on " + lacking + ": every rank trains in FP16 with loss scaling instead\n";
    }
  }
  if (precision == Precision::fp8 && !gemms_in_fp8_everywhere(problem, plan)) {
    // The blockers leave only plans with no FP8 device at all.
    out += "# no FP8 on " +
           stages_lacking(problem, plan, [&](const DeviceSpec& d) { return gemms_in_fp8(precision, d); }) +
           ": 16-bit GEMMs, as the estimate assumed\n";
  }
  if (precision == Precision::tf32)
    out += "# tf32: Megatron-LM has no flag; allow TF32 matmuls (NVIDIA_TF32_OVERRIDE=1 or "
           "torch.backends.cuda.matmul.allow_tf32 = True)\n";
  // The runtime the plan was costed under: Megatron-LM runs it with its
  // own allocations and sends, so a plan costed for another differs from
  // its estimate (gpt3-1.3b tp 2 x pp 2 x dp 2: 9.15 s under deepspeed,
  // 4.94 s under megatron).
  if (problem.training.runtime != Runtime::megatron)
    out += std::string("# costed under runtime ") + to_string(problem.training.runtime) +
           ": Megatron-LM runs it with its own memory and communication, so its time and memory differ from "
           "the estimate (price it with runtime: megatron to compare)\n";
  if (plan.vpp > 1)
    out += "# interleaved 1F1B: " + std::to_string(plan.vpp) + " model chunks per pipeline rank\n";
  out += "# vocabulary (" + std::to_string(problem.model.vocab) + ") comes from the tokenizer arguments\n";
  const auto args = megatron_arguments(plan, problem);
  for (std::size_t k = 0; k < args.size(); ++k) {
    out += args[k].first;
    if (!args[k].second.empty()) out += " " + args[k].second;
    out += k + 1 < args.size() ? " \\\n" : "\n";
  }
  return out;
}

std::optional<NearestMegatronPlan> nearest_megatron_plan(const Problem& problem, const Plan& plan) {
  if (problem.model.family == ModelFamily::generic) return std::nullopt;

  // GPUs the plan uses per device type, in order of first use.
  std::vector<std::pair<std::string, int>> budget;
  auto spend = [&](const std::string& device, int gpus) {
    auto it = std::find_if(budget.begin(), budget.end(), [&](const auto& b) { return b.first == device; });
    if (it == budget.end()) {
      budget.push_back({device, gpus});
    } else {
      it->second += gpus;
    }
  };
  for (const StagePlan& s : plan.stages) {
    if (!s.has_replica_sets()) spend(s.device, s.gpus);
    for (const ReplicaSet& r : s.replicas) spend(r.device, r.gpus);
  }

  std::optional<NearestMegatronPlan> best;
  for (const auto& [device, gpus] : budget) {
    // The same question on only this device type's node groups.
    std::vector<int> original_group;
    const Problem sub = restricted_to_device(problem, device, &original_group);
    if (sub.cluster.groups.empty()) continue;
    int min_gpn = sub.cluster.groups.front().gpus_per_node;
    for (const NodeGroup& group : sub.cluster.groups) min_gpn = std::min(min_gpn, group.gpus_per_node);
    // Scored on the full cluster (group indices of the candidates refer to
    // it); the cost model reads each candidate's batch and ZeRO stage.
    const CostModel model(problem);

    // Every tp the stage rule allows (a divisor of the heads, the key/value
    // heads and the GPUs of a node); build_uniform_plan applies the rule.
    for (int tp = 1; tp <= min_gpn; ++tp) {
      if (broken_stage_rule(problem.model, problem.seq_len(), problem.training.sequence_parallel, nullptr,
                            StageDegrees{tp, 1, 1}, 1))
        continue;
      for (int pp = 1; pp <= problem.model.layers && tp * pp <= gpus; ++pp) {
        const int max_dp = gpus / (tp * pp);
        for (int dp = max_dp; dp >= 1 && 2 * tp * pp * dp > gpus; --dp) {
          for (const int b : problem.training.micro_batch_sizes) {
            for (const Recompute r : problem.training.recompute_modes) {
              UniformPlanRequest req;
              req.tp = tp, req.pp = pp, req.dp = dp, req.micro_batch_per_replica = b, req.recompute = r;
              req.global_batch = plan.global_batch;
              req.zero = std::min(plan.zero, 1);
              UniformPlanResult built = build_uniform_plan(sub, req);
              if (!built.plan) continue;  // does not divide or place: not a candidate
              Plan& candidate = *built.plan;
              for (StagePlan& s : candidate.stages) s.group = original_group.at(s.group);
              if (!megatron_blockers(candidate, problem).empty()) continue;
              candidate.predicted = model.estimate(candidate);
              if (!candidate.predicted.fits) continue;
              const double t = candidate.predicted.iteration_time_s;
              if (!best || t < best->plan.predicted.iteration_time_s ||
                  (t == best->plan.predicted.iteration_time_s && candidate.num_gpus() < best->plan.num_gpus())) {
                best = NearestMegatronPlan{candidate, problem};
              }
            }
          }
        }
      }
    }
  }
  return best;
}

}  // namespace autohaap
