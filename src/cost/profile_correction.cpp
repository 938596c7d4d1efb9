#include "autohaap/cost/profile_correction.hpp"

#include <algorithm>

#include "autohaap/cost/profile_table.hpp"
#include "autohaap/plan.hpp"
#include "autohaap/statistics.hpp"

namespace autohaap {

void ProfileCorrection::add_point(const std::string& device, const std::string& op, double measured_s,
                                  double analytic_s) {
  if (measured_s <= 0 || analytic_s <= 0) return;
  ratios_[{device, op}].push_back(measured_s / analytic_s);
}

void ProfileCorrection::finish() {
  factors_.clear();
  for (const auto& [key, ratios] : ratios_) {
    CorrectionFactor c;
    c.device = key.first;
    c.op = key.second;
    c.points = static_cast<int>(ratios.size());
    c.factor = median(ratios);
    const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    c.min_ratio = *lo;
    c.max_ratio = *hi;
    factors_[key] = c;
  }
}

std::optional<double> ProfileCorrection::factor(const std::string& device, const std::string& op) const {
  if (auto it = factors_.find({device, op}); it != factors_.end()) return it->second.factor;
  if (const auto [base, backward] = split_backward(op); backward) return factor(device, std::string(base));
  return std::nullopt;
}

std::vector<CorrectionFactor> ProfileCorrection::factors() const {
  std::vector<CorrectionFactor> out;
  out.reserve(factors_.size());
  for (const auto& [key, c] : factors_) out.push_back(c);
  return out;
}

const char* to_string(TimeSource source) {
  switch (source) {
    case TimeSource::measured: return "measured";
    case TimeSource::corrected: return "corrected";
    case TimeSource::analytic: return "analytic";
  }
  return "analytic";
}

std::optional<TimeSource> parse_time_source(std::string_view name) {
  for (TimeSource s : {TimeSource::measured, TimeSource::corrected, TimeSource::analytic})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

}  // namespace autohaap
