#include "autohaap/search/stage_cost_table.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

#include "autohaap/units.hpp"

namespace autohaap {
namespace {

// What CostModel::iteration_time_1f1b reads of a stage.
void set_times(StageEstimate& e, const StageEntry& x) {
  e.forward_s = x.forward_s;
  e.backward_s = x.backward_s;
  e.p2p_s = x.p2p_s;
  e.dp_sync_s = x.dp_sync_s;
  e.optimizer_s = x.optimizer_s;
}

}  // namespace

IdenticalLayers::IdenticalLayers(const Problem& problem)
    : problem_(problem), generic_(problem.model.family == ModelFamily::generic) {
  for (const NodeGroup& g : problem.cluster.groups) group_device_.push_back(g.device.name);
  for (const auto& [key, latency] : problem.profiles.entries()) {
    // The cost model looks profiles up at the problem's sequence length.
    if (key.layer >= 0 && key.seq_len == problem.seq_len()) layer_profiles_.emplace(key.device, key.tp, key.micro_batch);
  }
}

bool IdenticalLayers::on(const StageSlot& slot, int micro_batch) const {
  if (generic_) return false;
  // A stage with context parallelism is never timed from a profile (the
  // cost model's rule), so its layers are the model's, all alike.
  const StageDegrees d = stage_degrees(problem_, slot, micro_batch);
  return d.cp > 1 || !layer_profiles_.count({group_device_[slot.group], slot.tp, micro_batch / d.dp});
}

bool IdenticalLayers::on(const Skeleton& skeleton) const {
  if (generic_) return false;
  for (const StageSlot& s : skeleton.stages) {
    if (!on(s, skeleton.micro_batch)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------

StageCostTable::StageCostTable(const CostModel& cost, const MemoryPruner* memory, LatencyCache* cache,
                               std::atomic<std::int64_t>& estimates, const Skeleton& skeleton, bool identical,
                               RecomputeChoice choice, int vpp)
    : cost_(cost),
      cache_(cache),
      estimates_(estimates),
      skeleton_(skeleton),
      choice_(std::move(choice)),
      identical_(identical),
      tails_vary_(choice_.must_fit && cost.problem().training.overlap_grad_reduce),
      layers_(cost.problem().model.layers),
      stages_(skeleton.num_stages()),
      micro_batches_(num_micro_batches(cost.problem(), skeleton)),
      vpp_(std::max(1, vpp)) {
  std::vector<Recompute> initial(stages_, Recompute::none);
  if (!choice_.must_fit) {
    for (int i = 0; i < stages_; ++i) initial[i] = choice_.modes[i].front();
  }
  scratch_ = make_plan(cost.problem(), skeleton, even_split(layers_, stages_), initial, vpp_);
  if (identical_) {
    by_count_.assign(stages_, std::vector<Choice>(layers_ - stages_ + 2));
    if (choice_.must_fit) {
      capacity_.resize(stages_);
      for (int i = 0; i < stages_; ++i) {
        for (Recompute r : choice_.modes[i]) {
          capacity_[i].push_back(
              memory->max_layers(skeleton.stages[i], r, skeleton.micro_batch, i, stages_, micro_batches_));
        }
      }
    }
  }
  if (choice_.must_fit) {
    for (int i = 0; i < stages_; ++i)
      most_layers_.push_back(cost.memory_grows_with_range(i, stages_)
                                 ? -1
                                 : memory->max_layers_leanest(skeleton.stages[i], skeleton.micro_batch, i, stages_,
                                                              micro_batches_));
    if (std::all_of(most_layers_.begin(), most_layers_.end(), [](int n) { return n < 0; })) most_layers_.clear();
  }
}

const StageCostTable::Choice& StageCostTable::at(int i, int begin, int end) {
  if (identical_) {
    Choice& c = by_count_[i][end - begin];
    if (!c.computed) c = compute(i, end - begin, begin, end);
    return c;
  }
  if (end - begin < vpp_) {
    static const Choice kTooShort = [] {
      Choice c;
      c.computed = true;
      return c;
    }();
    return kTooShort;
  }
  const std::uint64_t key =
      (static_cast<std::uint64_t>(i) * (layers_ + 1) + static_cast<std::uint64_t>(begin)) * (layers_ + 1) + end;
  auto [it, inserted] = by_range_.try_emplace(key);
  if (inserted) it->second = compute(i, end - begin, begin, end);
  return it->second;
}

double StageCostTable::iteration_time(const std::vector<int>& layer_end) {
  if (tails_vary_) return pick_options(layer_end);
  split_estimates_.resize(stages_);
  int begin = 0;
  for (int i = 0; i < stages_; ++i) {
    const Choice& c = at(i, begin, layer_end[i]);
    if (!c.feasible) return std::numeric_limits<double>::infinity();
    set_times(split_estimates_[i], c.entry);
    begin = layer_end[i];
  }
  return CostModel::iteration_time_1f1b(split_estimates_, micro_batches_, vpp_);
}

std::vector<Recompute> StageCostTable::recompute_of(const std::vector<int>& layer_end) {
  std::vector<Recompute> out;
  if (tails_vary_ && pick_options(layer_end) == std::numeric_limits<double>::infinity()) return out;
  int begin = 0;
  for (int i = 0; i < stages_; ++i) {
    const Choice& c = at(i, begin, layer_end[i]);
    out.push_back(c.option(tails_vary_ ? picks_[i] : 0).recompute);
    begin = layer_end[i];
  }
  return out;
}

double StageCostTable::pick_options(const std::vector<int>& layer_end) {
  // The iteration time is m·max pace + (Σ pace − max pace)/v + max tail
  // (CostModel::iteration_time_1f1b). Take any choice of options and S its
  // largest tail: giving each stage instead its least-pace option of tail
  // <= S lowers no term's worth, so it is as fast or faster. S is one of the
  // options' tails and at most the largest tail of the fastest modes (each
  // leaner option's is below its stage's). Trying each such S, the largest
  // first (ties keep the faster modes), is therefore exact.
  split_choices_.resize(stages_);
  split_estimates_.resize(stages_);
  picks_.assign(stages_, 0);
  split_tails_.clear();
  double top = 0;
  int begin = 0;
  for (int i = 0; i < stages_; ++i) {
    const Choice& c = at(i, begin, layer_end[i]);
    if (!c.feasible) return kInf;
    split_choices_[i] = &c;
    top = std::max(top, c.sync());
    for (int k = 0; k < c.options(); ++k) split_tails_.push_back(c.option(k).sync());
    begin = layer_end[i];
  }
  std::sort(split_tails_.begin(), split_tails_.end(), std::greater<>());
  split_tails_.erase(std::unique(split_tails_.begin(), split_tails_.end()), split_tails_.end());
  double best = kInf;
  std::vector<int>& trial = trial_picks_;
  trial.assign(stages_, 0);
  for (const double S : split_tails_) {
    if (S > top) continue;
    bool every = true;
    for (int i = 0; i < stages_ && every; ++i) {
      const Choice& c = *split_choices_[i];
      int pick = -1;
      double pace = kInf;
      for (int k = 0; k < c.options(); ++k) {
        const Option& o = c.option(k);
        if (o.sync() <= S && o.pace() < pace) {
          pace = o.pace();
          pick = k;
        }
      }
      every = pick >= 0;
      if (!every) break;
      trial[i] = pick;
      set_times(split_estimates_[i], c.option(pick).entry);
    }
    if (!every) break;  // a smaller S leaves that stage without an option too
    const double value = CostModel::iteration_time_1f1b(split_estimates_, micro_batches_, vpp_);
    if (value < best) {
      best = value;
      picks_ = trial;
    }
  }
  return best;
}

StageCostTable::Choice StageCostTable::compute(int i, int n, int begin, int end) {
  // Identical layers: the cost depends on the count and the edges only, so
  // the range is normalized (and the cache shared by every position).
  if (identical_) {
    const bool first = i == 0, last = i == stages_ - 1;
    begin = first ? 0 : last ? layers_ - n : 1;
    end = begin + n;
  }
  Choice c;
  c.computed = true;
  if (n < vpp_) return c;  // a chunk holds a layer or more
  const std::vector<Recompute>& modes = choice_.modes[i];
  if (!choice_.must_fit) {
    c.recompute = modes.front();
    c.entry = estimate(i, begin, end, c.recompute);
    c.reach_compute_s = c.entry.time_s();
    c.feasible = true;
    return c;
  }
  for (std::size_t r = 0; r < modes.size(); ++r) {
    if (identical_ && n > capacity_[i][r]) continue;
    const StageEntry e = estimate(i, begin, end, modes[r]);
    if (r == 0) c.reach_compute_s = e.time_s();
    if (!e.fits()) continue;
    if (!c.feasible) {
      c.feasible = true;
      c.recompute = modes[r];
      c.entry = e;
      if (!fit_may_return(i)) c.reach_compute_s = e.time_s();
      // A slower mode hides only exposed sync: with none, it cannot help.
      if (!tails_vary_ || c.entry.dp_sync_s <= 0) return c;
    } else if (e.tail_s() < c.sync()) {
      // A slower mode is worth keeping only for the sync it hides.
      c.leaner.push_back(Option{modes[r], e});
    }
  }
  return c;
}

StageEntry StageCostTable::estimate(int i, int begin, int end, Recompute recompute) {
  auto compute = [&] {
    StagePlan& s = scratch_.stages[i];
    s.layer_begin = begin;
    s.layer_end = end;
    s.recompute = recompute;
    const StageEstimate e = cost_.stage(scratch_, i);
    estimates_.fetch_add(1, std::memory_order_relaxed);
    return StageEntry{e.forward_s,   e.backward_s,     e.p2p_s,         e.dp_sync_s,
                      e.optimizer_s, e.memory.total(), e.capacity_bytes};
  };
  if (!cache_) return compute();
  return cache_->stage(key(i, begin, end, recompute), compute);
}

StageKey StageCostTable::key(int i, int begin, int end, Recompute recompute) const {
  const StageSlot& s = skeleton_.stages[i];
  StageKey k;
  k.group = s.group;
  k.first_gpu = s.first_gpu;
  k.gpus = s.gpus;
  k.tp = s.tp;
  k.dp = s.dp;
  k.micro_batch = skeleton_.micro_batch;
  k.recompute = static_cast<int>(recompute);
  k.layer_begin = begin;
  k.layer_end = end;
  k.stage_index = i;
  k.num_stages = stages_;
  k.num_micro_batches = micro_batches_;
  if (i > 0) {
    const StageSlot& p = skeleton_.stages[i - 1];
    k.prev_group = p.group;
    k.prev_first_gpu = p.first_gpu;
    k.prev_gpus = p.gpus;
    k.prev_tp = p.tp;
    k.prev_dp = p.dp;
  }
  if (i + 1 < stages_) {
    const StageSlot& q = skeleton_.stages[i + 1];
    k.next_group = q.group;
    k.next_first_gpu = q.first_gpu;
    k.next_gpus = q.gpus;
    k.next_tp = q.tp;
    k.next_dp = q.dp;
  }
  k.vpp = vpp_;
  // The pipeline's other end: under interleaving it sends to this stage;
  // with tied embeddings the two ends all-reduce the shared matrix's
  // gradient over the link between them (CostModel::stage_tail).
  const bool other_end_counts = vpp_ > 1 || cost_.problem().model.tied_embeddings;
  if (other_end_counts && stages_ > 1 && (i == 0 || i + 1 == stages_)) {
    const StageSlot& w = skeleton_.stages[i == 0 ? stages_ - 1 : 0];
    k.wrap_group = w.group;
    k.wrap_first_gpu = w.first_gpu;
    k.wrap_gpus = w.gpus;
    k.wrap_tp = w.tp;
    k.wrap_dp = w.dp;
  }
  return k;
}

}  // namespace autohaap
