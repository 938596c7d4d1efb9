// ProfileCorrection: what a measured profile says about the configurations
// it did not measure.
//
// A profile measures some (device, op, tp, micro-batch) points; a search
// also scores the points in between and beyond. Taking the analytic
// roofline raw there mixes two scales: on Metis's own A100 tables the
// roofline is about 3.4 times faster than the measurements, so a search
// would prefer every configuration nobody measured. Instead, for each
// (device, op) with measured points, the factor measured / analytic is taken
// at every measured point and its median (robust to one odd measurement)
// scales the analytic time of that device and op wherever it was not
// measured. The factors are reported (CostModel::profile_corrections) so a
// user sees how far the analytic model was from the measurements.
//
// Ops are the profile table's names (cost/profile_table.hpp): a whole
// "layer", its parts, "embedding", "lm_head", each forward and "<op>_backward".
// A backward without measured points of its own takes the forward's factor.
// Points measured as 0 (parts a profile folds into another op) carry no
// ratio and are left out.
//
// Pure data, built once by the CostModel; thread-safe to read. Cost:
// O(log ops) per lookup.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace autohaap {

// One (device, op)'s correction: the median ratio over its measured points.
struct CorrectionFactor {
  std::string device;
  std::string op;
  int points = 0;
  double factor = 1;     // median of measured / analytic
  double min_ratio = 1;  // the spread of the ratios it summarizes
  double max_ratio = 1;
};

// A (device, op) measured a median this many times slower than the
// analytic model is more likely a units slip (microseconds written as
// milliseconds reads as about 1000x) than a GPU that slow: Metis's own A100
// tables sit at about 3.4x, and the launch overheads of the smallest ops
// reach some 10x. Said with a warning, not refused: the times may be right.
inline constexpr double kImplausiblySlowFactor = 20;

class ProfileCorrection {
 public:
  // One measured point: measured and analytic seconds of `op` on `device`.
  void add_point(const std::string& device, const std::string& op, double measured_s, double analytic_s);
  // Computes the factors; call once after the last add_point.
  void finish();

  // The factor of (device, op); for "<op>_backward" without points of its
  // own, the forward's. Nothing where the profile measured neither.
  std::optional<double> factor(const std::string& device, const std::string& op) const;

  bool empty() const { return factors_.empty(); }
  // Every factor, ordered by device then op.
  std::vector<CorrectionFactor> factors() const;

 private:
  std::map<std::pair<std::string, std::string>, std::vector<double>> ratios_;
  std::map<std::pair<std::string, std::string>, CorrectionFactor> factors_;
};

}  // namespace autohaap
