#include "autohaap/specs/spec_fingerprint.hpp"

#include <cstdio>

namespace autohaap {
namespace {

using Lines = CanonicalText;

void add_device(Lines& l, const std::string& p, const DeviceSpec& d) {
  l.add(p + "name", d.name)
      .add(p + "architecture", to_string(d.architecture))
      .add(p + "memory_GiB", d.memory_GiB)
      .add(p + "peak_tflops", d.peak_tflops)
      .add(p + "peak_fp32_tflops", d.peak_fp32_tflops)
      .add(p + "peak_tf32_tflops", d.peak_tf32_tflops)
      .add(p + "peak_fp8_tflops", d.peak_fp8_tflops)
      .add(p + "has_bf16", d.has_bf16)
      .add(p + "hbm_GBps", d.hbm_GBps)
      .add(p + "memory_efficiency", d.memory_efficiency)
      .add(p + "nvlink_GBps", d.nvlink_GBps)
      .add(p + "pcie_GBps", d.pcie_GBps)
      .add(p + "nic_GBps", d.nic_GBps)
      .add(p + "attention_forward_efficiency", d.attention_forward_efficiency)
      .add(p + "attention_backward_efficiency", d.attention_backward_efficiency)
      .add(p + "flash3_forward_efficiency", d.flash3_forward_efficiency)
      .add(p + "flash3_backward_efficiency", d.flash3_backward_efficiency)
      .add(p + "gemm_efficiency.size", d.gemm_efficiency.size());
  for (std::size_t i = 0; i < d.gemm_efficiency.size(); ++i) {
    const std::string q = p + "gemm_efficiency[" + std::to_string(i) + "].";
    l.add(q + "gemm_gflop", d.gemm_efficiency[i].gemm_gflop).add(q + "efficiency", d.gemm_efficiency[i].efficiency);
  }
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state) {
  for (unsigned char c : bytes) {
    state ^= c;
    state *= 0x100000001b3ULL;
  }
  return state;
}

std::string canonical_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string hex64(std::uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string canonical_text(const ModelSpec& m) {
  Lines l;
  l.add("model.name", m.name)
      .add("model.family", to_string(m.family))
      .add("model.layers", m.layers)
      .add("model.hidden", m.hidden)
      .add("model.ffn_hidden", m.ffn_hidden)
      .add("model.heads", m.heads)
      .add("model.kv_heads", m.kv_heads)
      .add("model.vocab", m.vocab)
      .add("model.seq_len", m.seq_len)
      .add("model.tied_embeddings", m.tied_embeddings)
      .add("model.flash_attention", m.flash_attention)
      .add("model.dropout", m.dropout)
      .add("model.generic_layers.size", m.generic_layers.size());
  // Only where set, so the fingerprints of models without it stay as they were.
  if (m.embedding_norm) l.add("model.embedding_norm", m.embedding_norm);
  for (std::size_t i = 0; i < m.generic_layers.size(); ++i) {
    const GenericLayer& g = m.generic_layers[i];
    const std::string p = "model.generic_layers[" + std::to_string(i) + "].";
    l.add(p + "name", g.name)
        .add(p + "params", g.params)
        .add(p + "forward_gflop", g.forward_gflop)
        .add(p + "activation_MB", g.activation_MB)
        .add(p + "output_MB", g.output_MB);
  }
  return l.str();
}

std::string canonical_text(const ClusterSpec& c) {
  Lines l;
  l.add("cluster.name", c.name)
      .add("cluster.inter_group_GBps", c.inter_group_GBps)
      .add("cluster.inter_group_latency_us", c.inter_group_latency_us)
      .add("cluster.groups.size", c.groups.size());
  for (std::size_t i = 0; i < c.groups.size(); ++i) {
    const NodeGroup& g = c.groups[i];
    const std::string p = "cluster.groups[" + std::to_string(i) + "].";
    l.add(p + "name", g.name)
        .add(p + "nodes", g.nodes)
        .add(p + "gpus_per_node", g.gpus_per_node)
        .add(p + "intra_node_GBps", g.intra_node_GBps)
        .add(p + "intra_node_latency_us", g.intra_node_latency_us)
        .add(p + "inter_node_GBps", g.inter_node_GBps)
        .add(p + "inter_node_latency_us", g.inter_node_latency_us);
    // Only when measured: every cluster without it keeps its fingerprint.
    if (g.inter_node_busbw_GBps > 0) l.add(p + "inter_node_busbw_GBps", g.inter_node_busbw_GBps);
    if (g.nics_per_node > 0) l.add(p + "nics_per_node", g.nics_per_node);
    add_device(l, p + "device.", g.device);
  }
  return l.str();
}

std::string canonical_text(const DeviceSpec& d) {
  Lines l;
  add_device(l, "device.", d);
  return l.str();
}

std::string canonical_text(const TrainingSpec& t) {
  Lines l;
  l.add("training.global_batch", t.global_batch)
      .add("training.seq_len", t.seq_len)
      .add("training.precision", to_string(t.precision))
      .add("training.optimizer", to_string(t.optimizer))
      .add("training.zero", t.zero)
      .add("training.headroom_GiB", t.headroom_GiB)
      .add("training.sequence_parallel", t.sequence_parallel)
      .add("training.grad_reduce_dtype", to_string(grad_precision(t)))
      .add("training.runtime", to_string(t.runtime))
      .add("training.pipeline_p2p", to_string(pipeline_p2p(t)))
      .add("training.overlap_grad_reduce", t.overlap_grad_reduce)
      .add("training.fused_cross_entropy", t.fused_cross_entropy);
  std::string sizes, modes;
  for (int b : t.micro_batch_sizes) sizes += std::to_string(b) + ",";
  for (Recompute r : t.recompute_modes) modes += std::string(to_string(r)) + ",";
  l.add("training.micro_batch_sizes", sizes).add("training.recompute_modes", modes);
  // Only when set: the fingerprints of every training of the default stay.
  if (t.micro_batch_per_replica) l.add("training.micro_batch_per_replica", true);
  // As asked: the kernel each device runs follows from it and the devices.
  if (t.attention_kernel) l.add("training.attention_kernel", to_string(*t.attention_kernel));
  return l.str();
}

std::string spec_fingerprint(const ModelSpec& model) { return hex64(fnv1a64(canonical_text(model))); }
std::string spec_fingerprint(const ClusterSpec& cluster) { return hex64(fnv1a64(canonical_text(cluster))); }
std::string spec_fingerprint(const TrainingSpec& training) { return hex64(fnv1a64(canonical_text(training))); }

}  // namespace autohaap
