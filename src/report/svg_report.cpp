#include "autohaap/report/svg_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "autohaap/io/plan_printer.hpp"
#include "autohaap/report/report_writer.hpp"
#include "autohaap/report/timeline.hpp"
#include "autohaap/units.hpp"
#include "report_text.hpp"

namespace autohaap {
namespace {

using namespace report_text;

// Page geometry (px). The timeline spans the width between the stage labels
// and the idle column, so a schedule of any length fills the page.
constexpr double kWidth = 1400;
constexpr double kLabelWidth = 300;
constexpr double kIdleWidth = 80;
constexpr double kTimelineLeft = kLabelWidth;
constexpr double kTimelineRight = kWidth - kIdleWidth;
// Above this many passes, boxes carry no tooltip or number: they would be
// too thin to read and would only make the file heavy.
constexpr std::size_t kDetailedPassLimit = 2048;
// Width of the band that stands for the elided middle of a long schedule.
constexpr double kElisionBandWidth = 60;

constexpr const char* kFont = "font-family=\"Helvetica, Arial, sans-serif\"";
constexpr const char* kLaneColour = "#ececec";
constexpr const char* kSyncColour = "#b8b8b8";
constexpr const char* kOptimizerColour = "#555555";
constexpr const char* kSendColour = "#444444";
constexpr const char* kOverColour = "#d62728";

struct MemoryKind {
  const char* name;
  const char* css_class;
  const char* colour;
  double MemoryBreakdown::*bytes;
};
constexpr std::array<MemoryKind, 8> kMemoryKinds = {{
    {"weights", "mem-weights", "#355c7d", &MemoryBreakdown::weights},
    {"gradients", "mem-gradients", "#6c8ebf", &MemoryBreakdown::gradients},
    {"optimizer states", "mem-optimizer", "#c06c84", &MemoryBreakdown::optimizer},
    {"activations", "mem-activations", "#f8b195", &MemoryBreakdown::activations},
    {"logits", "mem-logits", "#f67280", &MemoryBreakdown::logits},
    {"CUDA and NCCL", "mem-runtime", "#8e7cc3", &MemoryBreakdown::runtime},
    {"allocator", "mem-allocator", "#b4a7d6", &MemoryBreakdown::allocator},
    {"headroom", "mem-headroom", "#d0d0d0", &MemoryBreakdown::headroom},
}};

// Coordinates with one decimal: finer is invisible and only adds bytes.
std::string px(double v) { return fixed(v, 1); }

// 1, 2 or 5 times a power of ten, at least `raw`: axis ticks people can read.
double nice_step(double raw) {
  if (!(raw > 0)) return 1;
  const double e = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / e;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

int decimals_for(double step) { return std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9))); }

std::string text(double x, double y, std::string_view content, std::string_view attrs = "") {
  std::string s = "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"";
  if (!attrs.empty()) s += " " + std::string(attrs);
  return s + ">" + escape(content) + "</text>\n";
}

std::string rect(double x, double y, double w, double h, std::string_view attrs = "") {
  std::string s = "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) +
                  "\" height=\"" + px(h) + "\"";
  if (!attrs.empty()) s += " " + std::string(attrs);
  return s + "/>\n";
}

std::string line(double x1, double y1, double x2, double y2, std::string_view attrs = "") {
  std::string s = "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\"";
  if (!attrs.empty()) s += " " + std::string(attrs);
  return s + "/>\n";
}

// Rough width of a label at `size` px, enough to lay out legends.
double text_width(std::string_view s, double size) {
  std::size_t glyphs = 0;
  for (const char c : s) glyphs += (static_cast<unsigned char>(c) & 0xc0) != 0x80;  // UTF-8 lead bytes
  return 0.56 * size * static_cast<double>(glyphs);
}

// A legend laid out left to right from `left`, wrapping before `right`.
class Legend {
 public:
  Legend(std::string& out, double left, double right, double y)
      : out_(out), left_(left), right_(right), x_(left), y_(y) {
    out_ += "<g class=\"legend\">\n";
  }
  // Closes the legend; returns the baseline of its last row.
  double end() {
    out_ += "</g>\n";
    return y_;
  }

  // A filled swatch; `tint` adds a lighter one in front (forward / backward pairs).
  void swatch(const std::string& fill, std::string_view label, std::string_view css_class,
              const std::string& tint = "") {
    const double lead = tint.empty() ? 0 : 16;
    place(lead + 19 + text_width(label, 11));
    if (!tint.empty()) out_ += rect(x_, y_ - 9, 14, 10, "fill=\"" + tint + "\"");
    out_ += rect(x_ + lead, y_ - 9, 14, 10, "fill=\"" + fill + "\" class=\"" + std::string(css_class) + "\"");
    out_ += text(x_ + lead + 19, y_, label, "font-size=\"11\"");
    x_ += lead + 19 + text_width(label, 11) + 18;
  }
  // A line sample: a short horizontal stroke, or a vertical tick.
  void stroke(const std::string& colour, double width, bool vertical, std::string_view label) {
    place(19 + text_width(label, 11));
    const std::string attrs = "stroke=\"" + colour + "\" stroke-width=\"" + px(width) + "\"";
    out_ += vertical ? line(x_ + 7, y_ - 10, x_ + 7, y_ + 1, attrs) : line(x_, y_ - 4, x_ + 14, y_ - 4, attrs);
    out_ += text(x_ + 19, y_, label, "font-size=\"11\"");
    x_ += 19 + text_width(label, 11) + 18;
  }
 private:
  void place(double width) {
    if (x_ > left_ && x_ + width > right_) {
      x_ = left_;
      y_ += 18;
    }
  }
  std::string& out_;
  double left_, right_, x_, y_;
};

struct Layout {
  double rows_top = 0;
  double row_height = 0;
  double box_inset = 0;
  double scale = 1;  // px per second
  // An elided stretch [cut_from, cut_to) of the schedule is drawn as a band
  // band_px wide (0: none); the time on either side is to scale.
  double cut_from = 0, cut_to = 0, band_px = 0;
  double x(double t) const {
    if (band_px <= 0 || t <= cut_from) return kTimelineLeft + t * scale;
    if (t >= cut_to) return kTimelineLeft + (t - (cut_to - cut_from)) * scale + band_px;
    return kTimelineLeft + cut_from * scale + band_px * (t - cut_from) / (cut_to - cut_from);
  }
  double row_top(int i) const { return rows_top + i * row_height; }
  double box_top(int i) const { return row_top(i) + box_inset; }
  double box_bottom(int i) const { return row_top(i) + row_height - box_inset; }
};

std::string header(const CostModel& model, const Plan& plan, const PredictedPerformance& perf,
                   const Timeline& timeline, const std::vector<StageEstimate>& est) {
  const Problem& pb = model.problem();
  std::string out;
  out += text(20, 30, std::string(kReportTitle) + plan.model + " on " + plan.cluster,
              "font-size=\"20\" font-weight=\"bold\" class=\"title\"");
  const int p = static_cast<int>(plan.stages.size());
  out += text(20, 52,
              std::to_string(plan.num_gpus()) + " of " + std::to_string(pb.cluster.total_gpus()) + " GPUs in " +
                  std::to_string(p) + (p == 1 ? " stage" : " stages") + " · global batch " +
                  std::to_string(plan.global_batch) + " = micro-batch " + std::to_string(plan.micro_batch_size) +
                  " × " + std::to_string(plan.num_micro_batches) + " · sequence " + std::to_string(pb.seq_len()) +
                  " · ZeRO " + std::to_string(plan.zero),
              "font-size=\"13\"");
  std::string fit = "fits in memory";
  bool fits = true;
  for (int i = 0; i < p && fits; ++i) {
    if (!est[i].fits()) {
      fits = false;
      fit = "DOES NOT FIT: stage " + std::to_string(i) + " needs " + fixed(est[i].memory.total() / kGiB, 1) +
            " GiB of " + fixed(est[i].capacity_bytes / kGiB, 0);
    }
  }
  out += text(20, 72,
              "iteration " + duration(perf.iteration_time_s) + " (cost model), " + duration(timeline.iteration_s) +
" (this schedule)" +
                  " · " + fixed(perf.tokens_per_s, 0) + " tokens/s · MFU " +
                  fixed(100 * perf.mfu, 1) + "% · " + fixed(perf.model_tflops_per_gpu, 1) + " TFLOP/s per GPU · " +
                  fit,
              std::string("font-size=\"13\"") + (fits ? "" : " fill=\"" + std::string(kOverColour) + "\""));
  return out;
}

void stage_label(std::string& out, const StagePlan& s, int i, int vpp, const Layout& L) {
  const double top = L.row_top(i), h = L.row_height;
  const std::string chunks = vpp > 1 ? " in " + stage_chunks(s, vpp) : "";
  // A stage of replica sets names each set's device, and its dp each set's
  // replicas ("dp 2+2"): the sets' own rows are in the bars below.
  const std::string name = "Stage " + std::to_string(i) + " — " + s.devices();
  const std::string gpus = std::to_string(s.gpus) + (s.gpus == 1 ? " GPU" : " GPUs") + " (tp " +
                           std::to_string(s.tp) + (s.cp > 1 ? " × cp " + std::to_string(s.cp) : "") + " × dp " +
                           replica_counts(s) + ")";
  if (h >= 38) {
    out += text(12, top + h / 2 - 7, name, "font-size=\"12\" font-weight=\"bold\"");
    out += text(12, top + h / 2 + 6, gpus, "font-size=\"10.5\"");
    out += text(12, top + h / 2 + 18, stage_layers(s) + chunks, "font-size=\"10.5\"");
  } else if (h >= 24) {
    out += text(12, top + h / 2 - 2, name + ", " + gpus, "font-size=\"11\" font-weight=\"bold\"");
    out += text(12, top + h / 2 + 10, stage_layers(s) + chunks, "font-size=\"10\"");
  } else {
    out += text(12, top + h / 2 + 3.5,
                "S" + std::to_string(i) + " " + s.devices() + " tp" + std::to_string(s.tp) + "×dp" +
                    replica_counts(s) + " L" + std::to_string(s.layer_begin) + "–" +
                    std::to_string(s.layer_end - 1) + (vpp > 1 ? " ×" + std::to_string(vpp) : ""),
                "font-size=\"" + px(std::clamp(h * 0.55, 7.0, 10.0)) + "\"");
  }
}

// The passes of one stage, kind and chunk, in one group that sets their
// colour; `vpp` > 1 names the chunk on each box.
void pass_boxes(std::string& out, const StageTimeline& st, int i, PassKind kind, int chunk, int vpp,
                const std::string& fill, const Layout& L, bool detailed) {
  const bool fwd = kind == PassKind::forward;
  const std::string chunk_attr = vpp > 1 ? "\" data-chunk=\"" + std::to_string(chunk) : "";
  const std::string chunk_words = vpp > 1 ? " chunk " + std::to_string(chunk) : "";
  out += "<g fill=\"" + fill + "\"";
  if (detailed) out += " stroke=\"#ffffff\" stroke-width=\"0.6\"";
  out += ">\n";
  const double y = L.box_top(i), h = L.box_bottom(i) - L.box_top(i);
  for (const PipelineOp& op : st.ops) {
    if (op.kind != kind || op.chunk != chunk) continue;
    const double x = L.x(op.start_s);
    // Thin passes still show: a micro-batch never vanishes from the picture.
    const double w = std::max(L.x(op.end_s) - x, 0.4);
    out += "<rect class=\"" + std::string(fwd ? "fwd" : "bwd") + "\" data-stage=\"" + std::to_string(i) +
           "\" data-mb=\"" + std::to_string(op.micro_batch) + chunk_attr + "\" x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" +
           px(w) + "\" height=\"" + px(h) + "\"";
    if (detailed) {
      out += "><title>stage " + std::to_string(i) + chunk_words + (fwd ? " forward" : " backward") + " of micro-batch " +
             std::to_string(op.micro_batch) + ": " + fixed(op.start_s, 4) + "–" + fixed(op.end_s, 4) +
             " s</title></rect>\n";
    } else {
      out += "/>\n";
    }
  }
  out += "</g>\n";
  if (!detailed) return;
  // Micro-batch numbers where the box is wide enough to hold them.
  std::string labels;
  for (const PipelineOp& op : st.ops) {
    if (op.kind != kind || op.chunk != chunk) continue;
    const double x0 = L.x(op.start_s), x1 = L.x(op.end_s);
    const std::string n = std::to_string(op.micro_batch);
    if (x1 - x0 < text_width(n, 9) + 4 || h < 10) continue;
    labels += text((x0 + x1) / 2, y + h / 2 + 3, n);
  }
  if (!labels.empty()) {
    out += "<g class=\"mb-label\" font-size=\"9\" text-anchor=\"middle\" fill=\"" +
           std::string(fwd ? "#222222" : "#ffffff") + "\">\n" + labels + "</g>\n";
  }
}

void sends(std::string& out, const Timeline& t, const Layout& L) {
  const int p = static_cast<int>(t.stages.size());
  if (p < 2) return;
  out += "<g class=\"sends\" stroke=\"" + std::string(kSendColour) +
         "\" stroke-width=\"0.7\" stroke-opacity=\"0.6\">\n";
  std::string wraps;
  for (int i = 0; i < p; ++i) {
    for (const PipelineOp& op : t.stages[i].ops) {
      // Activations go down to the next stage, gradients up to the previous.
      if (op.kind == PassKind::forward && i + 1 < p) {
        out += line(L.x(op.end_s), L.box_bottom(i), L.x(op.send_end_s), L.box_top(i + 1));
      } else if (op.kind == PassKind::backward && i > 0) {
        out += line(L.x(op.end_s), L.box_top(i), L.x(op.send_end_s), L.box_bottom(i - 1));
      } else if (op.kind == PassKind::forward && op.chunk + 1 < t.vpp) {
        // Interleaved: the last stage's chunk c feeds the first stage's c + 1,
        wraps += line(L.x(op.end_s), L.box_top(i), L.x(op.send_end_s), L.box_top(0));
      } else if (op.kind == PassKind::backward && op.chunk > 0) {
        // and the first stage's chunk c sends its gradient to the last's c − 1.
        wraps += line(L.x(op.end_s), L.box_bottom(i), L.x(op.send_end_s), L.box_bottom(p - 1));
      }
    }
  }
  out += "</g>\n";
  if (!wraps.empty()) {
    out += "<g class=\"wrap-sends\" stroke=\"" + std::string(kSendColour) +
           "\" stroke-width=\"0.7\" stroke-opacity=\"0.35\" stroke-dasharray=\"3 2\">\n" + wraps + "</g>\n";
  }
}

void time_axis(std::string& out, const Timeline& t, const Layout& L, double y, double grid_top) {
  const double span = t.iteration_s > 0 ? t.iteration_s : 1;
  const double cut = L.band_px > 0 ? L.cut_to - L.cut_from : 0;  // not to scale
  const double step = nice_step((span - cut) / 10);
  const int decimals = decimals_for(step);
  out += "<g class=\"time-axis\" " + std::string(kFont) + " font-size=\"11\" text-anchor=\"middle\">\n";
  out += line(kTimelineLeft, y, kTimelineRight, y, "stroke=\"#333333\"");
  auto tick = [&](double time) {
    const double x = L.x(time);
    out += line(x, grid_top, x, y, "stroke=\"#ffffff\" stroke-width=\"1\" class=\"grid\"");
    out += line(x, y, x, y + 5, "stroke=\"#333333\"");
    out += text(x, y + 18, fixed(time, decimals));
  };
  // Ticks on either side of an elided stretch, at their real times.
  const double first_gap = cut > 0 ? L.cut_from : span;
  for (long long k = 0; k * step <= first_gap * (1 + 1e-9); ++k) tick(k * step);
  if (cut > 0) {
    for (long long k = static_cast<long long>(std::ceil(L.cut_to / step)); k * step <= span * (1 + 1e-9); ++k)
      tick(k * step);
  }
  out += text(kTimelineRight + 40, y + 18, "time (s)", "text-anchor=\"middle\"");
  out += "</g>\n";
}

// Horizontal bar axis from x0 to x1 for values 0..max, in `unit`.
void bar_axis(std::string& out, double x0, double x1, double y, double max, double unit_scale,
              std::string_view unit) {
  const double step = nice_step(max * unit_scale / 5);
  const int decimals = decimals_for(step);
  out += line(x0, y, x1, y, "stroke=\"#333333\"");
  for (int k = 0; k * step <= max * unit_scale * (1 + 1e-9); ++k) {
    const double x = x0 + (x1 - x0) * (k * step) / (max * unit_scale);
    out += line(x, y, x, y + 4, "stroke=\"#333333\"");
    out += text(x, y + 16, fixed(k * step, decimals), "text-anchor=\"middle\" font-size=\"10\"");
  }
  out += text(x1 + 8, y + 16, unit, "font-size=\"10\"");
}

// What every section of the picture draws from.
struct Picture {
  const Plan& plan;
  std::vector<StageEstimate> est;
  std::vector<std::vector<StageRow>> rows;  // per stage: itself, or its replica sets
  Timeline timeline;
  std::vector<std::string> devices;
  int stages() const { return static_cast<int>(plan.stages.size()); }
  // The device whose colour a stage's schedule row takes: its own, or the
  // set that paces it.
  const std::string& pacing_device(int i) const {
    for (const StageRow& r : rows[i])
      if (r.paces) return r.device;
    return rows[i].front().device;
  }
};

// The 1F1B timeline from `top`, with its axis and legend; returns where the
// next section may start.
double draw_timeline(std::string& out, const Picture& pic, double top) {
  const int p = pic.stages();
  const Timeline& timeline = pic.timeline;
  std::size_t passes = 0;
  for (const StageTimeline& st : timeline.stages) passes += st.ops.size();
  const bool detailed = passes <= kDetailedPassLimit;
  Layout L;
  L.row_height = std::clamp(600.0 / p, 14.0, 44.0);
  L.box_inset = L.row_height >= 24 ? 5 : L.row_height * 0.18;
  const double span = timeline.iteration_s > 0 ? timeline.iteration_s : 1;
  const auto& elided = timeline.elided;
  if (elided && elided->to_s > elided->from_s) {
    // The stretch between the cut's two sides, however long, is one band.
    L.cut_from = elided->from_s;
    L.cut_to = elided->to_s;
    L.band_px = kElisionBandWidth;
    L.scale = (kTimelineRight - kTimelineLeft - L.band_px) / std::max(span - (L.cut_to - L.cut_from), 1e-300);
  } else {
    L.scale = (kTimelineRight - kTimelineLeft) / span;
  }

  const int v = pic.plan.vpp;
  std::string title = (v > 1 ? "Interleaved 1F1B schedule of one iteration, " + std::to_string(v) +
                                   " chunks per stage: " + std::to_string(pic.plan.num_micro_batches) +
                                   " micro-batches, one box per chunk's forward and backward"
                             : "1F1B schedule of one iteration: " + std::to_string(pic.plan.num_micro_batches) +
                                   " micro-batches, one box per forward and backward");
  title += "; grey lane = idle (pipeline bubble)";
  if (elided) title += "; " + std::to_string(elided->micro_batches) + " in the middle elided";
  out += text(20, top, title, "font-size=\"14\" font-weight=\"bold\"");
  if (v > 1) {
    // How the chunks are cut, which the boxes draw: by layers, as the
    // export lays them out, each taking that share of its stage's time.
    const bool stated = std::any_of(pic.plan.stages.begin(), pic.plan.stages.end(),
                                    [](const StagePlan& s) { return !s.chunks.empty(); });
    const std::string cut = stated ? "the layers the plan states for it (each row says how many)"
                                   : "the c-th of " + std::to_string(v) +
                                         " near-equal shares of its layers (the first ones larger)";
    out += text(20, top + 15,
                "Chunk c of a stage holds " + cut +
                    " and that share of its time; "
                    "later chunks darker; dashed: the last stage's chunk c feeds the first stage's chunk c + 1",
                "font-size=\"11\" class=\"chunk-note\"");
    top += 15;
  }
  L.rows_top = top + 16;
  // Lanes first, so idle time reads as the grey showing between boxes.
  out += "<g class=\"lanes\" fill=\"" + std::string(kLaneColour) + "\">\n";
  for (int i = 0; i < p; ++i) {
    out += rect(kTimelineLeft, L.box_top(i), kTimelineRight - kTimelineLeft, L.box_bottom(i) - L.box_top(i));
  }
  out += "</g>\n";
  if (elided) {
    // Said in the picture: what the band (or, when the cut leaves no gap,
    // the schedule) leaves out, and at what pace it runs.
    const double x0 = L.band_px > 0 ? L.x(L.cut_from) : L.x(elided->to_s) - kElisionBandWidth / 2;
    const double w = L.band_px > 0 ? L.band_px : kElisionBandWidth;
    const double y0 = L.box_top(0), y1 = L.box_bottom(p - 1);
    out += "<g class=\"elided\" data-micro-batches=\"" + std::to_string(elided->micro_batches) + "\">\n";
    if (L.band_px > 0) out += rect(x0, y0, w, y1 - y0, "fill=\"#ffffff\" stroke=\"#999999\" stroke-dasharray=\"4 3\"");
    out += text(x0 + w / 2, (y0 + y1) / 2, "… " + std::to_string(elided->micro_batches) + " micro-batches elided …",
                "font-size=\"10\" text-anchor=\"middle\" transform=\"rotate(-90 " + px(x0 + w / 2) + " " +
                    px((y0 + y1) / 2) + ")\"");
    out += "<title>" + std::to_string(elided->micro_batches) + " micro-batches elided: the steady state, one every " +
           fixed(elided->period_s, 4) + " s (" + fixed(elided->to_s - elided->from_s, 2) + " s not drawn)</title>\n";
    out += "</g>\n";
  }
  const double axis_y = L.row_top(p) + 4;
  time_axis(out, timeline, L, axis_y, L.rows_top);

  for (int i = 0; i < p; ++i) {
    const StagePlan& s = pic.plan.stages[i];
    const StageTimeline& st = timeline.stages[i];
    const int d = device_index(pic.devices, pic.pacing_device(i));
    out += "<g class=\"stage-row\" data-stage=\"" + std::to_string(i) + "\" data-device=\"" + escape(s.devices()) +
           "\">\n";
    stage_label(out, s, i, v, L);
    for (int c = 0; c < v; ++c) {
      pass_boxes(out, st, i, PassKind::forward, c, v, chunk_colour(d, true, c, v), L, detailed);
      pass_boxes(out, st, i, PassKind::backward, c, v, chunk_colour(d, false, c, v), L, detailed);
    }
    const double y = L.box_top(i), h = L.box_bottom(i) - L.box_top(i);
    if (st.sync_end_s > st.sync_start_s) {
      out += rect(L.x(st.sync_start_s), y, L.x(st.sync_end_s) - L.x(st.sync_start_s), h,
                  "class=\"sync\" fill=\"" + std::string(kSyncColour) + "\"");
    }
    if (st.optimizer_end_s > st.sync_end_s) {
      out += rect(L.x(st.sync_end_s), y, L.x(st.optimizer_end_s) - L.x(st.sync_end_s), h,
                  "class=\"opt\" fill=\"" + std::string(kOptimizerColour) + "\"");
    }
    out += text(kTimelineRight + 8, y + h / 2 + 4, "idle " + fixed(100 * timeline.idle_fraction(i), 0) + "%",
                "font-size=\"11\" class=\"idle\"");
    out += "</g>\n";
  }
  sends(out, timeline, L);

  Legend legend(out, kTimelineLeft, kWidth - 20, axis_y + 46);
  for (std::size_t d = 0; d < pic.devices.size(); ++d) {
    const int di = static_cast<int>(d);
    legend.swatch(device_colour(di), pic.devices[d] + " forward / backward", "legend-pass", device_tint(di));
  }
  if (v > 1) {
    // The chunk shades of the first device, forward over backward.
    for (int c = 0; c < v; ++c)
      legend.swatch(chunk_colour(0, false, c, v), "chunk " + std::to_string(c), "legend-chunk",
                    chunk_colour(0, true, c, v));
  }
  legend.stroke(kSendColour, 1.2, false, "pipeline send");
  legend.swatch(kSyncColour, "gradient sync", "legend-sync");
  legend.swatch(kOptimizerColour, "optimizer step", "legend-opt");
  legend.swatch(kLaneColour, "idle", "legend-idle");
  return legend.end() + 46;
}

// Per-stage bars from `top`: the time of one micro-batch (left) and the
// memory per GPU against capacity (right), with axes and legends; returns
// the bottom. A stage of replica sets has a row per set, each against its
// own device's capacity (the stage fits when every set does).
double draw_stage_bars(std::string& out, const Picture& pic, double top) {
  std::vector<const StageRow*> rows;
  std::vector<int> stage_of;
  for (int i = 0; i < pic.stages(); ++i) {
    for (const StageRow& r : pic.rows[i]) rows.push_back(&r), stage_of.push_back(i);
  }
  const int n = static_cast<int>(rows.size());
  constexpr double kTimeLabel = 20, kTimeX0 = 90, kTimeX1 = 590;
  constexpr double kMemLabel = 720, kMemX0 = 790, kMemX1 = 1240;
  const double row = std::clamp(360.0 / n, 14.0, 28.0), bar_h = row * 0.7, rows_top = top + 14;
  out += text(kTimeLabel, top, "Time of one micro-batch per stage", "font-size=\"14\" font-weight=\"bold\"");
  out += text(kMemLabel, top, "Memory per GPU against the device's capacity", "font-size=\"14\" font-weight=\"bold\"");

  double max_time = 0, max_memory = 0;
  int slowest = 0;
  for (int j = 0; j < n; ++j) {
    const StageEstimate& e = rows[j]->estimate;
    if (e.pace_s() > max_time) max_time = e.pace_s(), slowest = j;
    max_memory = std::max({max_memory, e.memory.total(), e.capacity_bytes});
  }
  if (!(max_time > 0)) max_time = 1;
  max_memory = max_memory > 0 ? 1.02 * max_memory : 1;
  const double time_scale = (kTimeX1 - kTimeX0) / max_time, mem_scale = (kMemX1 - kMemX0) / max_memory;

  for (int j = 0; j < n; ++j) {
    const StageRow& r = *rows[j];
    const StageEstimate& e = r.estimate;
    const int d = device_index(pic.devices, r.device);
    const double row_top = rows_top + j * row, y = row_top + (row - bar_h) / 2, baseline = y + bar_h - 3;
    const std::string stage_attr = "data-stage=\"" + std::to_string(stage_of[j]) + "\"" +
                                   (r.replica_set ? " data-set=\"" + r.label + "\"" : std::string());
    const std::string name = "Stage " + r.label;

    // Forward, backward and sends of one micro-batch: what paces 1F1B.
    out += "<g class=\"time-bar\" " + stage_attr + ">\n";
    out += text(kTimeLabel, baseline, name, "font-size=\"11\"");
    double x = kTimeX0;
    const std::array<std::pair<double, std::string>, 3> parts = {{{e.forward_s, device_tint(d)},
                                                                  {e.backward_s, device_colour(d)},
                                                                  {e.p2p_s, kSendColour}}};
    const std::array<const char*, 3> part_class = {"time-fwd", "time-bwd", "time-send"};
    for (std::size_t k = 0; k < parts.size(); ++k) {
      out += rect(x, y, parts[k].first * time_scale, bar_h,
                  "fill=\"" + parts[k].second + "\" class=\"" + part_class[k] + "\"");
      x += parts[k].first * time_scale;
    }
    // The slowest of all rows paces the pipeline; a set that paces only its
    // own stage says so.
    const bool mark = j == slowest && n > 1;
    const std::string share = r.replica_set ? "  " + r.device + ", " + std::to_string(r.sequences) + " of " +
                                                  std::to_string(pic.plan.micro_batch_size) + " seq."
                                            : "";
    out += text(x + 6, baseline,
                duration(e.pace_s()) + share + (mark ? "  slowest" : r.paces ? "  paces its stage" : ""),
                std::string("font-size=\"11\"") + (mark ? " font-weight=\"bold\"" : ""));
    out += "</g>\n";

    // Memory per GPU stacked by kind, and the capacity it must stay under.
    out += "<g class=\"mem-bar\" " + stage_attr + ">\n";
    out += text(kMemLabel, baseline, name, "font-size=\"11\"");
    x = kMemX0;
    for (const MemoryKind& k : kMemoryKinds) {
      const double bytes = e.memory.*k.bytes;
      if (bytes <= 0) continue;
      out += rect(x, y, bytes * mem_scale, bar_h,
                  "fill=\"" + std::string(k.colour) + "\" class=\"" + k.css_class + "\"");
      x += bytes * mem_scale;
    }
    const bool over = !e.fits();
    const double xc = kMemX0 + e.capacity_bytes * mem_scale;
    const std::string capacity_colour = over ? kOverColour : "#222222";
    out += line(xc, row_top + 1, xc, row_top + row - 1,
                "stroke=\"" + capacity_colour + "\" stroke-width=\"2\" class=\"capacity\"");
    const std::string value = fixed(e.memory.total() / kGiB, 1) + " / " + fixed(e.capacity_bytes / kGiB, 0) +
                              " GiB" + (r.replica_set ? " " + r.device : "") + (over ? " over" : "");
    out += text(std::max(x, xc) + 6, baseline, value,
                std::string("font-size=\"11\"") + (over ? " fill=\"" + std::string(kOverColour) + "\"" : ""));
    out += "</g>\n";
  }
  const double axis_y = rows_top + n * row + 4;
  bar_axis(out, kTimeX0, kTimeX1, axis_y, max_time, 1e3, "ms");
  bar_axis(out, kMemX0, kMemX1, axis_y, max_memory, 1 / kGiB, "GiB");

  Legend time_legend(out, kTimeLabel, kMemLabel - 40, axis_y + 40);
  time_legend.swatch(device_tint(0), "forward", "legend-time-fwd");
  time_legend.swatch(device_colour(0), "backward (incl. recompute)", "legend-time-bwd");
  time_legend.swatch(kSendColour, "pipeline sends", "legend-time-send");
  Legend memory_legend(out, kMemLabel, kWidth - 20, axis_y + 40);
  for (const MemoryKind& k : kMemoryKinds) memory_legend.swatch(k.colour, k.name, std::string("legend-") + k.css_class);
  memory_legend.stroke("#222222", 2, true, "capacity");
  return std::max(time_legend.end(), memory_legend.end()) + 24;
}

}  // namespace

std::string render_svg_element(const CostModel& model, const Plan& plan, const SvgReportOptions& options) {
  Picture pic{plan, {}, {}, {}, device_order(plan)};
  for (int i = 0; i < pic.stages(); ++i) {
    pic.est.push_back(model.stage(plan, i));
    pic.rows.push_back(stage_rows(model, plan, i));
  }
  pic.timeline = plan_timeline(plan, pic.est);

  std::string body;
  double y = 28;
  if (options.summary) {
    body += header(model, plan, model.estimate(plan), pic.timeline, pic.est);
    y = 104;
  }
  y = draw_timeline(body, pic, y);
  const double height = draw_stage_bars(body, pic, y);

  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(kWidth) + "\" height=\"" + px(height) +
                    "\" viewBox=\"0 0 " + px(kWidth) + " " + px(height) + "\" " + kFont +
                    " class=\"autohaap-report\" data-stages=\"" + std::to_string(pic.stages()) +
                    "\" data-micro-batches=\"" + std::to_string(plan.num_micro_batches) + "\">\n";
  out += "<title>" + escape(std::string(kReportTitle) + plan.model + " on " + plan.cluster) + "</title>\n";
  out += rect(0, 0, kWidth, height, "fill=\"#ffffff\"");
  out += body;
  out += "</svg>\n";
  return out;
}

std::string render_svg_report(const CostModel& model, const Plan& plan, const SvgReportOptions& options) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + render_svg_element(model, plan, options);
}

}  // namespace autohaap
