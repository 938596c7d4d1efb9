// Small problems for the search tests: tiny transformer and layer-list
// models on two-group clusters whose devices are shrunk until memory binds,
// so recompute, capacity and feasibility all matter while the exhaustive
// reference still finishes in well under a second.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/cost/cost_parameters.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap::search_fixtures {

inline ModelSpec tiny_gpt(int layers, int hidden = 512, int heads = 8) {
  ModelSpec m;
  m.name = "tiny-gpt";
  m.family = ModelFamily::gpt;
  m.layers = layers;
  m.hidden = hidden;
  m.ffn_hidden = 4 * hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.vocab = 2048;
  m.seq_len = 512;
  m.tied_embeddings = true;
  return m;
}

// A sequential network whose layers differ: widening then narrowing.
inline ModelSpec tiny_layer_list(int layers) {
  ModelSpec m;
  m.name = "tiny-list";
  m.family = ModelFamily::generic;
  m.layers = layers;
  m.seq_len = 512;
  for (int l = 0; l < layers; ++l) {
    const double width = 1.0 + (l < layers / 2 ? l : layers - l);
    m.generic_layers.push_back({"layer" + std::to_string(l), 2e6 * width, 20.0 * width, 4.0 * width, 1.0 + l % 3});
  }
  return m;
}

// A layer list on two_group_problem's cluster whose layers' outputs are
// wide or narrow at random (40% wide), so a stage's sends and, under
// DeepSpeed, its memory need not grow with its range. Per layer, when
// asked: its forward GFLOP uniform in [gflop_min, gflop_max], then its
// stored activations uniform in [1, activation_max_MB], then its output;
// the rest is tiny_layer_list's.
struct RisingAndFallingOutputs {
  int layers = 6;
  double fast_GiB = 6, slow_GiB = 4;
  double wide_MB = 3000, narrow_MB = 1;
  double gflop_min = 0, gflop_max = 0;  // 0: tiny_layer_list's
  double activation_max_MB = 0;         // 0: tiny_layer_list's
  Runtime runtime = Runtime::megatron;
};
// A catalog device with `memory_GiB` left for the model's tensors by a
// stage of a pipeline without tensor or data parallelism: the capacity also
// covers the CUDA context and the pipeline's NCCL communicator, so small
// cases stay tight on memory (stages with tp or dp > 1 have less room).
inline DeviceSpec shrunk(const std::string& name, double memory_GiB) {
  const CostParameters c;
  DeviceSpec d = catalog_device(name);
  d.memory_GiB = memory_GiB + c.cuda_context_GiB + 3 * c.nccl_GiB_per_communicator;
  return d;
}

// The best plan's iteration time of a search that found one.
inline double best_time(const SearchResult& r) { return r.top.at(0).predicted.iteration_time_s; }

// `g` under another name: two groups of one device and shape, told apart.
inline NodeGroup named(NodeGroup g, const std::string& name) {
  g.name = name;
  return g;
}

// Two groups: a fast device and a slow one, each with little memory.
inline Problem two_group_problem(int layers, double fast_GiB = 0.45, double slow_GiB = 0.30, int fast_gpus = 2,
                                 int slow_nodes = 1, int slow_gpus_per_node = 2) {
  Problem p;
  p.model = tiny_gpt(layers);
  p.cluster.name = "tiny-mixed";
  p.cluster.groups = {make_node_group(shrunk("a100-80gb", fast_GiB), 1, fast_gpus),
                      make_node_group(shrunk("v100-32gb", slow_GiB), slow_nodes, slow_gpus_per_node)};
  p.cluster.inter_group_GBps = 12.5;
  p.cluster.inter_group_latency_us = 20;
  p.training.global_batch = 16;
  p.training.micro_batch_sizes = {1, 2, 4};
  p.training.headroom_GiB = 0;
  p.training.precision = Precision::fp16;  // the V100 has no BF16
  return p;
}

inline Problem rising_and_falling_outputs(const RisingAndFallingOutputs& o, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> gflop(o.gflop_min, o.gflop_max), activation(1, o.activation_max_MB);
  std::bernoulli_distribution wide(0.4);
  Problem problem = two_group_problem(o.layers, o.fast_GiB, o.slow_GiB);
  problem.model = tiny_layer_list(o.layers);
  for (GenericLayer& layer : problem.model.generic_layers) {
    if (o.gflop_max > 0) layer.forward_gflop = gflop(rng);
    if (o.activation_max_MB > 0) layer.activation_MB = activation(rng);
    layer.output_MB = wide(rng) ? o.wide_MB : o.narrow_MB;
  }
  problem.training.runtime = o.runtime;
  return problem;
}

// A seeded random small case. Sizes stay small enough for the exhaustive
// reference (a few hundred thousand candidates at most).
inline Problem random_problem(std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](std::initializer_list<int> values) {
    std::uniform_int_distribution<std::size_t> d(0, values.size() - 1);
    return *(values.begin() + d(rng));
  };
  std::uniform_real_distribution<double> memory(0.2, 0.6);
  Problem p;
  p.model = tiny_gpt(pick({4, 5, 6, 7, 8}), pick({256, 512, 768}), pick({4, 8}));
  p.cluster.name = "random-mixed";
  const char* fast = seed % 2 ? "h100-sxm" : "a100-80gb";
  const char* slow = seed % 3 ? "v100-32gb" : "t4";
  p.cluster.groups = {make_node_group(shrunk(fast, memory(rng)), 1, pick({1, 2, 4})),
                      make_node_group(shrunk(slow, memory(rng)), pick({1, 2}), pick({1, 2}))};
  p.cluster.inter_group_GBps = 12.5;
  p.cluster.inter_group_latency_us = 20;
  p.training.global_batch = pick({8, 16, 32});
  p.training.micro_batch_sizes = {1, 2, 4};
  p.training.headroom_GiB = 0;
  p.training.precision = Precision::fp16;
  p.training.zero = pick({0, 1, 3});
  return p;
}

// `plan` with each stage in its fastest recompute mode (the training's
// order) that fits where it is.
inline Plan in_fastest_fitting_modes(const CostModel& cost, Plan plan) {
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    for (Recompute mode : cost.problem().training.recompute_modes) {
      plan.stages[i].recompute = mode;
      if (cost.stage(plan, static_cast<int>(i)).fits()) break;
    }
  }
  return plan;
}

}  // namespace autohaap::search_fixtures
