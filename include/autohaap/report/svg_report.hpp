// SVG report: one picture of a plan that a person reads faster than the
// numbers (DESIGN.md "Outputs").
//
// Top: the 1F1B timeline of one iteration (report/timeline.hpp; with
// vpp > 1 the interleaved one, a box per chunk pass, later chunks darker,
// dashed sends from the last stage's chunk c to the first's c + 1) — one row
// per stage, labelled with its device, GPUs, tp × dp, layer range and
// recompute mode; one box per forward and per backward of every
// micro-batch, coloured by device type (forward light, backward dark); idle
// time (the pipeline bubble) shows as the grey lane between boxes, and each
// row ends with its idle share; thin lines draw the pipeline sends; the
// gradient sync and optimizer step close the iteration; a time axis in
// seconds. Bottom: per-stage bars of the time of one micro-batch (forward,
// backward, send) and of the memory per GPU stacked by kind (weights,
// gradients, optimizer states, activations, logits, headroom) against the
// device's capacity, with legends.
//
// The document is self-contained: no scripts, fonts, images or style
// sheets from elsewhere; it opens in any browser or SVG viewer. Elements
// carry classes for tools and tests: every stage row is
// <g class="stage-row" data-stage="i">, every pass a
// <rect class="fwd"|"bwd" data-stage="i" data-mb="j"> (interleaved: and
// data-chunk="c"). Large schedules stay
// light: boxes get no text or tooltip once there are more than a few
// thousand of them.
//
// Callers: the report command, `search --report` (through
// report/report_writer.hpp), tests. Pure and thread-safe. Cost: O(p · m)
// for p stages and m micro-batches; about 150 bytes per pass.
#pragma once

#include <string>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/plan.hpp"

namespace autohaap {

struct SvgReportOptions {
  // The title and summary lines above the timeline; a page that prints its
  // own summary (the HTML report) leaves them out.
  bool summary = true;
};

// A complete SVG document (with XML declaration). The plan must satisfy
// check_plan_against for the cost model's problem.
std::string render_svg_report(const CostModel& model, const Plan& plan, const SvgReportOptions& options = {});

// The same picture as an <svg> element without the XML declaration, for
// embedding in HTML.
std::string render_svg_element(const CostModel& model, const Plan& plan, const SvgReportOptions& options = {});

}  // namespace autohaap
