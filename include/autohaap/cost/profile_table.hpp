// ProfileTable: measured operator latencies that override the analytic
// roofline. Keyed by (device, op, tp, micro-batch per replica, seq_len[, layer]).
//
// Ops (forward pass of one layer on one GPU; backward looks up
// "<op>_backward" and falls back to 2x the forward):
//   layer        whole transformer / generic layer (overrides the ops below)
//   attn_qkv attn_core attn_out mlp elementwise   parts of a transformer layer
//   embedding lm_head                              edge ops on the first / last stage
//   optimizer    the optimizer step of the whole model on one GPU of tp T
//                (micro_batch and seq_len as measured, not used): its ratio
//                to the analytic step scales every stage's (ProfileCorrection)
// Files: CSV with header `device,op,tp,micro_batch,seq_len,latency_ms[,layer]`
// (io/profile_loader.hpp). Lookup is exact; no interpolation.
#pragma once

#include <array>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace autohaap {

// The op names a profile may time (forward; "<op>_backward" for the
// backward pass), in the order messages list them.
inline constexpr std::array<const char*, 9> kProfileOps = {"layer", "attn_qkv", "attn_core", "attn_out", "mlp",
                                                           "elementwise", "embedding", "lm_head", "optimizer"};
inline constexpr std::string_view kBackwardSuffix = "_backward";

// "mlp_backward" -> {"mlp", true}; "mlp" -> {"mlp", false}.
inline std::pair<std::string_view, bool> split_backward(std::string_view op) {
  if (op.size() > kBackwardSuffix.size() && op.substr(op.size() - kBackwardSuffix.size()) == kBackwardSuffix)
    return {op.substr(0, op.size() - kBackwardSuffix.size()), true};
  return {op, false};
}

// Whether `op` is one of kProfileOps, optionally with the backward suffix.
inline bool is_profile_op(std::string_view op) {
  const std::string_view base = split_backward(op).first;
  for (const char* k : kProfileOps)
    if (base == k) return true;
  return false;
}

struct ProfileKey {
  std::string device;
  std::string op;
  int tp = 1;
  int micro_batch = 1;  // sequences per replica
  int seq_len = 0;
  int layer = -1;       // -1: any layer
  auto tie() const { return std::tie(device, op, tp, micro_batch, seq_len, layer); }
  bool operator<(const ProfileKey& o) const { return tie() < o.tie(); }
};

class ProfileTable {
 public:
  void add(const ProfileKey& key, double latency_s) { entries_[key] = latency_s; }
  // Exact match on the layer first, then on layer -1.
  std::optional<double> lookup(ProfileKey key) const {
    if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    if (key.layer != -1) {
      key.layer = -1;
      if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    }
    return std::nullopt;
  }
  bool empty() const { return entries_.empty(); }
  // Whether a layer on `device` at this tp, sequences per replica and
  // sequence length is measured: as a whole `layer`, or as each of its five
  // parts. Any layer index of the table counts (profiles measure every
  // layer of a configuration, or all of them at once).
  bool measures_layer(const std::string& device, int tp, int micro_batch, int seq_len) const {
    // Keys order by (device, op, tp, micro_batch, seq_len, layer): the first
    // "layer" key at or after layer INT_MIN is this configuration's, if any.
    const ProfileKey first{device, "layer", tp, micro_batch, seq_len, std::numeric_limits<int>::min()};
    if (auto it = entries_.lower_bound(first); it != entries_.end() && it->first.device == device &&
                                               it->first.op == "layer" && it->first.tp == tp &&
                                               it->first.micro_batch == micro_batch && it->first.seq_len == seq_len)
      return true;
    for (const char* op : {"attn_qkv", "attn_core", "attn_out", "mlp", "elementwise"})
      if (!lookup(ProfileKey{device, op, tp, micro_batch, seq_len, -1})) return false;
    return true;
  }
  // Whether anything on `device` is measured (its analytic times are then
  // corrected by factors fitted on those measurements).
  bool measures_device(const std::string& device) const {
    const auto it = entries_.lower_bound(ProfileKey{device, "", std::numeric_limits<int>::min(),
                                                    std::numeric_limits<int>::min(), std::numeric_limits<int>::min(),
                                                    std::numeric_limits<int>::min()});
    return it != entries_.end() && it->first.device == device;
  }
  std::size_t size() const { return entries_.size(); }
  const std::map<ProfileKey, double>& entries() const { return entries_; }

  // The model's hidden size a source says its rows measured (a CSV's
  // `hidden` column), with where it says so: checked against the model
  // (profile_loader.hpp, check_profile_fits); none stated, none checked.
  void state_hidden(int hidden, const std::string& where) { stated_hidden_.emplace(hidden, where); }
  const std::map<int, std::string>& stated_hidden() const { return stated_hidden_; }

 private:
  std::map<ProfileKey, double> entries_;
  std::map<int, std::string> stated_hidden_;  // hidden size -> the first row stating it
};

}  // namespace autohaap
