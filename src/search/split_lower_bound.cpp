#include "autohaap/search/split_lower_bound.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "autohaap/units.hpp"

namespace autohaap {
namespace {

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

// Identical layers: when stage i of a split finishes a micro-batch with k
// layers, at the earliest: its edge plus k layers in the fastest allowed
// recompute mode whose memory holds k of them (StageTiers), infinity past
// the leanest mode's capacity. Non-decreasing in k: the modes that hold k
// layers are fewer the larger k is.
class StageFinish {
 public:
  static constexpr int kMostModes = 3;  // none, selective, full
  StageFinish(const std::vector<double>& edge, const StageTiers& tiers) : edge_(edge), stage_(edge.size()) {
    for (std::size_t i = 0; i < edge.size(); ++i) {
      Stage& st = stage_[i];
      for (const ModeTier& t : tiers[i]) {
        if (st.modes == kMostModes) break;  // the fastest modes: a bound needs no more
        st.tier[st.modes++] = t;
        st.capacity = std::max(st.capacity, t.capacity);
      }
    }
  }
  // One mode a stage: its per-layer time and capacity.
  StageFinish(const std::vector<double>& edge, const std::vector<double>& layer, const std::vector<int>& caps)
      : edge_(edge), stage_(edge.size()) {
    for (std::size_t i = 0; i < edge.size(); ++i) {
      stage_[i].tier[0] = ModeTier{caps[i], layer.empty() ? 0.0 : layer[i]};
      stage_[i].modes = 1;
      stage_[i].capacity = caps[i];
    }
  }
  // `other`'s modes and capacities from other edges (the same stages).
  StageFinish(const StageFinish& other, const std::vector<double>& edge) : edge_(edge), stage_(other.stage_) {}
  std::size_t stages() const { return edge_.size(); }
  int capacity(std::size_t i) const { return stage_[i].capacity; }
  double at(std::size_t i, int k) const {
    const Stage& st = stage_[i];
    double layer = kInf;
    for (int j = 0; j < st.modes; ++j)
      if (st.tier[j].capacity >= k) layer = std::min(layer, st.tier[j].layer_s);
    return edge_[i] + k * layer;
  }
  // The most layers stage i finishes by `pace`: the most any one mode
  // holds by then within its capacity, rounded in the stage's favour by a
  // hair so the bound never exceeds a split's time.
  int held_by(std::size_t i, double pace) const {
    const Stage& st = stage_[i];
    int most = 0;
    for (int j = 0; j < st.modes; ++j) {
      const double k = std::floor((pace - edge_[i]) / st.tier[j].layer_s * (1 + 1e-12) + 1e-9);
      most = std::max(most, static_cast<int>(std::clamp(k, 0.0, static_cast<double>(st.tier[j].capacity))));
    }
    return most;
  }

 private:
  struct Stage {
    std::array<ModeTier, kMostModes> tier{};
    int modes = 0;
    int capacity = 0;
  };
  const std::vector<double>& edge_;
  std::vector<Stage> stage_;
};

// The least pace at which the stages hold L whole layers: a stage of pace T
// holds the k it finishes by T, so T is the L-th smallest finish time over
// all stages (a merge of their ascending sequences). Whole layers make it
// at least the fractional bound, by up to one layer of the slowest stage;
// the modes memory forces lift it further. `below`: a pace the answer is
// known not to be under (the per-layer rates' L / sum_i 1 / tau_i: every
// finish is at least k tau_i), from which the merge starts: each stage's
// layers finished by it are counted at once (held_by, rounded in the
// stage's favour, so the answer only ever comes out lower), and a few
// steps of the merge remain rather than one per layer.
double whole_layer_bottleneck(const StageFinish& finish, int layers, double below) {
  using Next = std::pair<double, std::size_t>;  // finish time of a stage's next layer, stage
  // A min-heap in buffers kept per thread: this runs once per skeleton the
  // initialization builds (millions), where allocations showed.
  thread_local std::vector<Next> next;
  thread_local std::vector<int> held;
  next.clear();
  held.assign(finish.stages(), 0);
  long long counted = 0;
  for (std::size_t i = 0; i < finish.stages(); ++i) {
    held[i] = std::min(finish.held_by(i, below), finish.capacity(i));
    counted += held[i];
  }
  if (counted >= layers) return below;
  const auto later = std::greater<>{};
  for (std::size_t i = 0; i < finish.stages(); ++i)
    if (held[i] < finish.capacity(i)) next.push_back({finish.at(i, held[i] + 1), i});
  std::make_heap(next.begin(), next.end(), later);
  double T = below;
  for (long long n = counted; n < layers; ++n) {
    if (next.empty()) return kInf;
    std::pop_heap(next.begin(), next.end(), later);
    const auto [time, i] = next.back();
    next.pop_back();
    T = time;
    if (++held[i] < finish.capacity(i)) {
      next.push_back({finish.at(i, held[i] + 1), i});
      std::push_heap(next.begin(), next.end(), later);
    }
  }
  return T;
}

// Identical layers: the pace below which the stages cannot hold L layers
// even at their per-layer rates (L / sum_i 1 / tau_i, by a hair less),
// where a whole-layer merge starts.
double rates_pace(const StageSpeeds& speeds, int L) {
  double rates = 0;  // sum_i 1 / tau_i
  for (const double tau : speeds.layer) rates += tau > 0 ? 1 / tau : kInf;
  return L / rates * (1 - 1e-12);
}

// Identical layers: the least pace at which the stages hold L whole
// layers as `finish` has them, and at least every stage's one-layer
// finish (each holds one).
double identical_layer_bottleneck(const StageSpeeds& speeds, const StageFinish& finish, int L) {
  double least_stage = 0;
  for (std::size_t i = 0; i < speeds.edge.size(); ++i)
    least_stage = std::max(least_stage, speeds.edge[i] + speeds.layer[i]);
  return std::max(least_stage, whole_layer_bottleneck(finish, L, rates_pace(speeds, L)));
}

// Identical layers: the least time over every pace P >= `bottleneck` of
// time_at(P, S(P)), where S(P) is a lower bound on the sum of stage times
// when no stage may take longer than P: each stage holds between 1 and the
// K_i(P) layers it finishes by P, each layer at its fastest rate, the layers
// beyond one a stage on the stages of least rate first. A stage that cannot
// take more than the pace allows is what keeps the fill-and-drain sum
// above the `unpaced_sum` bound (every extra layer on the fastest stage),
// by as much as the stages' pace spread. S falls only where some K_i grows
// and time_at rises with P in between, so only those paces are tried,
// ascending, until even `unpaced_sum` at the next one cannot beat the best
// or reach below `enough` (then every later pace is at least that: the
// least of it and the best is a bound, above `enough`, and the caller
// needs no closer one).
template <class TimeAt>
double paced_sum_bound(const StageFinish& finish, const std::vector<double>& edge, const std::vector<double>& rate,
                       int layers, double bottleneck, double unpaced_sum, double enough, const TimeAt& time_at) {
  const std::size_t p = edge.size();
  thread_local std::vector<std::size_t> cheapest;  // per thread, reused (lower_bound_of)
  cheapest.resize(p);
  for (std::size_t i = 0; i < p; ++i) cheapest[i] = i;
  std::sort(cheapest.begin(), cheapest.end(), [&](std::size_t a, std::size_t b) { return rate[a] < rate[b]; });
  auto least_sum = [&](double pace) {
    double total = 0, extra = static_cast<double>(layers) - static_cast<double>(p);
    for (std::size_t i = 0; i < p; ++i) {
      if (finish.held_by(i, pace) < 1) return kInf;
      total += edge[i] + rate[i];
    }
    for (std::size_t i : cheapest) {
      const double more = std::min(extra, static_cast<double>(finish.held_by(i, pace) - 1));
      total += more * rate[i];
      extra -= more;
    }
    return extra > 0 ? kInf : total;
  };
  // Rounding could leave a pace short of L layers: the unpaced sum holds.
  auto sum_at = [&](double pace) {
    const double least = least_sum(pace);
    return least == kInf ? unpaced_sum : std::max(unpaced_sum, least);
  };
  double best = time_at(bottleneck, sum_at(bottleneck));
  double pace = bottleneck;
  for (int step = 0; step < 4 * layers; ++step) {
    double next = kInf;  // the next pace at which some stage holds one more layer
    for (std::size_t i = 0; i < p; ++i) {
      const int k = finish.held_by(i, pace);
      if (k < finish.capacity(i)) next = std::min(next, finish.at(i, k + 1));
    }
    // Beyond: S no longer falls, or even the unpaced sum cannot beat best
    // (or, best above `enough`, reach below it).
    if (next == kInf) return best;
    const double floor = time_at(next, unpaced_sum);
    if (!(floor < best)) return best;
    if (!(floor < enough)) return std::min(best, floor);
    pace = next;
    best = std::min(best, time_at(pace, sum_at(pace)));
  }
  // Paces not tried: no lower than the unpaced sum at the last one.
  return std::min(best, time_at(pace, unpaced_sum));
}

}  // namespace

double layer_seconds(const CostModel& cost, LatencyCache* cache, Recompute mode, const StageSlot& s, int micro_batch,
                     int layer, bool first, bool last) {
  const LayerKey key{s.group, s.tp, s.dp, micro_batch, static_cast<int>(mode), layer, first, last};
  auto compute = [&] {
    // The stage's degrees only on a miss: the walk asks a hit of every
    // skeleton it builds, where computing them was a twentieth of its time.
    const StageDegrees d = stage_degrees(cost.problem(), s, micro_batch);
    const StageShape shape{s.group, d.tp, d.dp, mode, d.cp};
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
  StageSpeeds speeds;
  stage_speeds(cost, cache, mode, skeleton, identical, speeds);
  return speeds;
}

void stage_speeds(const CostModel& cost, LatencyCache* cache, Recompute mode, const Skeleton& skeleton, bool identical,
                  StageSpeeds& speeds, int loose_begin, int loose_end) {
  const int p = skeleton.num_stages();
  const int L = cost.problem().model.layers;
  speeds.edge.resize(p);
  auto lookup = [&](const StageSlot& s, int layer, bool first, bool last) {
    return layer_seconds(cost, cache, mode, s, skeleton.micro_batch, layer, first, last);
  };
  if (identical) {
    speeds.layer.resize(p);
    speeds.layers.clear();
  } else {
    speeds.layer.clear();
    speeds.layers.resize(p);
  }
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
  // Identical layers send alike across every boundary, so each stage's
  // sends are known before the split. Generic layers: none counted.
  speeds.send.clear();
  if (!identical) return;
  speeds.send.assign(p, 0.0);
  const Problem& problem = cost.problem();
  const int B = skeleton.micro_batch;
  auto loose = [&](int i) { return i >= loose_begin && i < loose_end; };
  StagePlan before = slot_stage(problem, skeleton.stages[0], B);
  for (int i = 0; i + 1 < p; ++i) {
    StagePlan after = slot_stage(problem, skeleton.stages[i + 1], B);
    // Between two groups of which one may move, the neighbour is not
    // known: each side's floor over any stage of another group.
    if (before.group != after.group && (loose(i) || loose(i + 1))) {
      speeds.send[i] += cost.boundary_send_floor_s(before, false, B);
      speeds.send[i + 1] += cost.boundary_send_floor_s(after, true, B);
    } else {
      const double t = cost.boundary_send_s(before, after, 0, B);
      speeds.send[i] += t;
      speeds.send[i + 1] += t;
    }
    before = std::move(after);
  }
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

double plain_sum_term_lower_bound(const StageSpeeds& speeds, int L) {
  double sends = 0;
  for (const double s : speeds.send) sends += s;
  return sum_term_lower_bound(speeds, L) + sends;
}

namespace {

// Both bounds: the whole-layer bottleneck of `finish` and, with `paced`,
// the sum term at each pace (paced_sum_bound); else the unpaced sum.
// Without `plain`, only the interleaved schedules' terms (infinity where
// none can run).
double lower_bound_core(const StageSpeeds& speeds, const StageFinish& finish, bool paced, int L, int m, int max_vpp,
                        double enough, const InterleavedTiers& interleaved, bool plain, double excess) {
  const int p = static_cast<int>(speeds.edge.size());
  const double sum = sum_term_lower_bound(speeds, L);
  // Per thread, reused: this runs for every skeleton the initialization
  // builds, where allocations showed (a tenth of the walk).
  thread_local std::vector<double> rate, cap;  // cap and need: the generic layers' fractional bottleneck only
  rate.assign(p, 0.0);
  cap.assign(p, 0.0);
  double least_stage = 0;  // generic layers: every stage holds at least one layer
  double need = 0;
  if (speeds.layers.empty()) {
    for (int i = 0; i < p; ++i) rate[i] = speeds.layer[i];
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
      cap[i] = finish.capacity(i) * largest;
      least_stage = std::max(least_stage, speeds.edge[i] + smallest);
    }
    if (need <= 0) return (sum + (m - 1) * least_stage) * (1 - 1e-12);
    for (int i = 0; i < p; ++i) {
      if (rate[i] <= 0) return (sum + (m - 1) * least_stage) * (1 - 1e-12);
    }
  }
  const double bottleneck = speeds.layers.empty() ? identical_layer_bottleneck(speeds, finish, L)
                                                 : fractional_bottleneck(speeds.edge, rate, cap, need, least_stage);
  if (bottleneck == kInf) return kInf;
  // The least over v in [1, max_vpp] of m P + (S - P) / v (header).
  // Interleaving needs stages that divide the layers (max_interleaving).
  const int v = L % p == 0 ? std::max(1, max_vpp) : 1;
  // Interleaved over w >= 2 chunks every stage holds L / p layers (the
  // one split a search interleaves, interleaving_searched), at least w,
  // so the pace is at least every stage's (L / p)-layer finish (identical
  // layers; a stage that cannot hold them rules interleaving out): each w
  // from 2 to v has its own floor, and the bound takes the least term.
  // Per thread: this runs for every skeleton the initialization builds.
  thread_local std::vector<double> interleaved_floor;  // [w - 2]
  interleaved_floor.clear();
  for (int w = 2; w <= v; ++w) {
    double floor = 0;  // generic layers: none
    if (speeds.layers.empty())
      for (int i = 0; i < p; ++i) floor = finish.capacity(i) < L / p ? kInf : std::max(floor, finish.at(i, L / p));
    interleaved_floor.push_back(floor);
  }
  // Each w's own capacities (the header), for the w whose term with the
  // unpaced sum (at most its paced one) could still reach `enough`.
  if (interleaved && speeds.layers.empty()) {
    const double merge_from = rates_pace(speeds, L);
    for (int w = 2; w <= v; ++w) {
      double& floor = interleaved_floor[w - 2];
      if (floor == kInf) continue;
      const double P = std::max(bottleneck, floor);
      if (m * P + (sum - P) / w + excess > enough) continue;
      const StageFinish chunked(speeds.edge, interleaved(w));
      for (int i = 0; i < p && floor < kInf; ++i)
        floor = chunked.capacity(i) < L / p ? kInf : std::max(floor, chunked.at(i, L / p));
      if (floor < kInf) floor = std::max(floor, whole_layer_bottleneck(chunked, L, merge_from));
    }
  }
  auto time_at = [&](double pace, double stage_sum) {
    return pipeline_time_lower_bound(pace, stage_sum, m, interleaved_floor, plain, excess);
  };
  if (!speeds.layers.empty() || !paced) return time_at(bottleneck, sum) * (1 - 1e-12);
  return paced_sum_bound(finish, speeds.edge, rate, L, bottleneck, sum, enough, time_at) * (1 - 1e-12);
}

bool has_sends(const StageSpeeds& speeds) {
  return std::any_of(speeds.send.begin(), speeds.send.end(), [](double s) { return s > 0; });
}

// `speeds` with every stage's sends in its edge: what its finish and the
// sum term are under plain 1F1B (in a buffer per thread, reused).
const StageSpeeds& sending(const StageSpeeds& speeds) {
  thread_local StageSpeeds out;
  out.edge.resize(speeds.edge.size());
  for (std::size_t i = 0; i < speeds.edge.size(); ++i) out.edge[i] = speeds.edge[i] + speeds.send[i];
  out.layer = speeds.layer;
  out.layers.clear();
  out.send.clear();
  return out;
}

// Plain 1F1B pays every stage's sends in its pace and in the sum, where
// the interleaved schedule hides them behind other chunks (header): the
// least of the plain schedule's bound with them and the interleaved
// schedules' without.
double lower_bound_of(const StageSpeeds& speeds, const StageFinish& finish, bool paced, int L, int m, int max_vpp,
                      double enough, const InterleavedTiers& interleaved, double excess) {
  if (!has_sends(speeds))
    return lower_bound_core(speeds, finish, paced, L, m, max_vpp, enough, interleaved, true, excess);
  const StageSpeeds& plain_speeds = sending(speeds);
  const double plain = lower_bound_core(plain_speeds, StageFinish(finish, plain_speeds.edge), paced, L, m, 1, enough,
                                        {}, true, 0);
  const int p = static_cast<int>(speeds.edge.size());
  if (max_vpp < 2 || L % p != 0) return plain;
  // Only a term below the plain one changes the answer.
  return std::min(plain, lower_bound_core(speeds, finish, paced, L, m, max_vpp, std::min(enough, plain), interleaved,
                                          false, excess));
}

// paced_tail_lower_bound over the paces of `finish`, the pipeline's time
// at pace P (the tail left out) rest(P).
template <class Rest>
double paced_tail_walk(const StageSpeeds& speeds, const StageFinish& finish, int L, double uncapped_tail,
                       const CappedTail& capped_tail, double enough, const Rest& rest) {
  const int p = static_cast<int>(speeds.edge.size());
  double pace = identical_layer_bottleneck(speeds, finish, L);
  if (pace == kInf) return kInf;
  thread_local std::vector<int> caps;  // per thread, reused: asked of every skeleton kept
  caps.resize(p);
  double best = kInf;
  for (int step = 0; step < 4 * L; ++step) {
    const double f = rest(pace);
    // Every later pace costs at least this with the uncapped tail.
    if (!(f + uncapped_tail < best)) return best * (1 - 1e-12);
    if (!(f + uncapped_tail <= enough)) return std::min(best, f + uncapped_tail) * (1 - 1e-12);
    double next = kInf;  // the next pace at which some stage holds one layer more
    for (int i = 0; i < p; ++i) {
      caps[i] = std::min(finish.held_by(i, pace), finish.capacity(i));
      if (caps[i] < finish.capacity(i)) next = std::min(next, finish.at(i, caps[i] + 1));
    }
    best = std::min(best, f + std::max(uncapped_tail, capped_tail(caps)));
    if (next == kInf) return best * (1 - 1e-12);
    pace = next;
  }
  // Paces not tried: no less than the uncapped tail at the last one.
  return std::min(best, rest(pace) + uncapped_tail) * (1 - 1e-12);
}

}  // namespace

double paced_tail_lower_bound(const StageSpeeds& speeds, const StageTiers& tiers, int L, int m, int max_vpp,
                              double uncapped_tail, const CappedTail& capped_tail, double enough,
                              double interleaved_tail) {
  if (!speeds.layers.empty() || m < 1) return uncapped_tail;
  const int p = static_cast<int>(speeds.edge.size());
  const StageFinish finish(speeds.edge, tiers);
  const int v = L % p == 0 ? max_vpp : 1;
  // As lower_bound_of: the plain schedule with its sends, each
  // interleaved one without.
  const StageSpeeds& plain_speeds = has_sends(speeds) ? sending(speeds) : speeds;
  const double plain_sum = sum_term_lower_bound(plain_speeds, L);
  const double plain =
      paced_tail_walk(plain_speeds, StageFinish(finish, plain_speeds.edge), L, uncapped_tail, capped_tail, enough,
                      [&](double at) { return pipeline_time_lower_bound(at, plain_sum, m, 1); });
  if (v < 2) return plain;
  const double sum = sum_term_lower_bound(speeds, L);
  // Interleaved, every stage holds L / p layers: the tail is at least
  // theirs whatever the pace.
  return std::min(plain, paced_tail_walk(speeds, finish, L, std::max(uncapped_tail, interleaved_tail), capped_tail,
                                         std::min(enough, plain),
                                         [&](double at) { return pipeline_time_lower_bound(at, sum, m, v, false); }));
}

double least_whole_layer_pace(std::span<FinishClass> classes, int layers, double below, double enough) {
  double slowest_one = 0;
  long long held = 0;
  for (FinishClass& c : classes) {
    const std::vector<double>& f = *c.finish;
    const auto most = f.begin() + std::max(0, c.capacity());
    if (c.holds_one) {
      if (most == f.begin()) return kInf;
      slowest_one = std::max(slowest_one, c.edge + f.front());
    }
    // Asked only whether the pace passes `enough`, from a pace already
    // past it: that pace answers, and what the classes hold by it is not
    // needed (on Llama 3 70B over six node groups, a third of the walk's
    // calls).
    if (below > enough) continue;
    // The layers finished by `below`, rounded down by a hair: a layer
    // counted here must finish by it.
    const double by = (below - c.edge) * (1 - 1e-12);
    c.held = static_cast<int>(std::upper_bound(f.begin(), most, by) - f.begin());
    held += static_cast<long long>(c.held) * c.count;
  }
  double pace = below;
  while (held < layers && !(pace > enough)) {
    FinishClass* next = nullptr;
    double soonest = kInf;
    for (FinishClass& c : classes) {
      if (c.held < c.capacity() && c.edge + (*c.finish)[c.held] < soonest) {
        soonest = c.edge + (*c.finish)[c.held];
        next = &c;
      }
    }
    if (!next) return kInf;
    pace = soonest;
    ++next->held;
    held += next->count;
  }
  return std::max(pace, slowest_one);
}

double paced_classes_lower_bound(std::span<const FinishClass> classes, int layers, int micro_batches, double pace,
                                 double fixed_sum, double unpaced_sum, std::span<const double> floors, bool plain,
                                 double enough, double interleaved_excess) {
  // Per thread, reused: asked of every prefix the walk's cheaper tests keep.
  thread_local std::vector<std::size_t> cheapest;
  thread_local std::vector<int> held;
  const std::size_t n = classes.size();
  auto tau = [&](std::size_t i) { return classes[i].finish->empty() ? kInf : classes[i].finish->front(); };
  // Classes by per-layer time, least first: where the layers beyond one a
  // stage go at least cost (a stage's k-th layer finishes no sooner than k
  // times its first: LoadBalancer::layer_finish_times, whose envelope's
  // first entry is its group's least one-layer time).
  cheapest.resize(n);
  for (std::size_t i = 0; i < n; ++i) cheapest[i] = i;
  std::sort(cheapest.begin(), cheapest.end(), [&](std::size_t a, std::size_t b) { return tau(a) < tau(b); });
  // What each class holds by `pace`, counted in its favour (more layers
  // held only lowers the sum); afterwards raised one event at a time.
  held.resize(n);
  double base = fixed_sum;  // every stage that holds one: its edge and first layer
  long long beyond = layers;
  for (std::size_t i = 0; i < n; ++i) {
    const FinishClass& c = classes[i];
    const std::vector<double>& f = *c.finish;
    held[i] = static_cast<int>(std::upper_bound(f.begin(), f.begin() + std::max(0, c.capacity()),
                                                (pace - c.edge) * (1 + 1e-12)) -
                               f.begin());
    if (!c.holds_one) continue;
    base += c.count * (c.edge + tau(i));
    beyond -= c.count;
  }
  // More stages than layers: a rule of its own (more_stages_than_layers)
  // removes them, which this bound leaves to it.
  if (beyond < 0)
    return pipeline_time_lower_bound(pace, unpaced_sum, micro_batches, floors, plain, interleaved_excess) * (1 - 1e-12);
  // The sum term by what the classes hold now; infinity where they cannot
  // hold every layer (a pace below the least bottleneck: no split).
  auto sum_now = [&] {
    for (std::size_t i = 0; i < n; ++i)
      if (classes[i].holds_one && held[i] < 1) return kInf;
    double total = base;
    long long extra = beyond;
    for (std::size_t i : cheapest) {
      if (extra == 0) break;
      const FinishClass& c = classes[i];
      const long long room = c.holds_one ? static_cast<long long>(held[i] - 1) * c.count : held[i];
      const long long take = std::min(extra, room);
      total += static_cast<double>(take) * tau(i);
      extra -= take;
    }
    return extra > 0 ? kInf : std::max(unpaced_sum, total);
  };
  auto time_at = [&](double at, double sum) {
    return pipeline_time_lower_bound(at, sum, micro_batches, floors, plain, interleaved_excess);
  };
  // The sum falls only where some class holds one more layer, and the
  // time rises with the pace in between: only those paces are tried,
  // ascending (below the least bottleneck, where no split is, only to
  // reach it), until even the unpaced sum at the next cannot beat the
  // best (or reach below `enough`).
  double best = kInf;
  for (int step = 0;; ++step) {
    const double sum = sum_now();
    if (sum < kInf) best = std::min(best, time_at(pace, sum));
    double next = kInf;
    for (std::size_t i = 0; i < n; ++i) {
      const FinishClass& c = classes[i];
      if (held[i] < c.capacity()) next = std::min(next, c.edge + (*c.finish)[held[i]]);
    }
    if (next == kInf) return best * (1 - 1e-12);
    const double floor = time_at(next, unpaced_sum);
    if (!(floor < best)) return best * (1 - 1e-12);
    if (!(floor < enough) || step >= 8 * layers) return std::min(best, floor) * (1 - 1e-12);
    pace = std::max(pace, next);
    for (std::size_t i = 0; i < n; ++i) {
      const FinishClass& c = classes[i];
      while (held[i] < c.capacity() && c.edge + (*c.finish)[held[i]] <= pace * (1 + 1e-12)) ++held[i];
    }
  }
}

void interleaved_pace_floors(std::span<const FinishClass> classes, int max_vpp, std::vector<double>& out,
                             std::span<const int> stage_layers) {
  out.assign(static_cast<std::size_t>(std::max(0, max_vpp - 1)), 0.0);
  for (const FinishClass& c : classes) {
    if (!c.holds_one) continue;
    for (int w = 2; w <= max_vpp; ++w) {
      const std::size_t k = static_cast<std::size_t>(w - 2);
      const int held = std::max(w, k < stage_layers.size() ? stage_layers[k] : 0);
      double& floor = out[w - 2];
      floor = c.capacity() < held ? kInf : std::max(floor, c.edge + (*c.finish)[held - 1]);
    }
  }
}

double pipeline_time_lower_bound(double pace, double stage_sum, int m, std::span<const double> floors, bool plain,
                                 double interleaved_excess) {
  double best = plain ? stage_sum + (m - 1) * pace : kInf;
  for (std::size_t k = 0; k < floors.size(); ++k) {
    if (floors[k] == kInf) continue;
    const double w = static_cast<double>(k + 2);
    const double P = std::max(pace, floors[k]);
    best = std::min(best, m * P + (stage_sum - P) / w + interleaved_excess);
  }
  return best;
}

double pace_passing(double limit, double stage_sum, int m, std::span<const double> floors,
                    double interleaved_excess) {
  // A term slope * max(P, floor) + offset passes `limit` at every pace when
  // it does at its floor, else once P passes (limit - offset) / slope.
  auto passing = [limit](double slope, double offset, double floor) {
    if (slope * floor + offset > limit) return -kInf;
    return slope > 0 ? (limit - offset) / slope : kInf;
  };
  double pace = passing(m - 1.0, stage_sum, 0.0);
  for (std::size_t k = 0; k < floors.size(); ++k) {
    if (floors[k] == kInf) continue;
    const double w = static_cast<double>(k + 2);
    pace = std::max(pace, passing(m - 1.0 / w, stage_sum / w + interleaved_excess, floors[k]));
  }
  return pace;
}

double pipeline_time_lower_bound(double pace, double stage_sum, int m, int max_vpp, bool plain,
                                 double interleaved_excess) {
  const double plain_term = plain ? stage_sum + (m - 1) * pace : kInf;
  if (max_vpp < 2) return plain_term;
  return std::min(plain_term, m * pace + (stage_sum - pace) / max_vpp + interleaved_excess);
}

double iteration_lower_bound(const StageSpeeds& speeds, const std::vector<int>& caps, int L, int m, int max_vpp,
                             double interleaved_excess) {
  return lower_bound_of(speeds, StageFinish(speeds.edge, speeds.layer, caps), /*paced=*/false, L, m, max_vpp, kInf,
                        {}, interleaved_excess);
}

double iteration_lower_bound(const StageSpeeds& speeds, const StageTiers& tiers, int L, int m, int max_vpp,
                             double enough, const InterleavedTiers& interleaved, double interleaved_excess) {
  return lower_bound_of(speeds, StageFinish(speeds.edge, tiers), /*paced=*/true, L, m, max_vpp, enough, interleaved,
                        interleaved_excess);
}

}  // namespace autohaap
