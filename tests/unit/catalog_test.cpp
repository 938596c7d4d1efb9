// The built-in catalog: names, published facts, link defaults, and that
// every entry passes the loader's own validation.
#include "autohaap/io/catalog.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "autohaap/error.hpp"
#include "autohaap/io/spec_loader.hpp"

namespace autohaap {
namespace {

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// Parameters of a transformer from its shape, written independently of the
// cost model: per layer attention (q and o: h*h each; k and v: h*kv*d each)
// plus the MLP (two h*ffn matrices for GeLU, three for SwiGLU), plus the
// token embedding, the output layer when untied, and GPT's learned
// positions. Norms and biases are left out (< 0.1%).
double approx_params(const ModelSpec& m) {
  const double h = m.hidden, d = m.head_dim(), kv = m.kv_heads;
  const double attention = 2 * h * h + 2 * h * kv * d;
  const double mlp = (m.family == ModelFamily::llama ? 3 : 2) * h * m.ffn_hidden;
  double total = m.layers * (attention + mlp) + m.vocab * h;
  if (!m.tied_embeddings) total += m.vocab * h;
  if (m.family == ModelFamily::gpt) total += m.seq_len * h;
  return total;
}

TEST(Catalog, DeviceNamesAreExactlyTheDesignList) {
  const std::set<std::string> expected = {"a100-40gb", "a100-80gb", "a800",   "h100-sxm",  "h100-pcie", "h800",
                                          "h20",       "h200",      "gh200",  "v100-16gb", "v100-32gb", "a10",
                                          "t4",        "l4",        "a40",    "l40s",      "rtx3090",   "titan-rtx",
                                          "rtx2080ti", "mi250x",    "mi300x"};
  EXPECT_EQ(as_set(catalog_device_names()), expected);
  EXPECT_EQ(catalog_device_names().size(), expected.size());  // no duplicates
}

TEST(Catalog, EveryDevicePassesValidationWithItsArchitectureDefaults) {
  for (const auto& name : catalog_device_names()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(is_catalog_device(name));
    const DeviceSpec d = catalog_device(name);
    EXPECT_EQ(d.name, name);
    EXPECT_NO_THROW(check_device(d, "catalog"));
    EXPECT_DOUBLE_EQ(d.memory_efficiency, 0.8);
    const std::vector<EfficiencyPoint> curve = architecture_gemm_curve(d.architecture, d.peak_tflops);
    ASSERT_EQ(d.gemm_efficiency.size(), curve.size());
    for (std::size_t i = 0; i < curve.size(); ++i) {
      EXPECT_EQ(d.gemm_efficiency[i].gemm_gflop, curve[i].gemm_gflop);
      EXPECT_EQ(d.gemm_efficiency[i].efficiency, curve[i].efficiency);
    }
    // The backward attention kernel is never faster than the forward one.
    EXPECT_LE(d.attention_backward_efficiency, d.attention_forward_efficiency);
    // Tensor-core peak is always above the plain FP32 rate.
    EXPECT_GT(d.peak_tflops, d.peak_fp32_tflops);
  }
}

TEST(Catalog, UncheckedGenerationsAreTheOnesWithoutMeasuredRuns) {
  // The generations whose figures tests/data/measured_runs.csv scores
  // (MeasuredRuns): V100, A100, H100/H200, MI250 and MI300X rows. Turing
  // and Ada have no row there, so the CLI notes their devices' times may be
  // optimistic.
  for (const std::string& name : architecture_names()) {
    SCOPED_TRACE(name);
    const ArchitectureProfile& a = architecture_profile(*parse_architecture(name));
    const bool measured = name == "volta" || name == "ampere" || name == "hopper" || name == "cdna2" ||
                          name == "cdna3";
    EXPECT_EQ(*a.checked_against != '\0', measured);
  }
  // A catalog device keeps its generation's figures; one figure of its own
  // (a device file's, or its own measurements') and it no longer does.
  DeviceSpec d = catalog_device("mi250x");
  EXPECT_TRUE(uses_architecture_defaults(d));
  d.attention_forward_efficiency *= 0.5;
  EXPECT_FALSE(uses_architecture_defaults(d));
  d = catalog_device("l40s");
  d.gemm_efficiency.back().efficiency *= 0.9;
  EXPECT_FALSE(uses_architecture_defaults(d));
  d = catalog_device("l40s");
  d.memory_efficiency = 0.7;
  EXPECT_FALSE(uses_architecture_defaults(d));
}

TEST(Catalog, ArchitectureCurvesDeriveFromTheReference) {
  // The A100 is the reference: its curve is the fitted one, unchanged.
  const DeviceSpec a100 = catalog_device("a100-80gb");
  ASSERT_EQ(a100.gemm_efficiency.size(), kReferenceGemmEfficiency.size());
  for (std::size_t i = 0; i < kReferenceGemmEfficiency.size(); ++i) {
    EXPECT_DOUBLE_EQ(a100.gemm_efficiency[i].gemm_gflop, kReferenceGemmEfficiency[i].gemm_gflop);
    EXPECT_DOUBLE_EQ(a100.gemm_efficiency[i].efficiency, kReferenceGemmEfficiency[i].efficiency);
  }
  // L40S: the same duration reaches the same fraction, so a GEMM 362.05/312
  // times larger sits where the A100's did, scaled by the ratio of the
  // generations' largest-GEMM fractions.
  const DeviceSpec l40s = catalog_device("l40s");
  const double k = 362.05 / 312;
  const double ratio = architecture_profile(Architecture::ada).gemm_peak_fraction /
                       architecture_profile(Architecture::ampere).gemm_peak_fraction;
  for (double gflop : {0.05, 3.0, 40.0, 2000.0})
    EXPECT_NEAR(gemm_efficiency(l40s, gflop * k), gemm_efficiency(a100, gflop) * ratio, 1e-12) << gflop;
  // Hopper was measured: from the smallest measured size up its curve is
  // the measured points times the training share; below, the derived
  // curve's shape scaled to meet them; a Hopper part with another peak
  // (H100 PCIe) reads the same curve shifted by the peak ratio.
  const DeviceSpec h100 = catalog_device("h100-sxm");
  const ArchitectureProfile& hopper = architecture_profile(Architecture::hopper);
  ASSERT_FALSE(hopper.measured_gemm.empty());
  for (const EfficiencyPoint& p : hopper.measured_gemm)
    EXPECT_NEAR(gemm_efficiency(h100, p.gemm_gflop), p.efficiency * training_over_isolated(), 1e-12) << p.gemm_gflop;
  const DeviceSpec pcie = catalog_device("h100-pcie");
  for (double gflop : {0.05, 3.0, 40.0, 2000.0, 1e5})
    EXPECT_NEAR(gemm_efficiency(pcie, gflop * 756 / 989.4), gemm_efficiency(h100, gflop), 1e-12) << gflop;
  // At one size the faster device is less efficient (shorter kernel).
  EXPECT_LT(gemm_efficiency(h100, 10), gemm_efficiency(a100, 10));
  EXPECT_EQ(parse_architecture("hopper"), Architecture::hopper);
  EXPECT_FALSE(parse_architecture("kepler").has_value());
}

TEST(Catalog, DeviceFactsFromDatasheets) {
  const DeviceSpec a100 = catalog_device("a100-80gb");
  EXPECT_DOUBLE_EQ(a100.memory_GiB, 80);
  EXPECT_DOUBLE_EQ(a100.peak_tflops, 312);
  EXPECT_DOUBLE_EQ(a100.peak_fp32_tflops, 19.5);
  EXPECT_DOUBLE_EQ(a100.hbm_GBps, 2039);
  EXPECT_DOUBLE_EQ(a100.nvlink_GBps, 300);  // 600 bidirectional
  EXPECT_DOUBLE_EQ(a100.pcie_GBps, 32);     // Gen4
  EXPECT_DOUBLE_EQ(catalog_device("a100-40gb").hbm_GBps, 1555);
  EXPECT_DOUBLE_EQ(catalog_device("h100-sxm").nvlink_GBps, 450);
  EXPECT_DOUBLE_EQ(catalog_device("h100-sxm").pcie_GBps, 64);  // Gen5
  EXPECT_DOUBLE_EQ(catalog_device("h200").memory_GiB, 141);
  EXPECT_DOUBLE_EQ(catalog_device("v100-32gb").peak_tflops, 125);
  EXPECT_DOUBLE_EQ(catalog_device("v100-32gb").pcie_GBps, 16);  // Gen3
  EXPECT_DOUBLE_EQ(catalog_device("v100-16gb").memory_GiB, 16);
  EXPECT_DOUBLE_EQ(catalog_device("gh200").pcie_GBps, 450);     // NVLink-C2C
  EXPECT_DOUBLE_EQ(catalog_device("mi300x").nvlink_GBps, 448);  // 896 / 2
  EXPECT_DOUBLE_EQ(catalog_device("mi250x").hbm_GBps, 3276.8);
  // FP16 with FP32 accumulation on GeForce cards.
  EXPECT_DOUBLE_EQ(catalog_device("rtx3090").peak_tflops, 71);
  EXPECT_DOUBLE_EQ(catalog_device("rtx2080ti").peak_tflops, 53.8);
  // NVLink bridges join pairs only: no usable NVLink in an 8-GPU node.
  for (const char* bridged : {"h100-pcie", "a40", "rtx3090", "titan-rtx", "rtx2080ti"})
    EXPECT_EQ(catalog_device(bridged).nvlink_GBps, 0) << bridged;
  // China export variants: reduced NVLink.
  EXPECT_DOUBLE_EQ(catalog_device("a800").nvlink_GBps, 200);
  EXPECT_DOUBLE_EQ(catalog_device("h800").nvlink_GBps, 200);
}

TEST(Catalog, OnlyPreAmpereNvidiaDevicesLackBf16) {
  std::set<std::string> without;
  for (const auto& name : catalog_device_names())
    if (!catalog_device(name).has_bf16) without.insert(name);
  EXPECT_EQ(without, (std::set<std::string>{"v100-16gb", "v100-32gb", "t4", "titan-rtx", "rtx2080ti"}));
}

TEST(Catalog, UnknownDeviceListsAllowedNamesAndHintsTypos) {
  try {
    catalog_device("a100-80g");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "device");
    EXPECT_EQ(e.value(), "a100-80g");
    EXPECT_NE(e.allowed().find("mi300x"), std::string::npos);
    EXPECT_NE(e.allowed().find("did you mean 'a100-80gb'"), std::string::npos);
  }
  EXPECT_FALSE(is_catalog_device("A100"));
}

TEST(Catalog, ModelNamesCoverTheDesignListAndTheGenericExample) {
  const std::set<std::string> expected = {"gpt3-125m", "gpt3-350m",  "gpt3-760m",   "gpt3-1.3b",     "gpt3-2.7b",
                                          "gpt3-6.7b", "gpt3-13b",   "gpt3-175b",   "llama3-8b",     "llama3-70b",
                                          "llama3-405b", "lstm-2layer-lm"};
  EXPECT_EQ(as_set(catalog_model_names()), expected);
  for (const auto& name : catalog_model_names()) {
    SCOPED_TRACE(name);
    const ModelSpec m = catalog_model(name);
    EXPECT_EQ(m.name, name);
    EXPECT_NO_THROW(check_model(m, "catalog"));
  }
  EXPECT_THROW(catalog_model("gpt4"), InputError);
}

TEST(Catalog, PublishedShapesReproducePublishedSizes) {
  // Nominal sizes from the model names; the shapes must land within 3%.
  const std::vector<std::pair<std::string, double>> sizes = {
      {"gpt3-125m", 125e6}, {"gpt3-350m", 350e6}, {"gpt3-760m", 760e6},   {"gpt3-1.3b", 1.3e9},
      {"gpt3-2.7b", 2.7e9}, {"gpt3-6.7b", 6.7e9}, {"gpt3-13b", 13e9},     {"gpt3-175b", 175e9},
      {"llama3-8b", 8e9},   {"llama3-70b", 70e9}, {"llama3-405b", 405e9},
  };
  for (const auto& [name, nominal] : sizes) {
    SCOPED_TRACE(name);
    EXPECT_NEAR(approx_params(catalog_model(name)) / nominal, 1.0, 0.03);
  }
}

TEST(Catalog, ModelShapeDetails) {
  const ModelSpec g = catalog_model("gpt3-175b");
  EXPECT_EQ(g.family, ModelFamily::gpt);
  EXPECT_EQ(g.layers, 96);
  EXPECT_EQ(g.hidden, 12288);
  EXPECT_EQ(g.ffn_hidden, 4 * 12288);
  EXPECT_EQ(g.head_dim(), 128);
  EXPECT_EQ(g.vocab, 50257);
  EXPECT_EQ(g.seq_len, 2048);
  EXPECT_TRUE(g.tied_embeddings);
  EXPECT_FALSE(g.flash_attention);
  EXPECT_EQ(catalog_model("gpt3-1.3b").heads, 16);  // not the paper's 24
  EXPECT_EQ(catalog_model("gpt3-13b").hidden, 5120);  // not the paper's 5140

  const ModelSpec l = catalog_model("llama3-70b");
  EXPECT_EQ(l.family, ModelFamily::llama);
  EXPECT_EQ(l.kv_heads, 8);
  EXPECT_EQ(l.ffn_hidden, 28672);
  EXPECT_EQ(l.vocab, 128256);
  EXPECT_EQ(l.seq_len, 8192);
  EXPECT_FALSE(l.tied_embeddings);
  EXPECT_TRUE(l.flash_attention);
  EXPECT_EQ(catalog_model("llama3-405b").layers, 126);
}

TEST(Catalog, LstmLayersFollowTheirShape) {
  const ModelSpec m = catalog_model("lstm-2layer-lm");
  EXPECT_EQ(m.family, ModelFamily::generic);
  ASSERT_EQ(m.layers, 4);
  ASSERT_EQ(m.generic_layers.size(), 4u);
  EXPECT_EQ(m.heads, 1);
  EXPECT_EQ(m.generic_layers[0].name, "embedding");
  EXPECT_DOUBLE_EQ(m.generic_layers[0].params, 32000.0 * 2048);
  // 4 gates x (input weights + recurrent weights + bias), h = 2048.
  EXPECT_DOUBLE_EQ(m.generic_layers[1].params, 33562624);
  // Two gate GEMMs per token: 2 * 4 * 2h^2 FLOPs x 512 tokens.
  EXPECT_DOUBLE_EQ(m.generic_layers[1].forward_gflop, 34.359738368);
  EXPECT_DOUBLE_EQ(m.generic_layers[2].params, m.generic_layers[1].params);
  EXPECT_DOUBLE_EQ(m.generic_layers[3].forward_gflop, 2.0 * 512 * 2048 * 32000 / 1e9);
  // The output layer keeps the logits: the largest activation by far.
  EXPECT_GT(m.generic_layers[3].activation_MB, 4 * m.generic_layers[1].activation_MB);
}

TEST(Catalog, NodeGroupLinkDefaults) {
  const NodeGroup nv = make_node_group(catalog_device("a100-80gb"), 2, 8);
  EXPECT_EQ(nv.name, "a100-80gb");
  EXPECT_EQ(nv.gpus(), 16);
  EXPECT_DOUBLE_EQ(nv.intra_node_GBps, 300);
  EXPECT_DOUBLE_EQ(nv.intra_node_latency_us, 5);
  EXPECT_DOUBLE_EQ(nv.inter_node_GBps, 25);  // DGX A100: 8 x 200 Gb/s for 8 GPUs
  EXPECT_DOUBLE_EQ(make_node_group(catalog_device("h100-sxm"), 2, 8).inter_node_GBps, 50);  // 8 x 400 Gb/s
  EXPECT_DOUBLE_EQ(make_node_group(catalog_device("v100-32gb"), 2, 8).inter_node_GBps, 6.25);
  EXPECT_DOUBLE_EQ(nv.inter_node_latency_us, 10);

  const NodeGroup pcie = make_node_group(catalog_device("t4"), 1, 4);
  EXPECT_DOUBLE_EQ(pcie.intra_node_GBps, 16);
  EXPECT_DOUBLE_EQ(pcie.intra_node_latency_us, 10);
  EXPECT_DOUBLE_EQ(make_node_group(catalog_device("l40s"), 1, 8).intra_node_GBps, 32);
}

TEST(Catalog, ClustersAndTheDefaultAlias) {
  const std::set<std::string> expected = {"default",         "a100x8",          "a100-80gb-128nodes",
                                          "h100-sxm-4nodes", "mixed-a100-v100", "mixed-h100-a100",
                                          "mixed-h100-a100-v100"};
  EXPECT_EQ(as_set(catalog_cluster_names()), expected);

  const ClusterSpec d = catalog_cluster("default");
  EXPECT_EQ(d.name, kDefaultClusterName);
  ASSERT_EQ(d.groups.size(), 2u);
  EXPECT_EQ(d.groups[0].device.name, "a100-40gb");
  EXPECT_EQ(d.groups[1].device.name, "v100-32gb");
  EXPECT_EQ(d.total_gpus(), 32);
  EXPECT_DOUBLE_EQ(d.inter_group_GBps, 12.5);
  EXPECT_DOUBLE_EQ(d.inter_group_latency_us, 20);
  EXPECT_DOUBLE_EQ(d.groups[1].intra_node_GBps, 150);  // V100 NVLink 2

  EXPECT_EQ(catalog_cluster("a100x8").total_gpus(), 8);
  EXPECT_EQ(catalog_cluster("a100-80gb-128nodes").total_gpus(), 1024);
  std::set<std::string> devices;
  for (const auto& g : catalog_cluster("mixed-h100-a100-v100").groups) devices.insert(g.device.name);
  EXPECT_EQ(devices.size(), 3u);
  EXPECT_THROW(catalog_cluster("mixed"), InputError);
  for (const std::string& name : catalog_cluster_names()) EXPECT_NO_THROW(check_cluster(catalog_cluster(name), name));
}

TEST(Catalog, TrainingSetups) {
  const TrainingSpec d = catalog_training("default");
  const TrainingSpec plain;
  EXPECT_EQ(d.global_batch, plain.global_batch);
  EXPECT_EQ(d.micro_batch_sizes, plain.micro_batch_sizes);
  EXPECT_EQ(d.recompute_modes, plain.recompute_modes);
  EXPECT_EQ(d.zero, plain.zero);

  const TrainingSpec m = catalog_training("gpt3-175b-megatron");
  EXPECT_EQ(m.global_batch, 1536);
  EXPECT_EQ(m.seq_len, 2048);
  EXPECT_EQ(m.micro_batch_sizes, std::vector<int>{1});
  EXPECT_EQ(m.recompute_modes, std::vector<Recompute>{Recompute::full});
  EXPECT_EQ(m.zero, 0);
  EXPECT_THROW(catalog_training("fast"), InputError);
  for (const std::string& name : catalog_training_names()) EXPECT_NO_THROW(check_training(catalog_training(name), name));
}

}  // namespace
}  // namespace autohaap
