// The estimator against published measured training runs
// (tests/data/measured_runs.csv; each row cites its source: BigScience's
// BLOOM-176B configuration sweeps on 384 A100-80GB and its earlier V100
// runs, MosaicML llm-foundry's FSDP throughput tables on A100/H100, the
// Megatron-LM README tables, NeMo's and Megatron-Bridge's performance
// summaries, torchtitan's H100 memory readings and its H200 FP8 throughput).
// Every row with a complete configuration is scored as `autohaap estimate
// --tp --pp --dp --cp --vpp --micro-batch` would score it. Printed:
// per-source time error, memory error, measured OOMs, and the rank
// correlation of every configuration sweep. Asserted: the
// figures this version reaches, so a change that makes them worse fails.
// Nothing here is fitted per row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/device_measurements.hpp"
#include "autohaap/plan_builder.hpp"
#include "csv_table.hpp"
#include "rank_correlation.hpp"

namespace autohaap {
namespace {

using test_data::CsvRow;
using test_data::spearman;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Scored {
  std::string id, source, sweep;
  double measured_s = 0, predicted_s = 0;  // iteration time; 0 = not measured
  double measured_GiB = 0, predicted_GiB = 0;
  MemoryBreakdown fullest;                 // the fullest stage's, for the trace
  StageEstimate pacing;                    // the slowest stage's times, for the trace
  int micro_batches = 0;
  // The measured peak is PyTorch's caching-allocator reserve
  // (torch.cuda.max_memory_reserved, mem_kind torch_max_reserved), which
  // leaves out the CUDA context and NCCL's buffers; else what nvidia-smi
  // shows, all of it.
  bool torch_reserve = false;
  double capacity_GiB = 0;
  bool measured_oom = false, predicted_fits = true;
  double model_flops = 0;                  // per iteration, for ranking across shapes
  // Everything of the run's configuration but its micro-batch size, and
  // that size: runs with the same key differ only in it.
  std::string all_but_micro_batch;
  int micro_batch = 0;
};

// AUTOHAAP_TRACE_RUNS=1 prints every scored run (measured and predicted
// time and memory), to study where the model deviates.
bool tracing() { return std::getenv("AUTOHAAP_TRACE_RUNS") != nullptr; }

double number(const CsvRow& r, const char* key) {
  const std::string& v = r.at(key);
  return v.empty() ? 0.0 : std::stod(v);
}

// The source a row belongs to, for the per-source table.
std::string source_of(const CsvRow& r) {
  const std::string& s = r.at("sweep");
  if (s.rfind("bloom", 0) == 0) return "BLOOM sweeps (Megatron-DeepSpeed, A100-80GB)";
  if (s.rfind("tr3m", 0) == 0 || s.rfind("tr8", 0) == 0 || s.rfind("gpt2", 0) == 0)
    return "BigScience V100 (Megatron-DeepSpeed)";
  if (s.rfind("mpt", 0) == 0) return "MosaicML llm-foundry (FSDP)";
  if (s.rfind("semianalysis", 0) == 0) return "SemiAnalysis MI300X/H100 (PyTorch, torch.compile)";
  return r.at("framework");
}

// Devices to score with instead of the catalog's, by catalog name.
using DeviceOverrides = std::map<std::string, DeviceSpec>;

// A row's GPU: the catalog's, or one a source describes that the catalog
// does not list. torchtitan's H100 benchmarks ran on Grand Teton hosts
// whose H100s have 96 GB of HBM2e at 2.4 TB/s and a 500 W limit
// (benchmarks/llama3_h100_202412_torchtitan.md, "Hardware"); their rows
// score memory only, so only the capacity and bandwidth differ from the
// SXM part's. MosaicML's MI250 runs: the MI250 is the MI250X's module with
// 208 of its 220 compute units at the same clock, so 362.1 TFLOP/s BF16
// and 45.3 FP32 (90.5 on matrix cores) with the same 128 GB of HBM2e at
// 3.2 TB/s (AMD's MI250 and MI250X product pages).
DeviceSpec row_device(const std::string& gpu) {
  if (gpu == "h100-96gb-500w") {
    DeviceSpec d = catalog_device("h100-sxm");
    d.name = gpu;
    d.memory_GiB = 96;
    d.hbm_GBps = 2400;
    return d;
  }
  if (gpu == "mi250") {
    DeviceSpec d = catalog_device("mi250x");
    d.name = gpu;
    d.peak_tflops = 362.1;
    d.peak_fp32_tflops = 45.3;
    d.peak_tf32_tflops = 90.5;
    d.gemm_efficiency = architecture_gemm_curve(d.architecture, d.peak_tflops);
    return d;
  }
  return catalog_device(gpu);
}

std::optional<Scored> score(const CsvRow& r, const DeviceOverrides& devices = {}) {
  for (const char* k : {"tp", "pp", "dp", "micro_batch", "global_batch", "layers", "hidden", "ffn_hidden", "heads",
                        "vocab", "seq_len", "gpus", "gpus_per_node", "cp", "precision"})
    if (r.at(k).empty()) return std::nullopt;

  Problem p;
  ModelSpec& m = p.model;
  m.name = r.at("id");
  m.family = r.at("family") == "llama" ? ModelFamily::llama : ModelFamily::gpt;
  m.layers = std::stoi(r.at("layers"));
  m.hidden = std::stoi(r.at("hidden"));
  m.ffn_hidden = std::stoi(r.at("ffn_hidden"));
  m.heads = std::stoi(r.at("heads"));
  m.kv_heads = r.at("kv_heads").empty() ? m.heads : std::stoi(r.at("kv_heads"));
  m.vocab = std::stoi(r.at("vocab"));
  m.seq_len = std::stoi(r.at("seq_len"));
  m.tied_embeddings = r.at("tied_embeddings") == "true";
  m.flash_attention = r.at("flash_attention") == "true";
  m.dropout = m.family == ModelFamily::gpt;
  // BLOOM and MPT train without dropout (BLOOM's tr11 scripts set
  // --hidden-dropout 0 --attention-dropout 0; MPT has none); the earlier
  // BigScience and Megatron-LM runs keep Megatron's default 0.1.
  const std::string& sweep = r.at("sweep");
  if (sweep.rfind("bloom", 0) == 0 || sweep.rfind("mpt", 0) == 0) m.dropout = false;

  const int gpus = std::stoi(r.at("gpus")), gpn = std::stoi(r.at("gpus_per_node"));
  p.cluster.name = r.at("gpu");
  const auto overridden = devices.find(r.at("gpu"));
  const DeviceSpec device = overridden != devices.end() ? overridden->second : row_device(r.at("gpu"));
  p.cluster.groups = {make_node_group(device, std::max(1, gpus / gpn), std::min(gpus, gpn))};
  p.cluster.inter_group_GBps = kDefaultInterGroupGBps;
  // The node's NICs where the source states them (node_nic_Gbps, Gb/s per
  // node in all, over node_nics NICs: BLOOM's Jean Zay A100 nodes have 4
  // Omni-Path 100 Gb/s links, BigScience tr11-176B-ml README "Hardware";
  // torchtitan's Grand Teton hosts 8 x 400 Gb/s), as a cluster file's
  // nics_per_node x nic_Gbps; else the device's default.
  if (const double nic = number(r, "node_nic_Gbps"); nic > 0) {
    const int nics = static_cast<int>(number(r, "node_nics"));
    if (nics < 1) throw std::runtime_error(r.at("id") + ": node_nic_Gbps without node_nics");
    p.cluster.groups[0].nics_per_node = nics;
    p.cluster.groups[0].inter_node_GBps = nic_share_GBps(nics, nic / nics, p.cluster.groups[0].gpus_per_node);
  }
  // NCCL's all-reduce bus bandwidth where the cluster's owners measured it
  // (node_busbw_GBps: BigScience's all_reduce_bench on Jean Zay, cited in
  // the rows' notes), as a cluster file's inter_node_busbw_GBps.
  if (const double busbw = number(r, "node_busbw_GBps"); busbw > 0) p.cluster.groups[0].inter_node_busbw_GBps = busbw;

  TrainingSpec& t = p.training;
  t.global_batch = std::stoi(r.at("global_batch"));
  const std::string& precision = r.at("precision");
  t.precision = precision == "fp16" ? Precision::fp16
                : precision == "fp8" ? Precision::fp8
                : precision == "tf32" ? Precision::tf32
                : precision == "fp32" ? Precision::fp32
                                      : Precision::bf16;
  t.zero = r.at("zero").empty() ? 0 : std::stoi(r.at("zero"));
  // BigScience's 104B runs used 8-bit Adam (--use-bnb-optimizer).
  if (r.at("optimizer") == "adam8bit") t.optimizer = Optimizer::adam8bit;
  t.sequence_parallel = r.at("sequence_parallel") == "true";
  // The attention kernel the source states (llm-foundry's MPT tables: its
  // benchmark scripts' attn_impl, cited in each row's notes); else the
  // runtime's default.
  if (const std::string& k = r.at("attention_kernel"); !k.empty())
    t.attention_kernel = k == "triton" ? AttentionKernel::triton : k == "flash3" ? AttentionKernel::flash3 : AttentionKernel::flash2;
  t.headroom_GiB = 0;  // compare what the run held, without a user margin
  const std::string& framework = r.at("framework");
  if (framework.find("DeepSpeed") != std::string::npos) t.runtime = Runtime::deepspeed;
  // NeMo and Megatron-Bridge recipes run Megatron-Core's distributed
  // optimizer with the gradient reduce-scatter and parameter all-gather
  // overlapped (their comm-overlap settings: overlap_grad_reduce and
  // overlap_param_gather on).
  if (framework.find("Megatron-Core") != std::string::npos) t.overlap_grad_reduce = true;
  // PyTorch's DDP is the same eager PyTorch with nothing sharded: the
  // fsdp runtime at the row's zero 0.
  if (framework.find("FSDP") != std::string::npos || framework.find("DDP") != std::string::npos) {
    t.runtime = Runtime::fsdp;
    // llm-foundry's MPT yamls: loss_fn fused_crossentropy; torchtitan calls
    // PyTorch's cross_entropy on the fp32 upcast.
    t.fused_cross_entropy = framework.find("llm-foundry") != std::string::npos;
  }

  UniformPlanRequest q;
  q.tp = std::stoi(r.at("tp"));
  q.pp = std::stoi(r.at("pp"));
  q.dp = std::stoi(r.at("dp"));
  q.cp = std::stoi(r.at("cp"));
  q.vpp = r.at("vpp").empty() ? 1 : std::stoi(r.at("vpp"));
  q.micro_batch_per_replica = std::stoi(r.at("micro_batch"));
  q.recompute = parse_recompute(r.at("recompute")).value_or(Recompute::none);
  // The layers of each stage as the run's pipeline module split them
  // (pp_partition: Megatron-DeepSpeed's --pp-partition-method, cited in
  // the rows' notes); empty: Megatron-LM's even split.
  if (const std::string& split = r.at("pp_partition"); !split.empty())
    q.layer_split = parse_layer_split(split, "measured_runs.csv", "pp_partition");
  if (q.tp * q.pp * q.dp * q.cp != gpus) return std::nullopt;
  if (t.global_batch % (q.micro_batch_per_replica * q.dp) != 0) return std::nullopt;
  Plan plan;
  try {
    plan = make_uniform_plan(p, q);
  } catch (const InputError& e) {
    std::printf("not scored: %s: %s\n", r.at("id").c_str(), e.what());
    return std::nullopt;
  }
  const CostModel model(p);
  const PredictedPerformance pr = model.estimate(plan);

  Scored s;
  s.id = r.at("id");
  s.source = source_of(r);
  s.sweep = r.at("sweep");
  s.measured_s = number(r, "measured_iter_s");
  s.predicted_s = pr.iteration_time_s;
  s.measured_GiB = number(r, "measured_mem_GiB");
  const auto fullest = std::max_element(pr.stage_memory_GiB.begin(), pr.stage_memory_GiB.end());
  s.predicted_GiB = *fullest;
  s.fullest = model.stage(plan, static_cast<int>(fullest - pr.stage_memory_GiB.begin())).memory;
  s.capacity_GiB = model.capacity_bytes(0) / kGiB;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const StageEstimate e = model.stage(plan, i);
    if (i == 0 || e.pace_s() > s.pacing.pace_s()) s.pacing = e;
  }
  s.micro_batches = plan.num_micro_batches;
  if (tracing() && std::getenv("AUTOHAAP_TRACE_STAGES")) {
    std::printf("stages %s:", s.id.c_str());
    for (std::size_t i = 0; i < plan.stages.size(); ++i)
      std::printf(" [%d-%d) %.3f s %.1f GiB", plan.stages[i].layer_begin, plan.stages[i].layer_end, pr.stage_time_s[i],
                  pr.stage_memory_GiB[i]);
    std::printf("\n");
  }
  s.measured_oom = r.at("oom") == "true";
  s.torch_reserve = r.at("mem_kind") == "torch_max_reserved";
  s.predicted_fits = pr.fits;
  s.model_flops = model.model_flops_per_iteration();
  for (const char* k : {"sweep", "tp", "pp", "dp", "global_batch", "layers", "hidden", "heads", "precision", "zero",
                        "recompute", "pp_partition", "gpu"})
    s.all_but_micro_batch += r.at(k) + "|";
  s.micro_batch = q.micro_batch_per_replica;
  return s;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * (v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

std::vector<Scored> scored_runs(const DeviceOverrides& devices = {}) {
  std::vector<Scored> out;
  for (const CsvRow& r : test_data::read_csv("measured_runs.csv"))
    if (auto s = score(r, devices)) out.push_back(*s);
  return out;
}

TEST(MeasuredRuns, IterationTimePerSource) {
  const std::vector<Scored> runs = scored_runs();
  std::map<std::string, std::vector<double>> errors;
  std::vector<double> all;
  for (const Scored& s : runs) {
    if (s.measured_s <= 0) continue;
    const double e = (s.predicted_s - s.measured_s) / s.measured_s;
    errors[s.source].push_back(e);
    if (tracing())
      std::printf("trace %s %s %.3f %.3f %+.1f%% m %d pace fwd %.4f bwd %.4f p2p %.4f sync %.3f step %.3f\n",
                  s.id.c_str(), s.sweep.c_str(), s.measured_s, s.predicted_s, 100 * e, s.micro_batches,
                  s.pacing.forward_s, s.pacing.backward_s, s.pacing.p2p_s, s.pacing.dp_sync_s, s.pacing.optimizer_s);
    all.push_back(std::abs(e));
  }
  std::printf("%-48s %5s %9s %9s %9s\n", "source", "runs", "median", "|median|", "p90 |e|");
  for (const auto& [source, e] : errors) {
    std::vector<double> abs_e;
    for (double x : e) abs_e.push_back(std::abs(x));
    std::printf("%-48s %5zu %+8.1f%% %8.1f%% %8.1f%%\n", source.c_str(), e.size(), 100 * quantile(e, 0.5),
                100 * quantile(abs_e, 0.5), 100 * quantile(abs_e, 0.9));
  }
  std::printf("%-48s %5zu %9s %8.1f%% %8.1f%%\n", "all", all.size(), "", 100 * quantile(all, 0.5),
              100 * quantile(all, 0.9));
  ASSERT_GT(all.size(), 300u);
  // What this version reaches (README "Calibration"): a change that makes
  // either worse fails here.
  EXPECT_LE(quantile(all, 0.5), 0.05);
  EXPECT_LE(quantile(all, 0.9), 0.15);
}

// Under AUTOHAAP_TRACE_RUNS, a run's predicted peak by component (GiB).
void trace_memory(const Scored& s) {
  if (!tracing()) return;
  std::printf("trace-mem %s %.1f %.1f weights %.2f grads %.2f optimizer %.2f activations %.2f logits %.2f "
              "runtime %.2f allocator %.2f\n",
              s.id.c_str(), s.measured_GiB, s.predicted_GiB, s.fullest.weights / kGiB, s.fullest.gradients / kGiB,
              s.fullest.optimizer / kGiB, s.fullest.activations / kGiB, s.fullest.logits / kGiB,
              s.fullest.runtime / kGiB, s.fullest.allocator / kGiB);
}

TEST(MeasuredRuns, MemoryAndOutOfMemory) {
  const std::vector<Scored> runs = scored_runs();
  std::vector<double> errors;
  std::map<std::string, std::vector<double>> by_source;
  int ooms = 0, caught = 0, false_ooms = 0, measured_fit = 0;
  std::printf("%-16s %9s %9s %9s %s\n", "run", "measured", "predicted", "capacity", "verdict");
  for (const Scored& s : runs) {
    if (s.measured_oom) {
      ++ooms;
      caught += !s.predicted_fits;
      std::printf("%-16s %9s %9.1f %9.1f %s\n", s.id.c_str(), "OOM", s.predicted_GiB, s.capacity_GiB,
                  s.predicted_fits ? "MISSED: predicted to fit" : "caught");
      trace_memory(s);
      continue;
    }
    ++measured_fit;
    if (!s.predicted_fits) {
      ++false_ooms;
      std::printf("%-16s %9.1f %9.1f %9.1f %s\n", s.id.c_str(), s.measured_GiB, s.predicted_GiB, s.capacity_GiB,
                  "FALSE OOM");
    }
    if (s.measured_GiB > 0) {
      const double predicted = s.predicted_GiB - (s.torch_reserve ? s.fullest.runtime / kGiB : 0.0);
      errors.push_back((predicted - s.measured_GiB) / s.measured_GiB);
      by_source[s.source].push_back(errors.back());
      trace_memory(s);
    }
  }
  for (const auto& [source, e] : by_source)
    std::printf("memory %-48s %3zu runs, median error %+.1f%%\n", source.c_str(), e.size(), 100 * quantile(e, 0.5));
  std::vector<double> abs_e;
  for (double x : errors) abs_e.push_back(std::abs(x));
  std::printf("memory: %zu runs measured, median error %+.1f%%, median |error| %.1f%%, p90 |error| %.1f%%\n",
              errors.size(), 100 * quantile(errors, 0.5), 100 * quantile(abs_e, 0.5), 100 * quantile(abs_e, 0.9));
  std::printf("measured OOMs predicted not to fit: %d of %d; false OOMs: %d of %d runs that ran\n", caught, ooms,
              false_ooms, measured_fit);
  ASSERT_GT(errors.size(), 80u);
  // What this version reaches (README "Calibration"): no source's peaks
  // lean more than 3% either way, and half of all runs are within 5%.
  EXPECT_LE(std::abs(quantile(errors, 0.5)), 0.02);
  EXPECT_LE(quantile(abs_e, 0.5), 0.05);
  for (const auto& [source, e] : by_source) EXPECT_LE(std::abs(quantile(e, 0.5)), 0.03) << source;
  EXPECT_EQ(false_ooms, 0) << "a run that was measured must be predicted to fit";
  EXPECT_GE(caught, 9);
}

TEST(MeasuredRuns, TorchtitanOpLevelCheckpointingHoldsWhatItReserved) {
  // torchtitan's Llama 3.1 8B under FSDP2 with op-level selective
  // checkpointing and PyTorch's unfused fp32 cross-entropy, on 8 and 128
  // H100 96GB (benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3,
  // eager rows): 82.4 and 67.0 GiB reserved. Priced as Megatron's selective
  // recompute and its 6-byte loss, the 8-GPU run needed 108 GiB and did not
  // fit in 96; its activations and loss are now what that policy and that
  // loss keep.
  int seen = 0;
  for (const Scored& s : scored_runs()) {
    if (s.id.rfind("torchtitan-h100", 0) != 0) continue;  // the eager runs (H200's ran compiled)
    ++seen;
    EXPECT_TRUE(s.predicted_fits) << s.id;
    const double predicted = s.predicted_GiB - s.fullest.runtime / kGiB;  // torch's reserve leaves the context out
    std::printf("%s: %.1f GiB reserved, predicted %.1f\n", s.id.c_str(), s.measured_GiB, predicted);
    EXPECT_NEAR(predicted / s.measured_GiB, 1.0, 0.06) << s.id;
  }
  EXPECT_EQ(seen, 2);
}

TEST(MeasuredRuns, EverySweepRanksAsMeasured) {
  const std::vector<Scored> runs = scored_runs();
  std::map<std::string, std::vector<const Scored*>> sweeps;
  for (const Scored& s : runs)
    if (s.measured_s > 0 && !s.sweep.empty()) sweeps[s.sweep].push_back(&s);
  std::printf("%-36s %5s %8s %s\n", "sweep", "runs", "spearman", "measured-fastest predicted rank");
  int judged = 0, ranked_well = 0, ranked_as_asked = 0, fastest_first = 0, fastest_in_top3 = 0;
  for (const auto& [name, rows] : sweeps) {
    if (rows.size() < 5) continue;
    // Time per unit of model work, so sweeps over shapes rank fairly.
    std::vector<double> measured, predicted;
    for (const Scored* s : rows) {
      measured.push_back(s->measured_s / s->model_flops);
      predicted.push_back(s->predicted_s / s->model_flops);
    }
    const double rho = spearman(measured, predicted);
    const std::size_t best = std::min_element(measured.begin(), measured.end()) - measured.begin();
    const int rank = 1 + static_cast<int>(std::count_if(predicted.begin(), predicted.end(),
                                                        [&](double x) { return x < predicted[best]; }));
    std::printf("%-36s %5zu %+8.2f %d\n", name.c_str(), rows.size(), rho, rank);
    ++judged;
    ranked_well += rho >= 0.7;
    ranked_as_asked += rho >= 0.8;
    fastest_first += rank == 1;
    fastest_in_top3 += rank <= 3;
  }
  std::printf("sweeps: %d, Spearman >= 0.7: %d, >= 0.8: %d, measured-fastest predicted first: %d, in the top 3: %d\n",
              judged, ranked_well, ranked_as_asked, fastest_first, fastest_in_top3);
  EXPECT_GE(judged, 30);
  EXPECT_GE(ranked_well, 31);
  // 29: with attention's throughput by sequence length (layer_work.cpp)
  // MosaicML's A100-80GB 350M sequence sweep went from -0.55 to +0.55, and
  // its A100-40GB 760M sweep, whose 11 runs lie within 5% of each other in
  // time per FLOP (four of them the same shape at other global batches),
  // from above 0.8 to 0.72.
  EXPECT_GE(ranked_as_asked, 29);
  EXPECT_GE(fastest_first, 26);
  EXPECT_GE(fastest_in_top3, 32);
}

// Runs that differ only in their micro-batch size isolate what a
// micro-batch costs beyond its compute and bytes (a smaller one runs more
// of them): BigScience's BLOOM sweeps hold 33 such pairs. Printed: how far
// the predicted time ratio of each pair is from the measured one (in log),
// and how many pairs the model orders as measured. Asserted: what this
// version reaches (CostParameters::deepspeed_tp_allreduce_s was set on
// these pairs).
TEST(MeasuredRuns, MicroBatchPairsRatioAsMeasured) {
  const std::vector<Scored> runs = scored_runs();
  std::map<std::string, std::vector<const Scored*>> same;
  for (const Scored& s : runs)
    if (s.measured_s > 0 && s.sweep.rfind("bloom", 0) == 0) same[s.all_but_micro_batch].push_back(&s);
  std::vector<double> errors;
  int ordered = 0;
  for (const auto& [key, rows] : same)
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (std::size_t j = i + 1; j < rows.size(); ++j) {
        const Scored& a = *rows[i];
        const Scored& b = *rows[j];
        if (a.micro_batch == b.micro_batch) continue;
        const double measured = std::log(a.measured_s / b.measured_s);
        const double predicted = std::log(a.predicted_s / b.predicted_s);
        errors.push_back(predicted - measured);
        ordered += (measured < 0) == (predicted < 0);
        if (tracing())
          std::printf("trace-pair %s mb %d / %s mb %d: measured x%.3f predicted x%.3f\n", a.id.c_str(), a.micro_batch,
                      b.id.c_str(), b.micro_batch, std::exp(measured), std::exp(predicted));
      }
  double squares = 0;
  for (double e : errors) squares += e * e;
  const double rms = errors.empty() ? 0 : std::sqrt(squares / errors.size());
  std::printf("micro-batch pairs: %zu, RMS log-ratio error %.3f, median %+.3f, ordered as measured %d\n",
              errors.size(), rms, quantile(errors, 0.5), ordered);
  ASSERT_GE(errors.size(), 30u);
  EXPECT_LE(rms, 0.095);
  EXPECT_GE(ordered, 24);
}

// BigScience's head-count sweeps ran the same shape with head dimensions
// that are and are not whole 16-byte vectors (hidden 13824: 96 heads of 144,
// 128 heads of 108); the unaligned runs took 23-28% longer. The model must
// see the same slowdown (layer_work.hpp, attention_on_tensor_cores) within
// a third of it.
TEST(MeasuredRuns, UnalignedHeadDimensionsSlowAsMeasured) {
  std::map<std::string, const Scored*> by_id;
  const std::vector<Scored> runs = scored_runs();
  for (const Scored& s : runs) by_id[s.id] = &s;
  // (aligned, unaligned): same tp, pp, dp, micro-batch, hidden and layers.
  const std::pair<const char*, const char*> pairs[] = {
      {"bloom-pq-053", "bloom-pq-054"}, {"bloom-pq-085", "bloom-pq-086"},
      {"bloom-pq-088", "bloom-pq-089"}, {"bloom-pq-090", "bloom-pq-091"}};
  for (const auto& [aligned, unaligned] : pairs) {
    ASSERT_TRUE(by_id.count(aligned) && by_id.count(unaligned)) << aligned << " / " << unaligned;
    const Scored& a = *by_id[aligned];
    const Scored& u = *by_id[unaligned];
    const double measured = u.measured_s / a.measured_s, predicted = u.predicted_s / a.predicted_s;
    std::printf("%s / %s: measured x%.3f, predicted x%.3f\n", unaligned, aligned, measured, predicted);
    EXPECT_GT(measured, 1.2);
    EXPECT_NEAR(predicted, measured, (measured - 1) / 3) << unaligned << " / " << aligned;
  }
}

// The H100 runs as the catalog prices Hopper's GEMMs — the H200's own
// measurement (tests/data/device/h200, io/catalog.cpp measured_gemm) —
// against the reference curve scaled to the published best shape (0.80 of
// peak, what the catalog used before it was measured), and with a device
// calibrated from the folder by `autohaap device --measured`, which also
// takes the measured streaming-kernel efficiency. The same GH100 compute
// at the same clocks and peaks: the GEMM and attention fractions carry
// over from H200 to H100. The measurement removes the bias (median -3.9%
// -> +0.7%) at the same spread.
TEST(MeasuredRuns, H100RunsPricedWithTheH200sMeasuredGemms) {
  DeviceSpec published = catalog_device("h100-sxm");
  published.gemm_efficiency.clear();
  const double ampere = architecture_profile(Architecture::ampere).gemm_peak_fraction;
  for (const EfficiencyPoint& p : kReferenceGemmEfficiency)
    published.gemm_efficiency.push_back({p.gemm_gflop * published.peak_tflops / kReferencePeakTflops,
                                         p.efficiency * 0.80 / ampere});
  const DeviceMeasurements measured =
      read_device_measurements(std::string(AUTOHAAP_TEST_DATA_DIR) + "/device/h200", catalog_device("h200"));
  const DeviceSpec calibrated = calibrated_device(catalog_device("h100-sxm"), measured, "h100-sxm");
  auto h100_errors = [](const std::vector<Scored>& runs) {
    std::vector<double> e;
    for (const Scored& s : runs)
      if (s.measured_s > 0 && s.sweep.find("h100") != std::string::npos)
        e.push_back((s.predicted_s - s.measured_s) / s.measured_s);
    return e;
  };
  auto abs_of = [](std::vector<double> v) {
    for (double& x : v) x = std::abs(x);
    return v;
  };
  const std::vector<double> catalog = h100_errors(scored_runs()),
                            best_shape = h100_errors(scored_runs({{"h100-sxm", published}})),
                            own = h100_errors(scored_runs({{"h100-sxm", calibrated}}));
  ASSERT_EQ(catalog.size(), best_shape.size());
  ASSERT_EQ(catalog.size(), own.size());
  ASSERT_GE(catalog.size(), 80u);
  for (const auto& [name, e] : {std::pair{"published best shape", best_shape}, std::pair{"catalog (measured)", catalog},
                                std::pair{"device --measured", own}})
    std::printf("H100 runs, %-22s %3zu runs, median %+.1f%%, median |error| %.1f%%, p90 |error| %.1f%%\n", name,
                e.size(), 100 * quantile(e, 0.5), 100 * quantile(abs_of(e), 0.5), 100 * quantile(abs_of(e), 0.9));
  EXPECT_LE(std::abs(quantile(catalog, 0.5)), 0.02);
  EXPECT_LE(std::abs(quantile(own, 0.5)), 0.02);
  EXPECT_LT(std::abs(quantile(catalog, 0.5)), std::abs(quantile(best_shape, 0.5)));
  EXPECT_LE(quantile(abs_of(catalog), 0.9), quantile(abs_of(best_shape), 0.9) + 0.005);
}

// CDNA3's figures stand where MI300X's measured training ran (catalog.cpp,
// architectures(): the fraction that minimizes the squared log errors of
// the SemiAnalysis benchmark's three MI300X rows, sa-mi300x-*): each row
// within 30%, and the one script run on both an MI300X and an H100 (GPT-2
// XL, batch 14, ROCm/TransformerEngine issue 72: 215.79 against 478.73
// TFLOP/s) ordered as measured, the MI300X the slower by more than 1.5x
// (measured 2.2x; the best-shape fraction 0.56 had it 7% the faster).
TEST(MeasuredRuns, Mi300xPricedWhereItsMeasuredTrainingRan) {
  std::map<std::string, Scored> rows;
  for (const Scored& s : scored_runs())
    if (s.id.rfind("sa-", 0) == 0) rows[s.id] = s;
  ASSERT_EQ(rows.size(), 4u);
  for (const char* id : {"sa-mi300x-001", "sa-mi300x-002", "sa-mi300x-003"}) {
    const Scored& s = rows.at(id);
    EXPECT_NEAR(s.predicted_s / s.measured_s, 1.0, 0.30) << id;
  }
  const Scored &mi300x = rows.at("sa-mi300x-001"), &h100 = rows.at("sa-h100-001");
  EXPECT_GT(mi300x.measured_s / h100.measured_s, 2.0);
  EXPECT_GT(mi300x.predicted_s / h100.predicted_s, 1.5);
}

}  // namespace
}  // namespace autohaap
