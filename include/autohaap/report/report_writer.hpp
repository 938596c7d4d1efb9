// Report writer: the one entry point that turns a plan into a report file,
// SVG or HTML chosen by the file name (DESIGN.md "Outputs": `report PLAN
// --out FILE.svg|.html` and `search --report FILE`).
//
// The file is written with write_file_atomically, so a reader never sees a
// half-written report. Errors are InputError: an extension other than .svg,
// .html or .htm (named with the path), or a path that cannot be written
// (with the operating system's reason). Callers: the report command, the
// search command. Cost: rendering is O(stages × micro-batches); then one
// write.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"

namespace autohaap {

enum class ReportFormat { svg, html };

// Another plan to show beside the reported one (the HTML page lists them in
// a "compared with" table; the SVG picture leaves them out): e.g. the
// unrestricted best and the uniform plans of `search --runnable`.
struct ComparedPlan {
  std::string label;
  double iteration_s = 0;  // 0: none fits
  double versus_best = 0;  // relative difference to the reference plan (+0.05 = 5% slower)
  std::string pipeline;    // one line
};

// The format a path asks for, by its extension (any letter case). Another
// extension is an InputError naming the path, or, given `flag`, the
// command-line flag that named it.
ReportFormat report_format_for(const std::string& path, const std::string& flag = "");

// What every report's <title> begins with, SVG and HTML alike (how report
// and search --report tell an earlier report they may replace).
inline constexpr std::string_view kReportTitle = "AutoHAAP plan: ";

// Renders `plan` (scored by `model`), with `compared` beside it in HTML,
// and writes it to `path`.
void write_report(const CostModel& model, const Plan& plan, const std::string& path,
                  const std::vector<ComparedPlan>& compared = {});

}  // namespace autohaap
