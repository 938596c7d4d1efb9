#include "autohaap/report/timeline.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "autohaap/error.hpp"

namespace autohaap {

double Timeline::idle_fraction(int stage) const {
  if (pipeline_s <= 0) return 0;
  return std::clamp(1.0 - stages.at(stage).busy_s / pipeline_s, 0.0, 1.0);
}

std::vector<std::pair<PassKind, int>> one_f_one_b_order(int stage, int num_stages, int m) {
  // Warm-up forwards fill the pipeline below this stage; the last stage has
  // none and alternates from the start (Narayanan et al. 2021, Fig. 4 top).
  const int warmup = std::min(num_stages - stage - 1, m);
  std::vector<std::pair<PassKind, int>> order;
  order.reserve(2 * static_cast<std::size_t>(m));
  for (int j = 0; j < warmup; ++j) order.emplace_back(PassKind::forward, j);
  for (int k = 0; k < m - warmup; ++k) {
    order.emplace_back(PassKind::forward, warmup + k);
    order.emplace_back(PassKind::backward, k);
  }
  for (int j = m - warmup; j < m; ++j) order.emplace_back(PassKind::backward, j);
  return order;
}

namespace {

// Every pass of m micro-batches, one by one.
Timeline simulate_all(const std::vector<StageEstimate>& est, int m) {
  const int p = static_cast<int>(est.size());

  Timeline t;
  t.num_micro_batches = m;
  t.stages.resize(p);
  // Stage 0's p2p_s is its one boundary; each later stage's p2p_s adds the
  // boundary after it to the one before it (CostModel::stage).
  for (int i = 0; i + 1 < p; ++i) {
    const double before = i == 0 ? 0.0 : t.boundary_send_s[i - 1];
    t.boundary_send_s.push_back(std::max(0.0, est[i].p2p_s - before));
  }

  constexpr double kNotYet = -1;
  // Arrival time of each pass's input; kNotYet until its producer ran.
  std::vector<std::vector<double>> fwd_ready(p, std::vector<double>(m, kNotYet));
  std::vector<std::vector<double>> bwd_ready(p, std::vector<double>(m, kNotYet));
  std::fill(fwd_ready[0].begin(), fwd_ready[0].end(), 0.0);

  std::vector<std::vector<std::pair<PassKind, int>>> order(p);
  for (int i = 0; i < p; ++i) order[i] = one_f_one_b_order(i, p, m);
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);

  // Advance every stage as far as its inputs allow; 1F1B never deadlocks,
  // so each sweep schedules at least one pass until all are done.
  std::size_t remaining = 2 * static_cast<std::size_t>(p) * m;
  while (remaining > 0) {
    std::size_t scheduled = 0;
    for (int i = 0; i < p; ++i) {
      while (next[i] < order[i].size()) {
        const auto [kind, j] = order[i][next[i]];
        const bool fwd = kind == PassKind::forward;
        const double ready = fwd ? fwd_ready[i][j] : bwd_ready[i][j];
        if (ready == kNotYet) break;
        PipelineOp op;
        op.kind = kind;
        op.micro_batch = j;
        op.start_s = std::max(free_at[i], ready);
        op.end_s = op.start_s + (fwd ? est[i].forward_s : est[i].backward_s);
        double send = 0;
        if (fwd && i + 1 < p) send = t.boundary_send_s[i];
        if (!fwd && i > 0) send = t.boundary_send_s[i - 1];
        op.send_end_s = op.end_s + send;
        free_at[i] = op.send_end_s;
        t.stages[i].busy_s += op.send_end_s - op.start_s;
        if (fwd && i + 1 < p) fwd_ready[i + 1][j] = op.send_end_s;
        if (fwd && i + 1 == p) bwd_ready[i][j] = op.end_s;  // the loss is computed here
        if (!fwd && i > 0) bwd_ready[i - 1][j] = op.send_end_s;
        t.stages[i].ops.push_back(op);
        ++next[i];
        ++scheduled;
      }
    }
    if (scheduled == 0) throw std::logic_error("simulate_1f1b: schedule deadlocked");
    remaining -= scheduled;
  }

  for (int i = 0; i < p; ++i) t.pipeline_s = std::max(t.pipeline_s, free_at[i]);
  double tail = 0;
  for (int i = 0; i < p; ++i) {
    StageTimeline& s = t.stages[i];
    s.sync_start_s = t.pipeline_s;
    s.sync_end_s = s.sync_start_s + est[i].dp_sync_s;
    s.optimizer_end_s = s.sync_end_s + est[i].optimizer_s;
    tail = std::max(tail, est[i].dp_sync_s + est[i].optimizer_s);
  }
  t.iteration_s = t.pipeline_s + tail;
  return t;
}

}  // namespace

Timeline simulate_1f1b(const std::vector<StageEstimate>& est, int m, std::size_t max_passes) {
  const int p = static_cast<int>(est.size());
  if (p < 1 || m < 1) throw std::invalid_argument("simulate_1f1b: needs at least one stage and one micro-batch");
  if (p > kMaxTimelineStages)
    throw InputError("", "stages", std::to_string(p) + " pipeline stages",
                     "at most " + std::to_string(kMaxTimelineStages) + " for a schedule (a report draws each as a row)");
  const int cut_at = p + kEdgeMicroBatches;  // stage 0's forward of this micro-batch starts the cut
  const int simulated = 2 * cut_at;
  if (2 * static_cast<std::size_t>(p) * static_cast<std::size_t>(m) <= max_passes || m <= simulated)
    return simulate_all(est, m);

  Timeline t = simulate_all(est, simulated);
  const Timeline longer = simulate_all(est, simulated + 1);
  const int skipped = m - simulated;
  const double period = longer.pipeline_s - t.pipeline_s;
  const double shift = skipped * period;
  double cut = 0;
  for (const PipelineOp& op : t.stages[0].ops) {
    if (op.kind == PassKind::forward && op.micro_batch == cut_at) cut = op.start_s;
  }
  Timeline::Elision e;
  e.micro_batches = skipped;
  e.period_s = period;
  e.to_s = cut + shift;
  for (int i = 0; i < p; ++i) {
    StageTimeline& s = t.stages[i];
    for (PipelineOp& op : s.ops) {
      if (op.start_s < cut) {
        e.from_s = std::max(e.from_s, op.send_end_s);
        continue;
      }
      op.micro_batch += skipped;
      op.start_s += shift;
      op.end_s += shift;
      op.send_end_s += shift;
    }
    // Each micro-batch keeps a stage busy the same time.
    s.busy_s += skipped * (longer.stages[i].busy_s - s.busy_s);
    s.sync_start_s += shift;
    s.sync_end_s += shift;
    s.optimizer_end_s += shift;
  }
  t.pipeline_s += shift;
  t.iteration_s += shift;
  t.num_micro_batches = m;
  t.elided = e;
  return t;
}

Timeline plan_timeline(const CostModel& model, const Plan& plan) {
  std::vector<StageEstimate> est;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) est.push_back(model.stage(plan, i));
  return simulate_1f1b(est, plan.num_micro_batches);
}

}  // namespace autohaap
