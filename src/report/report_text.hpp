// Text the SVG and HTML reports share: escaping, number formatting, the
// words that describe a stage, and the colour of each device type. Internal
// to src/report/. Pure functions; cheap.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "autohaap/plan.hpp"

namespace autohaap::report_text {

// Escapes the five XML special characters; valid in SVG and HTML alike.
std::string escape(std::string_view text);

// printf-style "%.<decimals>f".
std::string fixed(double value, int decimals);

// A duration with a unit a person reads at a glance: "1.23 s", "45.6 ms", "780 µs".
std::string duration(double seconds);

// "layers 0–9 (10), recompute full".
std::string stage_layers(const StagePlan& stage);

// How an interleaved stage splits its layers into `vpp` model chunks
// (chunk_layers): "chunks 4+3+3"; "" when vpp is 1.
std::string stage_chunks(const StagePlan& stage, int vpp);

// Device types in order of first use along the pipeline (a stage's replica
// sets in their order); a device's colour
// is its index here, so one device keeps one colour in every picture.
std::vector<std::string> device_order(const Plan& plan);
int device_index(const std::vector<std::string>& order, const std::string& device);
// Saturated colour of device `index` (backward passes) and a lighter tint
// (forward passes), both "#rrggbb".
std::string device_colour(int index);
std::string device_tint(int index);
// The colour of a pass of device `index` in model chunk `chunk` of
// `chunks`: chunk 0 is device_tint (forward) or device_colour (backward);
// later chunks go a step darker each, forwards staying lighter than any
// backward, so the chunks of an interleaved stage tell apart.
std::string chunk_colour(int index, bool forward, int chunk, int chunks);

}  // namespace autohaap::report_text
