// HTML report: the SVG picture of a plan (report/svg_report.hpp) inside a
// page that also gives its numbers — a summary table (model, cluster, GPUs,
// batch, iteration time, tokens/s, MFU, HFU, memory fit) and a per-stage
// table (device, GPUs, tp × dp, layers, recompute, forward / backward /
// send / sync / optimizer time, memory against capacity, idle share), and
// the plans it was compared with, if any.
//
// One self-contained file: inline style, inline SVG, no scripts and nothing
// fetched, so it can be mailed, archived or opened offline. Callers: the
// report command, `search --report` (report/report_writer.hpp), tests. Pure
// and thread-safe; cost as the SVG's, O(stages × micro-batches).
#pragma once

#include <string>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/report/report_writer.hpp"

namespace autohaap {

// `compared`: other plans listed after the summary (report_writer.hpp).
std::string render_html_report(const CostModel& model, const Plan& plan,
                               const std::vector<ComparedPlan>& compared = {});

}  // namespace autohaap
