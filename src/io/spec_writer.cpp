#include "spec_writer.hpp"

namespace autohaap::detail {
namespace {

void put(DocumentWriter& out, const char* key, int v) {
  out.key(key);
  out.value(v);
}
void put(DocumentWriter& out, const char* key, double v) {
  out.key(key);
  out.value(v);
}
void put(DocumentWriter& out, const char* key, bool v) {
  out.key(key);
  out.value(v);
}
void put(DocumentWriter& out, const char* key, const std::string& v) {
  out.key(key);
  out.value(v);
}

}  // namespace

void write_device(DocumentWriter& out, const DeviceSpec& d) {
  put(out, "name", d.name);
  put(out, "architecture", std::string(to_string(d.architecture)));
  put(out, "memory_GiB", d.memory_GiB);
  put(out, "peak_tflops", d.peak_tflops);
  put(out, "peak_fp32_tflops", d.peak_fp32_tflops);
  put(out, "peak_tf32_tflops", d.peak_tf32_tflops);
  put(out, "peak_fp8_tflops", d.peak_fp8_tflops);
  put(out, "has_bf16", d.has_bf16);
  put(out, "hbm_GBps", d.hbm_GBps);
  put(out, "memory_efficiency", d.memory_efficiency);
  out.key("gemm_efficiency");
  out.begin_list(false);
  for (const EfficiencyPoint& p : d.gemm_efficiency) {
    out.begin_list(true);
    out.value(p.gemm_gflop);
    out.value(p.efficiency);
    out.end_list();
  }
  out.end_list();
  put(out, "attention_forward_efficiency", d.attention_forward_efficiency);
  put(out, "attention_backward_efficiency", d.attention_backward_efficiency);
  put(out, "flash3_forward_efficiency", d.flash3_forward_efficiency);
  put(out, "flash3_backward_efficiency", d.flash3_backward_efficiency);
  put(out, "nvlink_GBps", d.nvlink_GBps);
  put(out, "pcie_GBps", d.pcie_GBps);
  put(out, "nic_GBps", d.nic_GBps);
}

void write_model(DocumentWriter& out, const ModelSpec& m) {
  put(out, "name", m.name);
  put(out, "family", std::string(to_string(m.family)));
  if (m.family == ModelFamily::generic) {
    put(out, "seq_len", m.seq_len);
    if (m.hidden > 0) put(out, "hidden", m.hidden);
    if (m.vocab > 0) put(out, "vocab", m.vocab);
    out.key("layers");
    out.begin_list(false);
    for (const GenericLayer& g : m.generic_layers) {
      out.begin_map();
      put(out, "name", g.name);
      put(out, "params", g.params);
      put(out, "forward_gflop", g.forward_gflop);
      put(out, "activation_MB", g.activation_MB);
      put(out, "output_MB", g.output_MB);
      out.end_map();
    }
    out.end_list();
    return;
  }
  put(out, "layers", m.layers);
  put(out, "hidden", m.hidden);
  put(out, "ffn_hidden", m.ffn_hidden);
  put(out, "heads", m.heads);
  put(out, "kv_heads", m.kv_heads);
  put(out, "vocab", m.vocab);
  put(out, "seq_len", m.seq_len);
  put(out, "tied_embeddings", m.tied_embeddings);
  put(out, "flash_attention", m.flash_attention);
  put(out, "dropout", m.dropout);
  put(out, "embedding_norm", m.embedding_norm);
}

void write_cluster(DocumentWriter& out, const ClusterSpec& c) {
  put(out, "name", c.name);
  put(out, "inter_group_GBps", c.inter_group_GBps);
  put(out, "inter_group_latency_us", c.inter_group_latency_us);
  out.key("groups");
  out.begin_list(false);
  for (const NodeGroup& g : c.groups) {
    out.begin_map();
    put(out, "name", g.name);
    out.key("device");
    out.begin_map();
    write_device(out, g.device);
    out.end_map();
    put(out, "nodes", g.nodes);
    put(out, "gpus_per_node", g.gpus_per_node);
    put(out, "intra_node_GBps", g.intra_node_GBps);
    put(out, "intra_node_latency_us", g.intra_node_latency_us);
    put(out, "inter_node_GBps", g.inter_node_GBps);
    put(out, "inter_node_latency_us", g.inter_node_latency_us);
    if (g.nics_per_node > 0) put(out, "nics_per_node", g.nics_per_node);
    if (g.inter_node_busbw_GBps > 0) put(out, "inter_node_busbw_GBps", g.inter_node_busbw_GBps);
    out.end_map();
  }
  out.end_list();
}

void write_training(DocumentWriter& out, const TrainingSpec& t) {
  put(out, "global_batch", t.global_batch);
  if (t.seq_len > 0) put(out, "seq_len", t.seq_len);
  put(out, "precision", std::string(to_string(t.precision)));
  put(out, "optimizer", std::string(to_string(t.optimizer)));
  put(out, "zero", t.zero);
  out.key("micro_batch_sizes");
  out.begin_list(true);
  for (int b : t.micro_batch_sizes) out.value(b);
  out.end_list();
  out.key("recompute");
  out.begin_list(true);
  for (Recompute r : t.recompute_modes) out.value(to_string(r));
  out.end_list();
  put(out, "headroom_GiB", t.headroom_GiB);
  put(out, "sequence_parallel", t.sequence_parallel);
  if (t.grad_reduce_dtype) put(out, "grad_reduce_dtype", std::string(to_string(*t.grad_reduce_dtype)));
  put(out, "runtime", std::string(to_string(t.runtime)));
  if (t.pipeline_p2p) put(out, "pipeline_p2p", std::string(to_string(*t.pipeline_p2p)));
  if (t.attention_kernel) put(out, "attention_kernel", std::string(to_string(*t.attention_kernel)));
  put(out, "overlap_grad_reduce", t.overlap_grad_reduce);
  put(out, "fused_cross_entropy", t.fused_cross_entropy);
  // Written only when set, so files of the default read and hash as before.
  if (t.micro_batch_per_replica) put(out, "micro_batch_per_replica", true);
}

}  // namespace autohaap::detail
