#include "report_text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap::report_text {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", std::clamp(decimals, 0, 12), value);
  return buffer;
}

std::string duration(double s) {
  const double a = std::fabs(s);
  if (a >= 1) return fixed(s, a >= 100 ? 0 : (a >= 10 ? 1 : 2)) + " s";
  if (a >= 1e-3) return fixed(s * 1e3, a >= 0.1 ? 0 : (a >= 0.01 ? 1 : 2)) + " ms";
  return fixed(s * 1e6, 0) + " µs";
}

std::string stage_layers(const StagePlan& s) {
  std::string text = "no transformer layer";
  if (s.num_layers() > 0) {
    text = "layers " + std::to_string(s.layer_begin);
    if (s.num_layers() > 1) text += "–" + std::to_string(s.layer_end - 1);
    text += " (" + std::to_string(s.num_layers()) + ")";
  }
  if (s.recompute != Recompute::none) text += std::string(", recompute ") + to_string(s.recompute);
  return text;
}

std::string stage_chunks(const StagePlan& s, int vpp) {
  if (vpp <= 1) return "";
  std::string text = "chunks ";
  for (int v = 0; v < vpp; ++v) {
    if (v > 0) text += '+';
    text += std::to_string(s.chunk(vpp, v));
  }
  return text;
}

std::vector<std::string> device_order(const Plan& plan) {
  std::vector<std::string> order;
  auto use = [&](const std::string& device) {
    if (std::find(order.begin(), order.end(), device) == order.end()) order.push_back(device);
  };
  for (const StagePlan& s : plan.stages) {
    if (!s.has_replica_sets()) use(s.device);
    for (const ReplicaSet& r : s.replicas) use(r.device);
  }
  return order;
}

int device_index(const std::vector<std::string>& order, const std::string& device) {
  const auto it = std::find(order.begin(), order.end(), device);
  return it == order.end() ? 0 : static_cast<int>(it - order.begin());
}

namespace {

// Tableau 10 (the default palette of many plotting tools): distinct hues
// that stay apart for colour-blind readers.
constexpr std::array<unsigned, 8> kPalette = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xb07aa1,
                                              0xe15759, 0x76b7b2, 0xedc948, 0x9c755f};

std::string hex(unsigned rgb) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%06x", rgb & 0xffffffu);
  return buffer;
}

}  // namespace

std::string device_colour(int index) { return hex(kPalette[static_cast<std::size_t>(index) % kPalette.size()]); }

std::string device_tint(int index) {
  // Halfway to white: forward and backward of one device read as one family.
  const unsigned c = kPalette[static_cast<std::size_t>(index) % kPalette.size()];
  unsigned out = 0;
  for (int shift = 16; shift >= 0; shift -= 8) {
    const unsigned v = (c >> shift) & 0xffu;
    out |= ((v + 255u) / 2u) << shift;
  }
  return hex(out);
}

std::string chunk_colour(int index, bool forward, int chunk, int chunks) {
  if (chunk <= 0 || chunks <= 1) return forward ? device_tint(index) : device_colour(index);
  const unsigned c = kPalette[static_cast<std::size_t>(index) % kPalette.size()];
  const double depth = static_cast<double>(std::min(chunk, chunks - 1)) / (chunks - 1);
  // Forwards from halfway to white down to 30% white; backwards from the
  // saturated colour down to 35% black.
  const double white = forward ? 0.5 - 0.2 * depth : 0.0;
  const double black = forward ? 0.0 : 0.35 * depth;
  unsigned out = 0;
  for (int shift = 16; shift >= 0; shift -= 8) {
    const double v = static_cast<double>((c >> shift) & 0xffu);
    const double mixed = (v + (255.0 - v) * white) * (1.0 - black);
    out |= static_cast<unsigned>(std::lround(std::clamp(mixed, 0.0, 255.0))) << shift;
  }
  return hex(out);
}

}  // namespace autohaap::report_text
