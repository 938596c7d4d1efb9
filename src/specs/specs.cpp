#include <algorithm>
#include <cmath>

#include "autohaap/specs/device.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/problem.hpp"
#include "autohaap/specs/runnable_by.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

double gemm_efficiency(const DeviceSpec& device, double gflop) {
  const auto& curve = device.gemm_efficiency;
  if (curve.empty()) return 1.0;
  if (gflop <= curve.front().gemm_gflop) return curve.front().efficiency;
  if (gflop >= curve.back().gemm_gflop) return curve.back().efficiency;
  auto hi = std::upper_bound(curve.begin(), curve.end(), gflop,
                             [](double g, const EfficiencyPoint& p) { return g < p.gemm_gflop; });
  auto lo = hi - 1;
  // Interpolate in log10(size): efficiency rises roughly with the number of
  // waves of thread blocks, i.e. with the order of magnitude of the GEMM.
  const double t = (std::log10(gflop) - std::log10(lo->gemm_gflop)) /
                   (std::log10(hi->gemm_gflop) - std::log10(lo->gemm_gflop));
  return lo->efficiency + t * (hi->efficiency - lo->efficiency);
}

double gemm_efficiency_at(const DeviceSpec& device, double gflop, double peak_tflops) {
  return gemm_efficiency(device, gflop * device.peak_tflops / peak_tflops);
}

const char* to_string(ModelFamily family) {
  switch (family) {
    case ModelFamily::gpt: return "gpt";
    case ModelFamily::llama: return "llama";
    case ModelFamily::generic: return "generic";
  }
  return "?";
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return "adam";
    case Optimizer::sgd: return "sgd";
    case Optimizer::adam8bit: return "adam8bit";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view name) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    if (name == to_string(r)) return r;
  }
  return std::nullopt;
}

bool full_precision(Precision p) { return p == Precision::fp32 || p == Precision::tf32; }

int bytes_per_element(Precision p) { return full_precision(p) ? 4 : 2; }

double optimizer_moment_bytes(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return 8;
    case Optimizer::adam8bit: return 2;
    case Optimizer::sgd: return 4;
  }
  return 8;
}

Precision grad_precision(const TrainingSpec& t) {
  if (t.grad_reduce_dtype) return *t.grad_reduce_dtype;
  return t.precision == Precision::fp16 ? Precision::fp16 : Precision::fp32;
}

PipelineP2P pipeline_p2p(const TrainingSpec& t) { return t.pipeline_p2p.value_or(PipelineP2P::scatter_gather); }

AttentionKernel attention_kernel_on(const DeviceSpec& d, const TrainingSpec& t) {
  const AttentionKernel asked =
      t.attention_kernel.value_or(t.runtime == Runtime::megatron ? AttentionKernel::flash3 : AttentionKernel::flash2);
  return asked == AttentionKernel::flash3 && d.flash3_forward_efficiency <= 0 ? AttentionKernel::flash2 : asked;
}

double attention_efficiency(const DeviceSpec& d, const TrainingSpec& t, bool backward) {
  switch (attention_kernel_on(d, t)) {
    case AttentionKernel::flash3: return backward ? d.flash3_backward_efficiency : d.flash3_forward_efficiency;
    case AttentionKernel::triton:
      return (backward ? d.attention_backward_efficiency : d.attention_forward_efficiency) / kFlash2OverTriton;
    case AttentionKernel::flash2: break;
  }
  return backward ? d.attention_backward_efficiency : d.attention_forward_efficiency;
}

const char* to_string(Runtime r) {
  switch (r) {
    case Runtime::megatron: return "megatron";
    case Runtime::deepspeed: return "deepspeed";
    case Runtime::fsdp: return "fsdp";
  }
  return "?";
}

const char* to_string(RunnableBy r) {
  switch (r) {
    case RunnableBy::any: return "any";
    case RunnableBy::megatron: return "megatron";
  }
  return "?";
}

const std::vector<std::string>& runnable_by_names() {
  static const std::vector<std::string> names = {to_string(RunnableBy::any), to_string(RunnableBy::megatron)};
  return names;
}

std::optional<RunnableBy> parse_runnable_by(std::string_view name) {
  for (RunnableBy r : {RunnableBy::any, RunnableBy::megatron})
    if (name == to_string(r)) return r;
  return std::nullopt;
}

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::flash2: return "flash2";
    case AttentionKernel::flash3: return "flash3";
    case AttentionKernel::triton: return "triton";
  }
  return "?";
}

const char* to_string(PipelineP2P p) {
  switch (p) {
    case PipelineP2P::scatter_gather: return "scatter_gather";
    case PipelineP2P::full: return "full";
  }
  return "?";
}

const char* to_string(Architecture a) {
  switch (a) {
    case Architecture::volta: return "volta";
    case Architecture::turing: return "turing";
    case Architecture::ampere: return "ampere";
    case Architecture::ada: return "ada";
    case Architecture::hopper: return "hopper";
    case Architecture::cdna2: return "cdna2";
    case Architecture::cdna3: return "cdna3";
  }
  return "?";
}

Problem restricted_to_device(const Problem& problem, const std::string& device, std::vector<int>* original_group) {
  Problem out = problem;
  out.cluster.groups.clear();
  if (original_group) original_group->clear();
  for (int g = 0; g < static_cast<int>(problem.cluster.groups.size()); ++g) {
    if (problem.cluster.groups[g].device.name != device) continue;
    out.cluster.groups.push_back(problem.cluster.groups[g]);
    if (original_group) original_group->push_back(g);
  }
  return out;
}

}  // namespace autohaap
