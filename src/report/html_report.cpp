#include "autohaap/report/html_report.hpp"

#include <algorithm>

#include "autohaap/io/plan_printer.hpp"
#include "autohaap/report/svg_report.hpp"
#include "autohaap/report/report_writer.hpp"
#include "autohaap/report/timeline.hpp"
#include "autohaap/units.hpp"
#include "report_text.hpp"

namespace autohaap {
namespace {

using namespace report_text;

constexpr const char* kStyle = R"(body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 12px}
h2{font-size:16px;margin:24px 0 8px}
table{border-collapse:collapse;font-size:13px}
th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}
td{white-space:nowrap}
th{vertical-align:bottom}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.over td{color:#d62728}
tr.slowest td{font-weight:bold}
table.summary th{font-weight:normal;color:#555}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;vertical-align:baseline}
figure{margin:16px 0}
figure svg{max-width:100%;height:auto}
)";

std::string row(const std::string& key, const std::string& value) {
  return "<tr><th>" + escape(key) + "</th><td>" + escape(value) + "</td></tr>\n";
}

std::string cell(const std::string& value, bool numeric = false) {
  return std::string(numeric ? "<td class=\"num\">" : "<td>") + escape(value) + "</td>";
}

std::string ms(double s) { return fixed(s * 1e3, 2); }

}  // namespace

std::string render_html_report(const CostModel& model, const Plan& plan, const std::vector<ComparedPlan>& compared) {
  const Problem& pb = model.problem();
  const int p = static_cast<int>(plan.stages.size());
  std::vector<StageEstimate> est;
  for (int i = 0; i < p; ++i) est.push_back(model.stage(plan, i));
  const Timeline timeline = plan_timeline(plan, est);
  const PredictedPerformance perf = model.estimate(plan);
  const std::vector<std::string> devices = device_order(plan);
  const std::string title = std::string(kReportTitle) + plan.model + " on " + plan.cluster;

  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape(title) +
                    "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<h1>" + escape(title) + "</h1>\n";

  out += "<table class=\"summary\">\n";
  out += row("model", plan.model + " (" + std::to_string(pb.model.layers) + " layers, hidden " +
                          std::to_string(pb.model.hidden) + ", sequence " + std::to_string(pb.seq_len()) + ")");
  std::string device_list;
  for (const std::string& d : devices) device_list += (device_list.empty() ? "" : ", ") + d;
  out += row("cluster", plan.cluster + " (" + std::to_string(pb.cluster.total_gpus()) + " GPUs: " + device_list +
                            " used)");
  out += row("GPUs used", std::to_string(plan.num_gpus()) + " in " + std::to_string(p) +
                              (p == 1 ? " pipeline stage" : " pipeline stages"));
  out += row("batch", "global " + std::to_string(plan.global_batch) + " = micro-batch " +
                          std::to_string(plan.micro_batch_size) + " × " + std::to_string(plan.num_micro_batches) +
                          " micro-batches; ZeRO " + std::to_string(plan.zero));
  out += row("iteration time", duration(perf.iteration_time_s) + " (cost model); " + duration(timeline.iteration_s) +
                                   " in the schedule drawn below");
  out += row("throughput", fixed(perf.tokens_per_s, 0) + " tokens/s");
  out += row("MFU / HFU", fixed(100 * perf.mfu, 1) + "% / " + fixed(100 * perf.hfu, 1) + "% (" +
                              fixed(perf.model_tflops_per_gpu, 1) + " model TFLOP/s per GPU)");
  double max_memory = 0;
  for (const double g : perf.stage_memory_GiB) max_memory = std::max(max_memory, g);
  out += row("memory", fixed(max_memory, 1) + " GiB per GPU at most; " +
                           (perf.fits ? std::string("every stage fits") : std::string("DOES NOT FIT")));
  out += "</table>\n";

  if (!compared.empty()) {
    out += "<h2>Compared with</h2>\n<table class=\"compared\">\n<tr><th>plan</th><th>iteration time</th>"
           "<th>vs best</th><th>pipeline</th></tr>\n";
    for (const ComparedPlan& c : compared) {
      out += "<tr>" + cell(c.label);
      if (c.iteration_s > 0) {
        out += cell(duration(c.iteration_s), true) +
               cell((c.versus_best >= 0 ? "+" : "") + fixed(100 * c.versus_best, 1) + "%", true) + cell(c.pipeline);
      } else {
        out += cell("none fits") + cell("") + cell("");
      }
      out += "</tr>\n";
    }
    out += "</table>\n";
  }

  // One row per one-device stage and one per replica set (plan_printer's
  // rows, so the report and `estimate` agree): each set on its own device,
  // GPUs and share of the micro-batch, with its own times and memory; the
  // set that paces its stage is marked. Idle is the stage's (its schedule
  // row is one, paced by that set).
  const bool any_cp = std::any_of(plan.stages.begin(), plan.stages.end(), [](const StagePlan& s) { return s.cp > 1; });
  const bool profiled = !model.problem().profiles.empty();
  out += std::string("<h2>Stages</h2>\n<table class=\"stages\">\n<tr><th>stage</th><th>device</th><th>GPUs</th>") +
         (any_cp ? "<th>tp × cp × dp</th>" : "<th>tp × dp</th>") +
         "<th>layers</th><th>recompute</th><th>sequences</th><th>forward ms</th>"
         "<th>backward ms</th><th>send ms</th><th>grad sync ms</th><th>optimizer ms</th><th>memory GiB</th>"
         "<th>capacity GiB</th><th>idle</th>" +
         // With measured profiles, where each row's times come from, as
         // estimate's stage table says it (measured, corrected, analytic).
         std::string(profiled ? "<th>times</th>" : "") + "</tr>\n";
  bool any_sets = false;
  for (int i = 0; i < p; ++i) {
    const StagePlan& s = plan.stages[i];
    for (const StageRow& r : stage_rows(model, plan, i)) {
      const StageEstimate& e = r.estimate;
      const int d = device_index(devices, r.device);
      any_sets = any_sets || r.replica_set;
      std::string classes = std::string(r.replica_set ? "set" : "") + (r.paces ? " slowest" : "") +
                            (e.fits() ? "" : " over");
      if (!classes.empty() && classes.front() == ' ') classes.erase(0, 1);
      out += (classes.empty() ? std::string("<tr>") : "<tr class=\"" + classes + "\">") + cell(r.label, true);
      out += "<td><span class=\"swatch\" style=\"background:" + device_colour(d) + "\"></span>" +
             escape(r.device) + "</td>";
      out += cell(std::to_string(r.gpus) + " (group " + std::to_string(r.group) + ", GPUs " +
                      std::to_string(r.first_gpu) + "–" + std::to_string(r.first_gpu + r.gpus - 1) + ")",
                  true);
      out += cell(std::to_string(s.tp) + " × " + (s.cp > 1 ? std::to_string(s.cp) + " × " : "") +
                      std::to_string(r.dp),
                  true);
      out += cell(std::to_string(s.layer_begin) + "–" + std::to_string(s.layer_end - 1) + " (" +
                      std::to_string(s.num_layers()) + ")",
                  true);
      out += cell(to_string(s.recompute));
      out += cell(std::to_string(r.sequences) + " of " + std::to_string(plan.micro_batch_size) +
                  (r.paces ? ", slowest" : ""));
      out += cell(ms(e.forward_s), true) + cell(ms(e.backward_s), true) + cell(ms(e.p2p_s), true) +
             cell(ms(e.dp_sync_s), true) + cell(ms(e.optimizer_s), true);
      out += cell(fixed(e.memory.total() / kGiB, 2), true) + cell(fixed(e.capacity_bytes / kGiB, 1), true);
      out += cell(fixed(100 * timeline.idle_fraction(i), 0) + "%", true);
      if (profiled)
        out += cell(std::string(to_string(e.time_source)) +
                    (e.layers_source != e.time_source ? std::string(" (layers ") + to_string(e.layers_source) + ")"
                                                      : std::string()));
      out += "</tr>\n";
    }
  }
  out += "</table>\n";
  if (any_sets) {
    out += "<p class=\"sets-note\">Stages <i>N</i>a, <i>N</i>b, …: the replica sets of stage <i>N</i>, each on its "
           "own device with its share of every micro-batch (tp × dp: its replicas); the slowest paces the stage, "
           "the gradient sync spans all of them.</p>\n";
  }

  // The tables above already summarize the plan: the picture goes without.
  const std::string picture = render_svg_element(model, plan, SvgReportOptions{.summary = false});
  out += "<h2>Schedule and per-stage time and memory</h2>\n<figure>\n" + picture + "</figure>\n</body>\n</html>\n";
  return out;
}

}  // namespace autohaap
