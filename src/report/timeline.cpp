#include "autohaap/report/timeline.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "autohaap/error.hpp"
#include "autohaap/specs/parallel_rules.hpp"

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

std::vector<PassSlot> interleaved_order(int stage, int num_stages, int m, int vpp) {
  if (vpp < 2 || m < num_stages)
    throw std::invalid_argument("interleaved_order: needs 2 or more chunks and a micro-batch per stage");
  const int p = num_stages, v = vpp;
  // Forward order: groups of p micro-batches, each through chunk 0, 1, …;
  // the last group may be shorter (Megatron-LM's schedule table with its
  // default group of p micro-batches per chunk).
  std::vector<PassSlot> forwards;
  const std::size_t total = static_cast<std::size_t>(m) * v;
  forwards.reserve(total);
  for (int lo = 0; lo < m; lo += p) {
    const int hi = std::min(lo + p, m);
    for (int c = 0; c < v; ++c)
      for (int j = lo; j < hi; ++j) forwards.push_back({PassKind::forward, j, c});
  }
  // Backwards in the same slots, chunks mirrored (v − 1 first); each chunk
  // takes its micro-batches in the order they went forward.
  std::vector<PassSlot> backwards;
  backwards.reserve(total);
  std::vector<int> taken(v, 0);
  for (const PassSlot& f : forwards) {
    const int c = v - 1 - f.chunk;
    backwards.push_back({PassKind::backward, taken[c]++, c});
  }
  const std::size_t warmup =
      std::min<std::size_t>(static_cast<std::size_t>(p - stage - 1) * 2 + static_cast<std::size_t>(v - 1) * p, total);
  std::vector<PassSlot> order;
  order.reserve(2 * total);
  order.insert(order.end(), forwards.begin(), forwards.begin() + static_cast<std::ptrdiff_t>(warmup));
  for (std::size_t k = 0; k + warmup < total; ++k) {
    order.push_back(forwards[warmup + k]);
    order.push_back(backwards[k]);
  }
  order.insert(order.end(), backwards.end() - static_cast<std::ptrdiff_t>(warmup), backwards.end());
  return order;
}

namespace {

// Share of stage i's work that chunk c holds, by layers (the cut).
std::vector<std::vector<double>> chunk_shares(const std::vector<std::vector<int>>& cut) {
  std::vector<std::vector<double>> share;
  for (const std::vector<int>& chunks : cut) {
    const int v = static_cast<int>(chunks.size());
    int layers = 0;
    for (int n : chunks) layers += n;
    std::vector<double> s(v, 1.0);
    if (v > 1) {
      for (int c = 0; c < v; ++c) s[c] = static_cast<double>(chunks[c]) / layers;
    }
    share.push_back(std::move(s));
  }
  return share;
}

// Every pass of m micro-batches, one by one.
Timeline simulate_all(const std::vector<StageEstimate>& est, const std::vector<std::vector<double>>& share, int m,
                      int v) {
  const int p = static_cast<int>(est.size());

  Timeline t;
  t.num_micro_batches = m;
  t.vpp = v;
  t.stages.resize(p);
  // Time of the send after each pass on stage i. Plain: stage 0's p2p_s is
  // its one boundary; each later stage's p2p_s adds the boundary after it
  // to the one before it (CostModel::stage). Interleaved: p2p_s over the
  // stage's sending passes per micro-batch.
  std::vector<double> send_fwd(p, 0.0), send_bwd(p, 0.0);
  if (v == 1) {
    for (int i = 0; i + 1 < p; ++i) {
      const double before = i == 0 ? 0.0 : t.boundary_send_s[i - 1];
      t.boundary_send_s.push_back(std::max(0.0, est[i].p2p_s - before));
    }
    for (int i = 0; i < p; ++i) {
      if (i + 1 < p) send_fwd[i] = t.boundary_send_s[i];
      if (i > 0) send_bwd[i] = t.boundary_send_s[i - 1];
    }
  } else {
    for (int i = 0; i < p; ++i) {
      const int senders = 2 * v - (i == 0 ? 1 : 0) - (i == p - 1 ? 1 : 0);
      send_fwd[i] = send_bwd[i] = est[i].p2p_s / senders;
    }
  }

  constexpr double kNotYet = -1;
  // Arrival time of each pass's input, by stage, chunk and micro-batch;
  // kNotYet until its producer ran.
  auto slot = [m](int c, int j) { return static_cast<std::size_t>(c) * m + j; };
  const std::size_t per_stage = static_cast<std::size_t>(v) * m;
  std::vector<std::vector<double>> fwd_ready(p, std::vector<double>(per_stage, kNotYet));
  std::vector<std::vector<double>> bwd_ready(p, std::vector<double>(per_stage, kNotYet));
  for (int j = 0; j < m; ++j) fwd_ready[0][slot(0, j)] = 0.0;

  std::vector<std::vector<PassSlot>> order(p);
  for (int i = 0; i < p; ++i) {
    if (v > 1) {
      order[i] = interleaved_order(i, p, m, v);
    } else {
      for (const auto& [kind, j] : one_f_one_b_order(i, p, m)) order[i].push_back({kind, j, 0});
    }
  }
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);

  // Advance every stage as far as its inputs allow; neither schedule
  // deadlocks, so each sweep schedules at least one pass until all are done.
  std::size_t remaining = 2 * static_cast<std::size_t>(p) * per_stage;
  while (remaining > 0) {
    std::size_t scheduled = 0;
    for (int i = 0; i < p; ++i) {
      while (next[i] < order[i].size()) {
        const PassSlot pass = order[i][next[i]];
        const int j = pass.micro_batch, c = pass.chunk;
        const bool fwd = pass.kind == PassKind::forward;
        const double ready = fwd ? fwd_ready[i][slot(c, j)] : bwd_ready[i][slot(c, j)];
        if (ready == kNotYet) break;
        PipelineOp op;
        op.kind = pass.kind;
        op.micro_batch = j;
        op.chunk = c;
        op.start_s = std::max(free_at[i], ready);
        // The stage's layers' work by the chunk's share; the embedding on
        // the first stage's first chunk, the output layer on the last
        // stage's last (StageEstimate::edge_forward_s).
        const bool edge_here = (i == 0 && c == 0) || (i == p - 1 && c == v - 1);
        const double edge = fwd ? est[i].edge_forward_s : est[i].edge_backward_s;
        const double whole = fwd ? est[i].forward_s : est[i].backward_s;
        op.end_s = op.start_s + (whole - edge) * share[i][c] + (edge_here ? edge : 0.0);
        // Forwards go to the next stage, from the last stage to the first
        // one's next chunk; backwards the other way; the last chunk's loss
        // turns a forward into its backward on the last stage.
        const bool loss = fwd && i + 1 == p && c + 1 == v;
        const bool sends = fwd ? !loss : (i > 0 || c > 0);
        op.send_end_s = op.end_s + (sends ? (fwd ? send_fwd[i] : send_bwd[i]) : 0.0);
        free_at[i] = op.send_end_s;
        t.stages[i].busy_s += op.send_end_s - op.start_s;
        if (loss) {
          bwd_ready[i][slot(c, j)] = op.end_s;
        } else if (fwd) {
          fwd_ready[i + 1 < p ? i + 1 : 0][slot(i + 1 < p ? c : c + 1, j)] = op.send_end_s;
        } else if (sends) {
          bwd_ready[i > 0 ? i - 1 : p - 1][slot(i > 0 ? c : c - 1, j)] = op.send_end_s;
        }
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
    tail = std::max(tail, est[i].tail_s());
  }
  t.iteration_s = t.pipeline_s + tail;
  return t;
}

}  // namespace

Timeline simulate_1f1b(const std::vector<StageEstimate>& est, int m, std::size_t max_passes) {
  return simulate_interleaved(est, std::vector<int>(est.size(), 1), m, 1, max_passes);
}

Timeline simulate_interleaved(const std::vector<StageEstimate>& est, const std::vector<int>& stage_layers, int m,
                              int v, std::size_t max_passes) {
  if (v < 1 || stage_layers.size() != est.size())
    throw std::invalid_argument("simulate_interleaved: needs a layer count per stage and 1 or more chunks");
  return simulate_interleaved(est, even_chunk_cut(stage_layers, v), m, max_passes);
}

Timeline simulate_interleaved(const std::vector<StageEstimate>& est, const std::vector<std::vector<int>>& layers_per_chunk, int m,
                              std::size_t max_passes) {
  const int p = static_cast<int>(est.size());
  if (p < 1 || m < 1) throw std::invalid_argument("simulate_1f1b: needs at least one stage and one micro-batch");
  const int v = layers_per_chunk.empty() ? 0 : static_cast<int>(layers_per_chunk.front().size());
  if (v < 1 || layers_per_chunk.size() != est.size())
    throw std::invalid_argument("simulate_interleaved: needs a cut per stage and 1 or more chunks");
  if (v > 1 && m < p) throw std::invalid_argument("simulate_interleaved: needs a micro-batch per stage");
  // Without interleaving a stage is one chunk, layers or none (the
  // embedding alone); interleaved, each chunk holds a layer or more.
  for (const std::vector<int>& chunks : layers_per_chunk) {
    if (static_cast<int>(chunks.size()) != v) throw std::invalid_argument("simulate_interleaved: vpp chunks a stage");
    for (const int n : chunks)
      if (v > 1 && n < 1) throw std::invalid_argument("simulate_interleaved: a chunk holds a layer or more");
  }
  if (p > kMaxTimelineStages)
    throw InputError("", "stages", std::to_string(p) + " pipeline stages",
                     "at most " + std::to_string(kMaxTimelineStages) + " for a schedule (a report draws each as a row)");
  const std::vector<std::vector<double>> share = chunk_shares(layers_per_chunk);
  // Interleaved schedules repeat in groups of p micro-batches: the cut and
  // the elided stretch are whole groups, and the last (shorter) group stays.
  const int group = v > 1 ? p : 1;
  const int cut_at = (p + kEdgeMicroBatches + group - 1) / group * group;  // stage 0's forward of it starts the cut
  const int simulated = 2 * cut_at + (v > 1 ? m % p : 0);
  const std::size_t passes = 2 * static_cast<std::size_t>(v) * static_cast<std::size_t>(p) * static_cast<std::size_t>(m);
  if (passes <= max_passes || m <= simulated) return simulate_all(est, share, m, v);

  Timeline t = simulate_all(est, share, simulated, v);
  const Timeline longer = simulate_all(est, share, simulated + group, v);
  const int skipped = m - simulated;  // whole groups
  const double period = (longer.pipeline_s - t.pipeline_s) / group;
  const double shift = skipped * period;
  double cut = 0;
  for (const PipelineOp& op : t.stages[0].ops) {
    if (op.kind == PassKind::forward && op.chunk == 0 && op.micro_batch == cut_at) cut = op.start_s;
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
    // Each group of micro-batches keeps a stage busy the same time.
    s.busy_s += static_cast<double>(skipped / group) * (longer.stages[i].busy_s - s.busy_s);
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

Timeline plan_timeline(const Plan& plan, const std::vector<StageEstimate>& est) {
  return simulate_interleaved(est, plan.chunk_cut(), plan.num_micro_batches);
}

Timeline plan_timeline(const CostModel& model, const Plan& plan) {
  std::vector<StageEstimate> est;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) est.push_back(model.stage(plan, i));
  return plan_timeline(plan, est);
}

}  // namespace autohaap
