// Timeline: when every forward and backward of every micro-batch runs on
// every stage of a plan under the 1F1B pipeline schedule (Narayanan et al.
// 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
// Using Megatron-LM", Sec. 2.2), plain or interleaved over vpp model chunks
// per stage (Sec. 2.2.2). The report draws it; tests compare its length
// with CostModel::iteration_time_1f1b.
//
// The schedule is an event simulation, not a formula: stage i of p first
// runs min(p − i − 1, m) warm-up forwards, then alternates one forward and
// one backward, then drains the remaining backwards. An operation starts
// when its stage is free and its input has arrived: the forward of
// micro-batch j on stage i after stage i − 1 has finished that forward and
// sent the activation; the backward of j on stage i after stage i + 1 has
// finished that backward and sent the gradient. Sends block the sender
// (Megatron-LM's 1F1B waits for each send/receive pair before computing
// on), so a stage is busy for its compute plus its sends — the same pace the
// cost model's formula assumes. After the pipeline drains, every stage
// synchronizes gradients and steps its optimizer; the step waits for the
// whole pipeline (gradient clipping needs the global norm), as in the cost
// model.
//
// Interleaved (vpp = v > 1), as Megatron-LM runs it (megatron/core/
// pipeline_parallel/schedules.py, forward_backward_pipelining_with_
// interleaving): the micro-batches go in groups of p; each stage runs the
// forwards of a group through chunk 0, then chunk 1, …, then chunk v − 1,
// and the backwards in the same groups from chunk v − 1 down to chunk 0.
// Stage i runs min((p − i − 1)·2 + (v − 1)·p, v·m) chunk forwards before
// its first backward, then alternates one chunk forward and one chunk
// backward, then drains. Chunk c's forward on stage i waits for chunk c on
// stage i − 1, and on stage 0 for chunk c − 1 on the last stage (the
// wrap-around); backwards run the other way, chunk v − 1 of the last stage
// after its own forward (the loss). Chunk c of stage i holds the layers
// the plan's cut gives it (StagePlan::chunk: the stated cut, as the
// Megatron export lays it out, else chunk_layers) and takes that share of
// the stage's forward and backward: the cost model prices a stage
// as a whole, and splitting it by layers is its "fill and drain in chunks
// of 1/v" (CostModel::iteration_time_1f1b). A stage's transfer time p2p_s
// (what the cost model leaves exposed) is spread evenly over the passes
// that send: every chunk pass but the first stage's chunk-0 backward and
// the last stage's last-chunk forward. Each stage is then busy exactly its
// t_i + p2p_i per micro-batch, the pace the formula assumes. Equal stages
// without sends take exactly (m + (p − 1)/v)·t, the formula (sends: within
// a fraction of a percent); unequal ones may finish earlier than the
// formula, which charges every other stage's fill and drain.
//
// Bounded: an iteration of more than kMaxTimelinePasses passes (2 · v · p
// · m) is not simulated pass by pass. Then the schedule of m_s = 2·c + r
// micro-batches is, c = p + kEdgeMicroBatches (interleaved: rounded up to
// whole groups of p, r = m mod p, so that the last group is the real one),
// cut at the start of stage 0's forward (of chunk 0) of micro-batch c (by
// then the pipeline is full and runs in its steady state): what runs
// before the cut is exactly the real schedule's start; what runs after it
// is the real schedule's end, shifted by the m − m_s micro-batches between,
// each adding the steady state's period (measured: the pipeline of m_s + g
// micro-batches less that of m_s, over g; g = 1, interleaved p). Timeline::
// elided says so. Totals (pipeline and iteration length, busy time) are
// those of all m micro-batches.
//
// Pure and thread-safe. Cost: each of the 2 · v · p · min(m, m_s + g) passes
// simulated is scheduled once (twice when elided); the event loop sweeps
// the p stages O(v · (p + m)) times (a sweep schedules every pass whose input has
// arrived). Memory O(v · p · min(m, m_s)), never per micro-batch of a long
// iteration.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"

namespace autohaap {

enum class PassKind { forward, backward };

// One forward or backward of one micro-batch (of one chunk) on one stage.
struct PipelineOp {
  PassKind kind = PassKind::forward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk (0 unless interleaved)
  double start_s = 0;
  double end_s = 0;       // compute ends
  double send_end_s = 0;  // the send that follows ends (== end_s when nothing is sent)
};

// Past this many passes (2 · chunks · stages · micro-batches) an iteration is
// simulated and drawn in part (see above): 65,536 boxes draw in well under
// a second and keep a picture in the megabytes.
inline constexpr std::size_t kMaxTimelinePasses = std::size_t{1} << 16;
// Micro-batches kept past the warm-up before the cut, and before the
// drain after it.
inline constexpr int kEdgeMicroBatches = 16;
// Pipeline stages a timeline is simulated for: warm-up and drain need p
// micro-batches each, so even an elided schedule keeps O(p²) passes, and a
// picture draws each stage as a row. Real pipelines have at most 64-128.
inline constexpr int kMaxTimelineStages = 128;

struct StageTimeline {
  std::vector<PipelineOp> ops;  // in execution order: 2 v m entries (fewer when elided)
  double busy_s = 0;            // compute + sends
  double sync_start_s = 0;      // gradient synchronization, then the optimizer step
  double sync_end_s = 0;
  double optimizer_end_s = 0;
};

struct Timeline {
  std::vector<StageTimeline> stages;
  // Transfer time of one micro-batch across the boundary after stage i
  // (p − 1 entries); the same in both directions. Plain 1F1B only (empty
  // when interleaved: there each stage's sends share its p2p_s, above).
  std::vector<double> boundary_send_s;
  int vpp = 1;  // model chunks per stage
  double pipeline_s = 0;   // last backward (and its send) ends
  double iteration_s = 0;  // pipeline_s + the longest sync + optimizer tail
  int num_micro_batches = 0;

  // Set when the middle of a long iteration is not in `ops`: the passes
  // running in [from_s, to_s) of the pipeline (none drawn there), the
  // steady state of `micro_batches` micro-batches, one every period_s.
  // Ops that start at or after to_s carry their real times and indices.
  struct Elision {
    int micro_batches = 0;
    double from_s = 0;  // the last pass before the cut ends (with its send)
    double to_s = 0;    // the first pass after it starts
    double period_s = 0;  // per micro-batch
  };
  std::optional<Elision> elided;

  // Fraction of the pipeline phase stage i is idle (the bubble, 0..1).
  double idle_fraction(int stage) const;
};

// Order of passes on stage `stage` of `num_stages` under 1F1B.
std::vector<std::pair<PassKind, int>> one_f_one_b_order(int stage, int num_stages, int num_micro_batches);

// One pass in a stage's order: its kind, micro-batch and chunk.
struct PassSlot {
  PassKind kind = PassKind::forward;
  int micro_batch = 0;
  int chunk = 0;
};

// Order of passes on stage `stage` of `num_stages` under interleaved 1F1B
// over `vpp` chunks (above). Requires vpp >= 2 and at least num_stages
// micro-batches (Megatron-LM asserts a group of p fits).
std::vector<PassSlot> interleaved_order(int stage, int num_stages, int num_micro_batches, int vpp);

// Simulates 1F1B from per-stage estimates. Boundary transfer times are
// recovered from each stage's p2p_s, which counts the boundary before it
// and the one after it. Requires at least one stage and one micro-batch.
// Past `max_passes` passes the middle of the iteration is elided (above).
// More than kMaxTimelineStages stages: InputError (key "stages").
Timeline simulate_1f1b(const std::vector<StageEstimate>& stages, int num_micro_batches,
                       std::size_t max_passes = kMaxTimelinePasses);

// Simulates interleaved 1F1B over `vpp` chunks per stage (above); stage i
// has stage_layers[i] layers (at least vpp). vpp == 1 is simulate_1f1b.
// Requires at least one stage, and for vpp > 1 as many micro-batches as
// stages (std::invalid_argument); more than kMaxTimelineStages stages:
// InputError (key "stages").
Timeline simulate_interleaved(const std::vector<StageEstimate>& stages, const std::vector<int>& stage_layers,
                              int num_micro_batches, int vpp, std::size_t max_passes = kMaxTimelinePasses);
// The same for a stated cut: cut[i][c] layers in chunk c of stage i (the
// plan's, Plan::chunk_cut), vpp = the chunks a stage.
Timeline simulate_interleaved(const std::vector<StageEstimate>& stages, const std::vector<std::vector<int>>& cut,
                              int num_micro_batches, std::size_t max_passes = kMaxTimelinePasses);

// The plan's timeline from its stages' estimates (CostModel::stage, in
// stage order): plain or interleaved as the plan's vpp says.
Timeline plan_timeline(const Plan& plan, const std::vector<StageEstimate>& stages);
// The same, estimating the stages with `model`.
Timeline plan_timeline(const CostModel& model, const Plan& plan);

}  // namespace autohaap
