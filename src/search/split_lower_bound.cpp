#include "autohaap/search/split_lower_bound.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

namespace autohaap {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Least T with sum_i min(cap_i, max(0, T - edge_i) / rate_i) >= need, by
// bisection; returns the low end, so the result never exceeds the true T.
double fractional_bottleneck(const std::vector<double>& edge, const std::vector<double>& rate,
                             const std::vector<double>& cap, double need, double low) {
  // A hair of slack on `need`: (E + c r - E) / r may round below c.
  need *= 1 - 1e-12;
  auto held = [&](double T) {
    double total = 0;
    for (std::size_t i = 0; i < edge.size(); ++i) {
      if (rate[i] <= 0) return kInf;
      total += std::min(cap[i], std::max(0.0, T - edge[i]) / rate[i]);
    }
    return total;
  };
  double high = low;
  for (std::size_t i = 0; i < edge.size(); ++i) high = std::max(high, edge[i] + cap[i] * rate[i]);
  if (held(low) >= need) return low;
  if (held(high) < need) return kInf;
  for (int iter = 0; iter < 200 && high - low > 1e-15 * high; ++iter) {
    const double mid = 0.5 * (low + high);
    if (held(mid) >= need)
      high = mid;
    else
      low = mid;
  }
  return low;
}

// Identical layers: the least T at which the stages hold L whole layers,
// stage i at most cap_i of them, each taking edge_i + k rate_i for k
// layers. A stage of pace T holds the k with edge_i + k rate_i <= T, so T
// is the L-th smallest of those finish times over all stages (a merge of
// the stages' ascending sequences). Whole layers make it at least the
// fractional bound, by up to one layer of the slowest stage.
double whole_layer_bottleneck(const std::vector<double>& edge, const std::vector<double>& rate,
                              const std::vector<double>& cap, int layers) {
  using Finish = std::pair<double, std::size_t>;  // finish time of a stage's next layer, stage
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> next;
  std::vector<int> held(edge.size(), 0);
  for (std::size_t i = 0; i < edge.size(); ++i) {
    if (rate[i] <= 0) return kInf;
    if (cap[i] >= 1) next.push({edge[i] + rate[i], i});
  }
  double T = 0;
  for (int n = 0; n < layers; ++n) {
    if (next.empty()) return kInf;
    const auto [finish, i] = next.top();
    next.pop();
    T = finish;
    if (++held[i] < cap[i]) next.push({edge[i] + (held[i] + 1) * rate[i], i});
  }
  return T;
}

}  // namespace

double layer_seconds(const CostModel& cost, LatencyCache* cache, Recompute mode, const StageSlot& s, int micro_batch,
                     int layer, bool first, bool last) {
  const StageShape shape{s.group, s.tp, s.dp, mode};
  const LayerKey key{s.group, s.tp, s.dp, micro_batch, static_cast<int>(mode), layer, first, last};
  auto compute = [&] {
    LayerEntry e;
    Timing t;
    LayerMemory m;
    if (first || last) {
      t = cost.edge_timing(shape, micro_batch, first, last);
      m = cost.edge_memory(shape, micro_batch, first, last);
    } else {
      t = cost.layer_timing(shape, micro_batch, std::max(layer, 0));
      m = cost.layer_memory(shape, micro_batch, std::max(layer, 0));
    }
    e.forward_s = t.forward_s;
    e.backward_s = t.backward_s;
    e.static_bytes = m.static_bytes;
    e.activation_bytes = m.activation_bytes;
    e.working_bytes = m.working_bytes;
    return e;
  };
  const LayerEntry e = cache ? cache->layer(key, compute) : compute();
  return e.forward_s + e.backward_s;
}

StageSpeeds stage_speeds(const CostModel& cost, LatencyCache* cache, Recompute mode, const Skeleton& skeleton,
                         bool identical) {
  const int p = skeleton.num_stages();
  const int L = cost.problem().model.layers;
  StageSpeeds speeds;
  speeds.edge.resize(p);
  auto lookup = [&](const StageSlot& s, int layer, bool first, bool last) {
    return layer_seconds(cost, cache, mode, s, skeleton.micro_batch, layer, first, last);
  };
  if (identical)
    speeds.layer.resize(p);
  else
    speeds.layers.resize(p);
  for (int i = 0; i < p; ++i) {
    const StageSlot& s = skeleton.stages[i];
    const bool first = i == 0, last = i == p - 1;
    speeds.edge[i] = (first || last) ? lookup(s, -1, first, last) : 0.0;
    // Stages of one group share their layer speeds.
    const bool same_as_prev = i > 0 && skeleton.stages[i - 1].group == s.group && skeleton.stages[i - 1].tp == s.tp &&
                              skeleton.stages[i - 1].dp == s.dp;
    if (identical) {
      speeds.layer[i] = same_as_prev ? speeds.layer[i - 1] : lookup(s, -1, false, false);
    } else if (same_as_prev) {
      speeds.layers[i] = speeds.layers[i - 1];
    } else {
      speeds.layers[i].resize(L);
      for (int l = 0; l < L; ++l) speeds.layers[i][l] = lookup(s, l, false, false);
    }
  }
  return speeds;
}

double sum_term_lower_bound(const StageSpeeds& speeds, int L) {
  const int p = static_cast<int>(speeds.edge.size());
  double sum = 0;
  if (speeds.layers.empty()) {
    double fastest = kInf;
    for (int i = 0; i < p; ++i) {
      sum += speeds.edge[i] + speeds.layer[i];
      fastest = std::min(fastest, speeds.layer[i]);
    }
    return sum + (L - p) * fastest;
  }
  for (int l = 0; l < L; ++l) {
    double cheapest = kInf;
    for (int i = 0; i < p; ++i) cheapest = std::min(cheapest, speeds.layers[i][l]);
    sum += cheapest;
  }
  for (int i = 0; i < p; ++i) sum += speeds.edge[i];
  return sum;
}

double iteration_lower_bound(const StageSpeeds& speeds, const std::vector<int>& caps, int L, int m, int max_vpp) {
  const int p = static_cast<int>(speeds.edge.size());
  const double sum = sum_term_lower_bound(speeds, L);
  std::vector<double> rate(p), cap(p);
  double least_stage = 0;  // every stage holds at least one layer
  double need = 0;
  if (speeds.layers.empty()) {
    for (int i = 0; i < p; ++i) {
      rate[i] = speeds.layer[i];
      cap[i] = caps[i];
      least_stage = std::max(least_stage, speeds.edge[i] + rate[i]);
    }
    need = L;
  } else {
    // Work in units of stage 0's layer times: stage i runs layer l at least
    // kappa_i times its work w_l, so it holds at most (T - E_i) / kappa_i.
    std::vector<double> work(L);
    double largest = 0;
    for (int l = 0; l < L; ++l) {
      work[l] = speeds.layers[0][l];
      need += work[l];
      largest = std::max(largest, work[l]);
    }
    for (int i = 0; i < p; ++i) {
      double kappa = kInf, smallest = kInf;
      for (int l = 0; l < L; ++l) {
        smallest = std::min(smallest, speeds.layers[i][l]);
        if (work[l] > 0) kappa = std::min(kappa, speeds.layers[i][l] / work[l]);
      }
      rate[i] = kappa == kInf ? 0 : kappa;
      cap[i] = caps[i] * largest;
      least_stage = std::max(least_stage, speeds.edge[i] + smallest);
    }
    if (need <= 0) return (sum + (m - 1) * least_stage) * (1 - 1e-12);
    for (int i = 0; i < p; ++i) {
      if (rate[i] <= 0) return (sum + (m - 1) * least_stage) * (1 - 1e-12);
    }
  }
  const double bottleneck = speeds.layers.empty()
                                ? std::max(least_stage, whole_layer_bottleneck(speeds.edge, rate, cap, L))
                                : fractional_bottleneck(speeds.edge, rate, cap, need, least_stage);
  if (bottleneck == kInf) return kInf;
  // The least over v in [1, max_vpp] of m B + (S - B) / v (header).
  const double plain = sum + (m - 1) * bottleneck;
  const double interleaved = m * bottleneck + (sum - bottleneck) / std::max(1, max_vpp);
  return std::min(plain, interleaved) * (1 - 1e-12);
}

}  // namespace autohaap
