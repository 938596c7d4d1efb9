#include "autohaap/io/spec_loader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/launch_manifest.hpp"  // kLaunchManifestFormat
#include "autohaap/io/plan_schema.hpp"  // kPlanFormat
#include "autohaap/io/atomic_file.hpp"  // read_file
#include "autohaap/io/yaml_value.hpp"
#include "json_input.hpp"
#include "name_list.hpp"

namespace autohaap {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- helpers

std::string shown_number(double v) {
  std::ostringstream out;
  out << std::setprecision(12) << v;
  return out.str();
}

// "an integer from 1 to 10000", "a number from 0.001 to 1000000".
std::string int_range_text(long long lo, long long hi) {
  return "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
}
std::string number_range_text(double lo, double hi) { return "a number from " + shown_number(lo) + " to " + shown_number(hi); }

// Throw InputError(file, key, value, range (+ why)) unless lo <= value <= hi
// (a NaN is outside every range).
void require_int(const std::string& file, const std::string& key, long long value, long long lo, long long hi,
                 const std::string& why = "") {
  if (value < lo || value > hi) throw InputError(file, key, std::to_string(value), int_range_text(lo, hi) + why);
}
void require_number(const std::string& file, const std::string& key, double value, double lo, double hi) {
  if (!(value >= lo && value <= hi)) throw InputError(file, key, shown_number(value), number_range_text(lo, hi));
}

// "path.key", or "key" at the top level.
std::string under(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }

// One of a fixed set of names, e.g. precision: bf16|fp16|fp32.
template <class Enum>
Enum parse_choice(const YamlValue& v, const std::vector<std::pair<std::string, Enum>>& choices) {
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) {
    if (v.is_scalar() && v.node().Scalar() == name) return value;
    names.push_back(name);
  }
  v.fail(detail::names_with_hint(names, v.text()));
}

const std::vector<std::pair<std::string, ModelFamily>> kFamilies = {
    {"gpt", ModelFamily::gpt}, {"llama", ModelFamily::llama}, {"generic", ModelFamily::generic}};
const std::vector<std::pair<std::string, Precision>> kPrecisions = {
    {"bf16", Precision::bf16}, {"fp16", Precision::fp16}, {"fp32", Precision::fp32},
    {"tf32", Precision::tf32}, {"fp8", Precision::fp8}};
// Gradient buffers and their reductions are never kept in FP8 or TF32
// (TF32 is a matmul input format; its tensors are stored as fp32).
const std::vector<std::pair<std::string, Precision>> kGradPrecisions = {
    {"bf16", Precision::bf16}, {"fp16", Precision::fp16}, {"fp32", Precision::fp32}};
const std::vector<std::pair<std::string, Optimizer>> kOptimizers = {{"adam", Optimizer::adam}, {"sgd", Optimizer::sgd}, {"adam8bit", Optimizer::adam8bit}};
const std::vector<std::pair<std::string, Recompute>> kRecomputes = {
    {"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}};
const std::vector<std::pair<std::string, Runtime>> kRuntimes = {
    {"megatron", Runtime::megatron}, {"deepspeed", Runtime::deepspeed}, {"fsdp", Runtime::fsdp}};
const std::vector<std::pair<std::string, PipelineP2P>> kPipelineP2P = {
    {"scatter_gather", PipelineP2P::scatter_gather}, {"full", PipelineP2P::full}};
const std::vector<std::pair<std::string, AttentionKernel>> kAttentionKernels = {
    {"flash2", AttentionKernel::flash2}, {"flash3", AttentionKernel::flash3}, {"triton", AttentionKernel::triton}};

std::vector<std::pair<std::string, Architecture>> architecture_choices() {
  std::vector<std::pair<std::string, Architecture>> out;
  for (const std::string& name : architecture_names()) out.emplace_back(name, *parse_architecture(name));
  return out;
}

[[noreturn]] void unknown_name(const char* what, const std::string& ref, const std::vector<std::string>& names) {
  std::error_code ec;
  if (fs::is_directory(ref, ec))
    throw InputError("", what, ref, "a YAML file (this is a folder) or a catalog " + std::string(what));
  throw InputError("", what, ref,
                   "a YAML file path or a catalog " + std::string(what) + ": " + detail::names_with_hint(names, ref));
}

// ------------------------------------------------------------------ model

ModelSpec parse_model(const YamlObject& obj, const std::string& default_name) {
  ModelSpec m;
  m.family = parse_choice(obj.at("family", "gpt, llama or generic"), kFamilies);
  m.name = obj.get_string("name", default_name);

  if (m.family == ModelFamily::generic) {
    // Shape keys of a transformer mean nothing here; accepting them would
    // suggest they are used.
    obj.check_keys({"name", "family", "layers", "seq_len", "hidden", "vocab"});
    const YamlValue layers = obj.at("layers", "a list of layers");
    if (!layers.is_list() || layers.node().size() == 0)
      layers.fail("a non-empty list of {name, params, forward_gflop, activation_MB, output_MB} for family generic");
    for (const YamlValue& item : layers.as_list()) {
      const YamlObject l = item.as_object();
      l.check_keys({"name", "params", "forward_gflop", "activation_MB", "output_MB"});
      GenericLayer g;
      g.name = l.get_string("name", "layer" + std::to_string(m.generic_layers.size()));
      g.params = l.get_double("params", Bound::non_negative);
      g.forward_gflop = l.get_double("forward_gflop", Bound::non_negative);
      g.activation_MB = l.get_double("activation_MB", Bound::non_negative);
      g.output_MB = l.get_double("output_MB", Bound::non_negative);
      m.generic_layers.push_back(g);
    }
    m.layers = static_cast<int>(m.generic_layers.size());
    m.seq_len = obj.get_int("seq_len", Bound::positive);
    m.hidden = obj.get_int("hidden", Bound::positive, 0);
    m.vocab = obj.get_int("vocab", Bound::positive, 0);
    m.heads = m.kv_heads = 1;  // generic layers are not tensor-parallel
    check_model(m, obj.file(), obj.path());
    return m;
  }

  obj.check_keys({"name", "family", "layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len",
                  "tied_embeddings", "flash_attention", "dropout", "embedding_norm"});
  const YamlValue layers = obj.at("layers", describe_int(Bound::positive));
  if (layers.is_list()) layers.fail("a positive integer (a list of layers needs family: generic)");
  m.layers = layers.as_int(Bound::positive);
  m.hidden = obj.get_int("hidden", Bound::positive);
  m.heads = obj.get_int("heads", Bound::positive);
  m.kv_heads = obj.get_int("kv_heads", Bound::positive, m.heads);
  m.vocab = obj.get_int("vocab", Bound::positive);
  m.seq_len = obj.get_int("seq_len", Bound::positive);
  const bool gpt = m.family == ModelFamily::gpt;
  // GPT's MLP is 4h wide by construction; SwiGLU widths vary, so Llama
  // files must say.
  // (In 64 bits: check_model refuses a `hidden` too wide before this
  // default can matter.)
  const int gpt_ffn = static_cast<int>(std::min<long long>(4LL * m.hidden, std::numeric_limits<int>::max()));
  m.ffn_hidden = gpt ? obj.get_int("ffn_hidden", Bound::positive, gpt_ffn) : obj.get_int("ffn_hidden", Bound::positive);
  m.tied_embeddings = obj.get_bool("tied_embeddings", gpt);
  m.flash_attention = obj.get_bool("flash_attention", !gpt);
  m.dropout = obj.get_bool("dropout", gpt);
  m.embedding_norm = obj.get_bool("embedding_norm", false);
  check_model(m, obj.file(), obj.path());
  return m;
}

// ----------------------------------------------------------------- device

std::vector<EfficiencyPoint> parse_efficiency_curve(const YamlValue& v) {
  const char* kShape = "a non-empty list of [gemm_gflop, efficiency] pairs";
  if (!v.is_list() || v.node().size() == 0) v.fail(kShape);
  std::vector<EfficiencyPoint> curve;
  for (const YamlValue& point : v.as_list()) {
    if (!point.is_list() || point.node().size() != 2) point.fail("[gemm_gflop, efficiency]");
    const auto pair = point.as_list();
    EfficiencyPoint p;
    p.gemm_gflop = pair[0].as_double(Bound::positive);
    p.efficiency = pair[1].as_double(Bound::fraction);
    if (!curve.empty() && p.gemm_gflop <= curve.back().gemm_gflop)
      pair[0].fail("gemm_gflop above the previous point's " + shown_number(curve.back().gemm_gflop) +
                   " (strictly increasing)");
    curve.push_back(p);
  }
  return curve;
}

// `default_name` empty: the name must be given (devices written inline).
DeviceSpec parse_device(const YamlObject& obj, const std::string& default_name) {
  obj.check_keys({"name", "base", "architecture", "memory_GiB", "peak_tflops", "peak_fp32_tflops", "peak_tf32_tflops",
                  "peak_fp8_tflops", "has_bf16",
                  "hbm_GBps", "memory_efficiency", "gemm_efficiency", "attention_forward_efficiency",
                  "attention_backward_efficiency", "flash3_forward_efficiency", "flash3_backward_efficiency",
                  "nvlink_GBps", "pcie_GBps", "nic_GBps"});
  DeviceSpec d;
  const bool from_base = obj.has("base");
  if (from_base) {
    const YamlValue base = obj.at("base", "a catalog device");
    const std::string name = base.as_string();
    if (!is_catalog_device(name)) base.fail("a catalog device: " + detail::names_with_hint(catalog_device_names(), name));
    d = catalog_device(name);
  }
  d.name = default_name.empty() ? obj.get_string("name") : obj.get_string("name", default_name);
  // The generation decides the default efficiency figures, so a device
  // built from scratch must name it.
  if (!from_base || obj.has("architecture"))
    d.architecture = parse_choice(obj.at("architecture", detail::join_names(architecture_names())),
                                  architecture_choices());

  // Without a base, the numbers that differ between every two devices are
  // required; the rest have the catalog's defaults.
  auto number = [&](const char* key, Bound bound, double& field, bool required) {
    field = required && !from_base ? obj.get_double(key, bound) : obj.get_double(key, bound, field);
  };
  number("memory_GiB", Bound::positive, d.memory_GiB, true);
  number("peak_tflops", Bound::positive, d.peak_tflops, true);
  number("peak_fp32_tflops", Bound::positive, d.peak_fp32_tflops, true);
  number("peak_tf32_tflops", Bound::non_negative, d.peak_tf32_tflops, false);  // 0: no TF32
  number("peak_fp8_tflops", Bound::non_negative, d.peak_fp8_tflops, false);    // 0: no FP8
  number("hbm_GBps", Bound::positive, d.hbm_GBps, true);
  number("pcie_GBps", Bound::positive, d.pcie_GBps, true);
  number("nvlink_GBps", Bound::non_negative, d.nvlink_GBps, false);
  number("nic_GBps", Bound::positive, d.nic_GBps, false);
  // Efficiency defaults follow the architecture and the (possibly changed)
  // peak; explicit figures override them.
  apply_architecture_defaults(d);
  // Any number here: check_device says what an efficiency may be (one
  // message, limits::kMinEfficiency to 1, whichever side it misses).
  number("memory_efficiency", Bound::any, d.memory_efficiency, false);
  number("attention_forward_efficiency", Bound::any, d.attention_forward_efficiency, false);
  number("attention_backward_efficiency", Bound::any, d.attention_backward_efficiency, false);
  number("flash3_forward_efficiency", Bound::any, d.flash3_forward_efficiency, false);  // 0: none
  number("flash3_backward_efficiency", Bound::any, d.flash3_backward_efficiency, false);
  d.has_bf16 = obj.get_bool("has_bf16", d.has_bf16);
  if (auto curve = obj.find("gemm_efficiency")) d.gemm_efficiency = parse_efficiency_curve(*curve);
  check_device(d, obj.file(), obj.path());
  return d;
}

DeviceSpec load_device_file(const std::string& path) {
  return parse_device(YamlObject(load_yaml_file(path), path, ""), stem_of(path));
}

// ---------------------------------------------------------------- cluster

// A group's `device:` — a catalog name, a device file (relative paths are
// relative to the cluster file), or a device written inline.
DeviceSpec group_device(const YamlValue& v, const fs::path& cluster_dir) {
  if (v.is_map()) return parse_device(v.as_object(), "");
  const std::string ref = v.as_string();
  fs::path path(ref);
  if (path.is_relative()) path = cluster_dir / path;
  const bool path_like = looks_like_path(ref);
  if (!path_like && is_catalog_device(ref)) return catalog_device(ref);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return load_device_file(path.string());
  v.fail("a catalog device (" + detail::names_with_hint(catalog_device_names(), ref) +
         ") or an existing device file (looked for " + path.string() + ")");
}

ClusterSpec parse_cluster(const YamlObject& obj, const std::string& default_name) {
  obj.check_keys({"name", "inter_group_GBps", "inter_group_latency_us", "groups"});
  ClusterSpec c;
  c.name = obj.get_string("name", default_name);
  c.inter_group_GBps = obj.get_double("inter_group_GBps", Bound::positive, kDefaultInterGroupGBps);
  c.inter_group_latency_us =
      obj.get_double("inter_group_latency_us", Bound::non_negative, kDefaultInterGroupLatencyUs);

  const YamlValue groups = obj.at("groups", "a non-empty list of node groups");
  if (!groups.is_list() || groups.node().size() == 0)
    groups.fail("a non-empty list of node groups {device, nodes, gpus_per_node, ...}");
  const fs::path dir = fs::path(obj.file()).parent_path();
  for (const YamlValue& item : groups.as_list()) {
    const YamlObject g = item.as_object();
    g.check_keys({"name", "device", "nodes", "gpus_per_node", "intra_node_GBps", "intra_node_latency_us",
                  "inter_node_GBps", "nics_per_node", "nic_Gbps", "inter_node_latency_us", "inter_node_busbw_GBps"});
    const DeviceSpec device = group_device(g.at("device", "a catalog device or a device file"), dir);
    NodeGroup n = make_node_group(device, g.get_int("nodes", Bound::positive), g.get_int("gpus_per_node", Bound::positive));
    n.name = g.get_string("name", device.name);
    n.intra_node_GBps = g.get_double("intra_node_GBps", Bound::positive, n.intra_node_GBps);
    n.intra_node_latency_us = g.get_double("intra_node_latency_us", Bound::non_negative, n.intra_node_latency_us);
    // Between nodes: a per-GPU share (inter_node_GBps), or the node's NICs
    // as bought (nics_per_node x nic_Gbps), shared by its GPUs. With a
    // per-GPU share, nics_per_node alone says how many NICs carry it.
    if (g.has("nics_per_node")) n.nics_per_node = g.get_int("nics_per_node", Bound::positive);
    // A count with no rate beside it would change nothing: the device's
    // default share per GPU stays, whatever the count (1 NIC or 8 priced
    // alike had been accepted without a word).
    if (g.has("nics_per_node") && !g.has("nic_Gbps") && !g.has("inter_node_GBps") && !g.has("inter_node_busbw_GBps"))
      g.at("nics_per_node", "").fail(
          "nics_per_node beside nic_Gbps (the node's NICs as bought), or beside inter_node_GBps or "
          "inter_node_busbw_GBps (the NICs that carry that rate); alone it leaves " + device.name +
          "'s default of " + shown_number(n.inter_node_GBps) + " GB/s per GPU between nodes");
    if (g.has("nic_Gbps")) {
      if (g.has("inter_node_GBps"))
        g.at("inter_node_GBps", "").fail("either inter_node_GBps or nics_per_node with nic_Gbps, not both");
      g.at("nics_per_node", describe_int(Bound::positive));  // required beside nic_Gbps
      const YamlValue gbit = g.at("nic_Gbps", describe_double(Bound::positive));
      n.inter_node_GBps = nic_share_GBps(n.nics_per_node, gbit.as_double(Bound::positive), n.gpus_per_node);
      // The share per GPU is what the cost model uses: its range, named by
      // the keys written.
      if (!(n.inter_node_GBps >= limits::kMinGBps && n.inter_node_GBps <= limits::kMaxGBps))
        gbit.fail(number_range_text(limits::kMinGBps, limits::kMaxGBps) + " GB/s per GPU as nics_per_node x nic_Gbps / 8 / "
                  "gpus_per_node (here " + shown_number(n.inter_node_GBps) + ")");
    }
    n.inter_node_GBps = g.get_double("inter_node_GBps", Bound::positive, n.inter_node_GBps);
    n.inter_node_latency_us = g.get_double("inter_node_latency_us", Bound::non_negative, n.inter_node_latency_us);
    n.inter_node_busbw_GBps = g.get_double("inter_node_busbw_GBps", Bound::positive, 0.0);
    // Plans and reports name groups; two with one name would be ambiguous.
    for (const auto& earlier : c.groups)
      if (earlier.name == n.name)
        throw InputError(obj.file(), g.key_path("name"), n.name,
                         "a name no other group has (set name: when two groups share a device)");
    c.groups.push_back(std::move(n));
  }
  check_cluster(c, obj.file());
  return c;
}

// --------------------------------------------------------------- training

TrainingSpec parse_training(const YamlObject& obj) {
  obj.check_keys({"global_batch", "seq_len", "precision", "optimizer", "zero", "micro_batch_sizes", "recompute",
                  "headroom_GiB", "sequence_parallel", "grad_reduce_dtype", "runtime", "pipeline_p2p", "overlap_grad_reduce",
                  "fused_cross_entropy", "micro_batch_per_replica", "attention_kernel"});
  TrainingSpec t;
  t.global_batch = obj.get_int("global_batch", Bound::positive);
  t.seq_len = obj.get_int("seq_len", Bound::positive, 0);
  if (auto v = obj.find("precision")) t.precision = parse_choice(*v, kPrecisions);
  if (auto v = obj.find("optimizer")) t.optimizer = parse_choice(*v, kOptimizers);
  if (auto v = obj.find("zero")) {
    t.zero = v->as_int(Bound::non_negative);
    if (t.zero > 3) v->fail("0, 1, 2 or 3");
  }
  if (auto v = obj.find("micro_batch_sizes")) {
    if (!v->is_list() || v->node().size() == 0) v->fail("a non-empty list of positive integers, e.g. [1, 2, 4]");
    t.micro_batch_sizes.clear();
    for (const YamlValue& item : v->as_list()) {
      const int b = item.as_int(Bound::positive);
      if (std::find(t.micro_batch_sizes.begin(), t.micro_batch_sizes.end(), b) != t.micro_batch_sizes.end())
        item.fail("each size once");
      t.micro_batch_sizes.push_back(b);
    }
    // The order of a set to search carries no meaning; keep one order.
    std::sort(t.micro_batch_sizes.begin(), t.micro_batch_sizes.end());
  }
  if (auto v = obj.find("recompute")) {
    if (!v->is_list() || v->node().size() == 0) v->fail("a non-empty list of none, selective, full");
    t.recompute_modes.clear();
    for (const YamlValue& item : v->as_list()) {
      const Recompute r = parse_choice(item, kRecomputes);
      if (std::find(t.recompute_modes.begin(), t.recompute_modes.end(), r) != t.recompute_modes.end())
        item.fail("each mode once");
      t.recompute_modes.push_back(r);
    }
    std::sort(t.recompute_modes.begin(), t.recompute_modes.end());
  }
  t.headroom_GiB = obj.get_double("headroom_GiB", Bound::non_negative, t.headroom_GiB);
  t.sequence_parallel = obj.get_bool("sequence_parallel", t.sequence_parallel);
  if (auto v = obj.find("grad_reduce_dtype")) t.grad_reduce_dtype = parse_choice(*v, kGradPrecisions);
  if (auto v = obj.find("runtime")) t.runtime = parse_choice(*v, kRuntimes);
  if (auto v = obj.find("pipeline_p2p")) t.pipeline_p2p = parse_choice(*v, kPipelineP2P);
  if (auto v = obj.find("attention_kernel")) t.attention_kernel = parse_choice(*v, kAttentionKernels);
  t.overlap_grad_reduce = obj.get_bool("overlap_grad_reduce", t.overlap_grad_reduce);
  t.fused_cross_entropy = obj.get_bool("fused_cross_entropy", t.fused_cross_entropy);
  t.micro_batch_per_replica = obj.get_bool("micro_batch_per_replica", t.micro_batch_per_replica);
  check_training(t, obj.file());
  return t;
}

}  // namespace

// ------------------------------------------------------------------ public

bool looks_like_path(const std::string& ref) {
  const std::string ext = fs::path(ref).extension().string();
  return ref.find('/') != std::string::npos || ext == ".yaml" || ext == ".yml";
}

bool is_file_reference(const std::string& ref) {
  if (looks_like_path(ref)) return true;
  std::error_code ec;
  return fs::is_regular_file(ref, ec);
}

ModelSpec named_model(const std::string& name) {
  if (!is_catalog_model(name)) unknown_name("model", name, catalog_model_names());
  return catalog_model(name);
}

ClusterSpec named_cluster(const std::string& name) {
  if (!is_catalog_cluster(name)) unknown_name("cluster", name, catalog_cluster_names());
  return catalog_cluster(name);
}

TrainingSpec named_training(const std::string& name) {
  if (!is_catalog_training(name)) unknown_name("training", name, catalog_training_names());
  return catalog_training(name);
}

ModelSpec load_model(const std::string& ref) {
  if (!is_file_reference(ref)) return named_model(ref);
  return parse_model(YamlObject(load_yaml_file(ref), ref, ""), stem_of(ref));
}

DeviceSpec load_device(const std::string& ref) {
  if (!is_file_reference(ref)) {
    if (!is_catalog_device(ref)) unknown_name("device", ref, catalog_device_names());
    return catalog_device(ref);
  }
  return load_device_file(ref);
}

ClusterSpec load_cluster(const std::string& ref) {
  if (!is_file_reference(ref)) return named_cluster(ref);
  return parse_cluster(YamlObject(load_yaml_file(ref), ref, ""), stem_of(ref));
}

TrainingSpec load_training(const std::string& ref) {
  if (ref.empty()) return catalog_training(kDefaultTrainingName);
  if (!is_file_reference(ref)) return named_training(ref);
  return parse_training(YamlObject(load_yaml_file(ref), ref, ""));
}

ModelSpec read_model(const YamlObject& obj, const std::string& default_name) { return parse_model(obj, default_name); }

ClusterSpec read_cluster(const YamlObject& obj, const std::string& default_name) {
  return parse_cluster(obj, default_name);
}

TrainingSpec read_training(const YamlObject& obj) { return parse_training(obj); }

void check_training_for_model(const ModelSpec& model, const TrainingSpec& training, const std::string& training_file) {
  if (model.family == ModelFamily::generic && training.seq_len > 0 && training.seq_len != model.seq_len)
    throw InputError(training_file.empty() ? "built-in training settings" : training_file, "seq_len",
                     std::to_string(training.seq_len),
                     "the layer list's own " + std::to_string(model.seq_len) + " of model " + model.name +
                         ", or absent (its layers are measured per sequence of that length)");
}

Problem load_problem(const std::string& model, const std::string& cluster, const std::string& training) {
  Problem p;
  p.model = load_model(model);
  p.cluster = load_cluster(cluster);
  p.training = load_training(training);
  check_training_for_model(p.model, p.training, training);
  return p;
}

std::string validate_file(const std::string& path) {
  // A .json file is read as JSON: its errors are JSON's (line and column,
  // nesting at most kMaxJsonDepth), and a plan or launch manifest is told by
  // its format tag without a YAML tree of the whole file, which for the
  // launch manifest of a large cluster took gigabytes.
  YAML::Node root;
  if (fs::path(path).extension() == ".json") {
    rj::Document doc;
    parse_json(read_file(path), path, doc);
    if (doc.IsObject()) {
      const auto format = doc.FindMember("format");
      if (format != doc.MemberEnd() && format->value.IsString()) {
        const std::string tag = format->value.GetString();
        if (tag == kLaunchManifestFormat) return "launch manifest";
        if (tag == kPlanFormat) return "plan";
      }
    }
    root = yaml_of_json(doc);
  } else {
    root = load_yaml_file(path);
  }
  const YamlObject obj(root, path, "");
  if (auto format = obj.find("format")) {
    const std::string tag = format->as_string();
    if (tag == kLaunchManifestFormat) return "launch manifest";
    if (tag != kPlanFormat) format->fail(std::string(kPlanFormat) + " or " + kLaunchManifestFormat);
    return "plan";
  }
  // A plan or launch manifest without its tag (edited away): named as
  // what its keys say it is, rather than refused as a training file for
  // its `model` key.
  if (obj.has("stages") || obj.has("ranks"))
    throw InputError(path, "format", "<missing>",
                     std::string(kPlanFormat) + " (a plan: it has stages) or " + kLaunchManifestFormat +
                         " (a launch manifest: it has ranks)");
  if (obj.has("groups")) {
    parse_cluster(obj, stem_of(path));
    return "cluster";
  }
  if (obj.has("family") || obj.has("layers")) {
    parse_model(obj, stem_of(path));
    return "model";
  }
  if (obj.has("peak_tflops") || obj.has("memory_GiB") || obj.has("base")) {
    parse_device(obj, stem_of(path));
    return "device";
  }
  if (obj.has("global_batch")) {
    parse_training(obj);
    return "training";
  }
  throw InputError(path, "", detail::join_names(obj.keys()),
                   "the keys of a model (family, layers), device (memory_GiB, peak_tflops), cluster (groups), "
                   "training (global_batch), plan (format: " +
                       std::string(kPlanFormat) + ") or launch manifest (format: " + kLaunchManifestFormat + ") file");
}

// ------------------------------------------------------------- invariants

namespace {

// Characters that print as nothing or change how the line around them
// reads (Unicode general category Cf and the C1 controls): soft hyphen,
// zero-width spaces and joiners, bidirectional marks and overrides, word
// joiner and invisible operators, byte-order mark, annotation marks. And
// Unicode's noncharacters (U+FDD0..U+FDEF, the last two of every plane),
// which are no text to print and which XML 1.0 forbids (U+FFFE and U+FFFF
// in a name had made the report's SVG ill-formed).
bool invisible(long cp) {
  const bool noncharacter = (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe;
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xad || (cp >= 0x200b && cp <= 0x200f) ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff ||
         (cp >= 0xfff9 && cp <= 0xfffb) || noncharacter;
}

}  // namespace

void check_name(const std::string& file, const std::string& key, const std::string& name, bool one_word) {
  if (name.size() > limits::kMaxNameBytes)
    throw InputError(file, key, name,
                     "a name of at most " + std::to_string(limits::kMaxNameBytes) + " bytes (this one has " +
                         std::to_string(name.size()) + ")");
  bool blank = true, control = false, not_host = false;
  std::string shown;
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t at = i;
    const long cp = next_utf8_code_point(name, i);
    // A host name's characters (RFC 1123, and '_' and '.'): '#' starts a
    // comment in a hostfile, ':' and ',' separate its fields, and a
    // non-ASCII space looks like none.
    if (cp < 0 || cp > 0x7f || (!std::isalnum(static_cast<int>(cp)) && cp != '-' && cp != '_' && cp != '.'))
      not_host = true;
    if (cp < 0x20 || cp == 0x7f || invisible(cp)) {
      control = true;
      char code[16];
      if (cp < 0)
        std::snprintf(code, sizeof code, "\\x%02x", static_cast<unsigned char>(name[at]));
      else if (cp <= 0xff)
        std::snprintf(code, sizeof code, "\\x%02lx", cp);
      else
        std::snprintf(code, sizeof code, "\\u%04lx", cp);
      shown += code;
      continue;
    }
    shown.append(name, at, i - at);
    if (cp != ' ') blank = false;
  }
  // ' llama' and 'llama' would be two names that read as one.
  const bool padded = !name.empty() && (name.front() == ' ' || name.back() == ' ');
  if (blank || control || padded || (one_word && not_host))
    throw InputError(file, key, shown,
                     one_word ? "a name of letters, digits, '-', '_' and '.' (a column of the hostfile and "
                                "node list, and a prefix of host names)"
                              : "a name of printable characters (UTF-8, none invisible), not blank, without "
                                "leading or trailing spaces");
}


void check_model(const ModelSpec& m, const std::string& file, const std::string& path) {
  using namespace limits;
  auto require = [&](bool ok, const char* key, double value, const std::string& allowed) {
    if (!ok) throw InputError(file, under(path, key), shown_number(value), allowed);
  };
  check_name(file, under(path, "name"), m.name, false);
  require_int(file, under(path, "seq_len"), m.seq_len, 1, kMaxSeqLen);
  if (m.family == ModelFamily::generic) {
    require(m.layers > 0 && static_cast<std::size_t>(m.layers) == m.generic_layers.size(), "layers", m.layers,
            "the number of entries of the layer list (" + std::to_string(m.generic_layers.size()) + ", at least 1)");
    require_int(file, under(path, "layers"), m.layers, 1, kMaxLayers, " entries");
    require(m.heads == 1 && m.kv_heads == 1, "heads", m.heads, "1 (generic layers are not tensor-parallel)");
    for (std::size_t i = 0; i < m.generic_layers.size(); ++i) {
      const GenericLayer& g = m.generic_layers[i];
      const std::string at = "layers[" + std::to_string(i) + "].";
      require_number(file, under(path, at + "params"), g.params, 0.0, kMaxLayerParams);
      require(std::floor(g.params) == g.params, (at + "params").c_str(), g.params, "a whole number of parameters");
      require_number(file, under(path, at + "forward_gflop"), g.forward_gflop, 0.0, kMaxLayerGflop);
      require_number(file, under(path, at + "activation_MB"), g.activation_MB, 0.0, kMaxLayerMB);
      require_number(file, under(path, at + "output_MB"), g.output_MB, 0.0, kMaxLayerMB);
    }
    // A model of no work and no weights trains in no time: every plan
    // would tie at an iteration of overheads alone.
    double work = 0;
    for (const GenericLayer& g : m.generic_layers) work += g.forward_gflop + g.params;
    require(work > 0, "layers", m.layers,
            "layers with work: at least one with forward_gflop or params above 0 (all " +
                std::to_string(m.generic_layers.size()) + " have neither)");
    return;
  }
  require(m.generic_layers.empty(), "layers", m.layers, "a layer count (a layer list needs family: generic)");
  // In this order: a derived value (the GPT MLP width 4·hidden) is refused
  // by the key it comes from.
  require_int(file, under(path, "layers"), m.layers, 1, kMaxLayers);
  require_int(file, under(path, "hidden"), m.hidden, 1, kMaxHidden);
  require_int(file, under(path, "ffn_hidden"), m.ffn_hidden, 1, kMaxFfnHidden);
  require_int(file, under(path, "heads"), m.heads, 1, m.hidden, " (at most hidden)");
  require(m.kv_heads > 0, "kv_heads", m.kv_heads, describe_int(Bound::positive));
  require_int(file, under(path, "vocab"), m.vocab, 1, kMaxVocab);
  require(m.hidden % m.heads == 0, "hidden", m.hidden,
          "a multiple of heads (" + std::to_string(m.heads) + "): each head gets hidden / heads dimensions");
  require(m.heads % m.kv_heads == 0, "kv_heads", m.kv_heads,
          "a divisor of heads (" + std::to_string(m.heads) + "): query heads share key/value heads in equal groups");
}

void check_device(const DeviceSpec& d, const std::string& file, const std::string& path) {
  using namespace limits;
  auto require = [&](bool ok, const char* key, double value, const std::string& allowed) {
    if (!ok) throw InputError(file, under(path, key), shown_number(value), allowed);
  };
  auto range = [&](const char* key, double value, double lo, double hi) {
    require_number(file, under(path, key), value, lo, hi);
  };
  // One word of host-name characters: the exports print it as a column
  // (nodelist, hostfile) and a group without a name takes it.
  check_name(file, under(path, "name"), d.name, true);
  range("memory_GiB", d.memory_GiB, kMinMemoryGiB, kMaxMemoryGiB);
  range("peak_tflops", d.peak_tflops, kMinTflops, kMaxTflops);
  range("peak_fp32_tflops", d.peak_fp32_tflops, kMinTflops, kMaxTflops);
  // 0: the device has no such tensor cores.
  if (d.peak_tf32_tflops != 0) range("peak_tf32_tflops", d.peak_tf32_tflops, kMinTflops, kMaxTflops);
  if (d.peak_fp8_tflops != 0) range("peak_fp8_tflops", d.peak_fp8_tflops, kMinTflops, kMaxTflops);
  // The peaks against each other, as every GPU since Volta has them (dense
  // rates): FP32 and TF32 no faster than the 16-bit tensor cores, FP8 at
  // most twice them (H100, L40S, MI300X: 2.0-2.02x; a sparse figure is 4x).
  // MFU is measured against the 16-bit peak, so a larger ratio gave MFUs
  // above 1 without a word.
  const std::string sixteen = shown_number(d.peak_tflops);
  require(d.peak_fp32_tflops <= d.peak_tflops, "peak_fp32_tflops", d.peak_fp32_tflops,
          "at most peak_tflops (" + sixteen + "): CUDA cores are no faster than 16-bit tensor cores");
  require(d.peak_tf32_tflops <= d.peak_tflops, "peak_tf32_tflops", d.peak_tf32_tflops,
          "0 (none) or at most peak_tflops (" + sixteen + ")");
  require(d.peak_fp8_tflops <= kMostFp8Over16Bit * d.peak_tflops, "peak_fp8_tflops", d.peak_fp8_tflops,
          "0 (none) or at most " + shown_number(kMostFp8Over16Bit) + " x peak_tflops (" + sixteen +
              "; dense FP8 runs at twice the 16-bit rate, a sparse figure is not a training peak)");
  range("hbm_GBps", d.hbm_GBps, kMinGBps, kMaxGBps);
  const std::string efficiency = number_range_text(kMinEfficiency, 1);
  auto is_efficiency = [](double f) { return f >= kMinEfficiency && f <= 1; };
  require(is_efficiency(d.memory_efficiency), "memory_efficiency", d.memory_efficiency, efficiency);
  // 0 means no NVLink (the PCIe link is used); any other value is a link.
  require(d.nvlink_GBps == 0 || (d.nvlink_GBps >= kMinGBps && d.nvlink_GBps <= kMaxGBps), "nvlink_GBps",
          d.nvlink_GBps, "0 (no NVLink) or " + number_range_text(kMinGBps, kMaxGBps));
  range("pcie_GBps", d.pcie_GBps, kMinGBps, kMaxGBps);
  range("nic_GBps", d.nic_GBps, kMinGBps, kMaxGBps);
  require(is_efficiency(d.attention_forward_efficiency), "attention_forward_efficiency",
          d.attention_forward_efficiency, efficiency);
  require(is_efficiency(d.attention_backward_efficiency), "attention_backward_efficiency",
          d.attention_backward_efficiency, efficiency);
  // FlashAttention-3 / cuDNN: both figures, or neither (0, 0).
  const bool flash3 = d.flash3_forward_efficiency != 0 || d.flash3_backward_efficiency != 0;
  for (const auto& [key, value] : {std::pair<const char*, double>{"flash3_forward_efficiency", d.flash3_forward_efficiency},
                                   {"flash3_backward_efficiency", d.flash3_backward_efficiency}})
    require(flash3 ? is_efficiency(value) : value == 0, key, value,
            efficiency + " for both flash3 figures, or 0 for both (no FlashAttention-3 kernel)");
  require(!d.gemm_efficiency.empty(), "gemm_efficiency", 0, "a non-empty list of [gemm_gflop, efficiency] pairs");
  for (std::size_t i = 0; i < d.gemm_efficiency.size(); ++i) {
    const EfficiencyPoint& p = d.gemm_efficiency[i];
    // Each point is [gemm_gflop, efficiency]: the path names the element.
    const std::string at = under(path, "gemm_efficiency[" + std::to_string(i) + "]");
    if (!(p.gemm_gflop > 0 && std::isfinite(p.gemm_gflop)) || (i > 0 && p.gemm_gflop <= d.gemm_efficiency[i - 1].gemm_gflop))
      throw InputError(file, at + "[0]", shown_number(p.gemm_gflop), "gemm_gflop > 0, finite, strictly increasing");
    if (!is_efficiency(p.efficiency)) throw InputError(file, at + "[1]", shown_number(p.efficiency), efficiency);
  }
}

void check_cluster(const ClusterSpec& c, const std::string& file) {
  using namespace limits;
  require_number(file, "inter_group_GBps", c.inter_group_GBps, kMinGBps, kMaxGBps);
  require_number(file, "inter_group_latency_us", c.inter_group_latency_us, 0.0, kMaxLatencyUs);
  check_name(file, "name", c.name, false);
  if (c.groups.empty()) throw InputError(file, "groups", "[]", "a non-empty list of node groups");
  long long total = 0;
  for (std::size_t i = 0; i < c.groups.size(); ++i) {
    const NodeGroup& g = c.groups[i];
    const std::string at = "groups[" + std::to_string(i) + "].";
    check_name(file, at + "name", g.name, true);
    require_int(file, at + "gpus_per_node", g.gpus_per_node, 1, kMaxGpusPerNode);
    // GPU counts are ints throughout: the whole cluster's must fit with room.
    const long long room = (kMaxClusterGpus - total) / g.gpus_per_node;  // nodes this group may have
    if (g.nodes < 1 || g.nodes > room) {
      throw InputError(file, at + "nodes", std::to_string(g.nodes),
                       (room >= 1 ? int_range_text(1, room) : std::string("no more nodes")) + " (at most " +
                           std::to_string(kMaxClusterGpus) + " GPUs in the whole cluster; " +
                           std::to_string(g.gpus_per_node) + " per node" +
                           (total > 0 ? ", " + std::to_string(total) + " in earlier groups" : std::string()) + ")");
    }
    total += static_cast<long long>(g.nodes) * g.gpus_per_node;
    require_number(file, at + "intra_node_GBps", g.intra_node_GBps, kMinGBps, kMaxGBps);
    require_number(file, at + "intra_node_latency_us", g.intra_node_latency_us, 0.0, kMaxLatencyUs);
    require_number(file, at + "inter_node_GBps", g.inter_node_GBps, kMinGBps, kMaxGBps);
    require_number(file, at + "inter_node_latency_us", g.inter_node_latency_us, 0.0, kMaxLatencyUs);
    if (g.nics_per_node != 0) require_int(file, at + "nics_per_node", g.nics_per_node, 1, kMaxGpusPerNode, " (or absent: one per GPU)");
    // A ring over the node's NICs cannot beat their nominal rate together.
    const double nics_together = g.inter_node_GBps * g.gpus_per_node;
    if (g.inter_node_busbw_GBps != 0 && !(g.inter_node_busbw_GBps >= kMinGBps && g.inter_node_busbw_GBps <= nics_together))
      throw InputError(file, at + "inter_node_busbw_GBps", shown_number(g.inter_node_busbw_GBps),
                       number_range_text(kMinGBps, nics_together) + " (a ring over the node's NICs reaches at most "
                       "their rate together, gpus_per_node x inter_node_GBps)");
  }
}

void check_training(const TrainingSpec& t, const std::string& file) {
  using namespace limits;
  require_int(file, "global_batch", t.global_batch, 1, kMaxGlobalBatch, " sequences");
  if (t.seq_len != 0) require_int(file, "seq_len", t.seq_len, 1, kMaxSeqLen, " (or absent: the model's)");
  if (t.zero < 0 || t.zero > 3) throw InputError(file, "zero", std::to_string(t.zero), "0, 1, 2 or 3");
  if (t.micro_batch_sizes.empty()) throw InputError(file, "micro_batch_sizes", "[]", "a non-empty list of positive integers");
  for (std::size_t i = 0; i < t.micro_batch_sizes.size(); ++i)
    require_int(file, "micro_batch_sizes[" + std::to_string(i) + "]", t.micro_batch_sizes[i], 1, kMaxGlobalBatch);
  if (t.recompute_modes.empty()) throw InputError(file, "recompute", "[]", "a non-empty list of none, selective, full");
  require_number(file, "headroom_GiB", t.headroom_GiB, 0.0, kMaxMemoryGiB);
}

std::string input_kind(const std::string& path) {
  try {
    return validate_file(path);
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace autohaap
