#include "autohaap/io/device_measurements.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "autohaap/cost/layer_work.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/statistics.hpp"
#include "csv_cells.hpp"
#include "document_writer.hpp"
#include "name_list.hpp"
#include "spec_writer.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

// One measurement table: its header's columns by name, then rows; every
// cell a caller asks for is checked where it is read.
class MeasurementTable {
 public:
  MeasurementTable(std::string path, const std::vector<std::string>& required) : path_(std::move(path)) {
    std::istringstream in(detail::without_byte_order_mark(read_file(path_)));
    std::string line;
    std::string expected;
    for (const std::string& c : required) expected += (expected.empty() ? "" : ",") + c;
    if (!std::getline(in, line)) throw InputError(path_, "header", "(empty file)", "a header naming " + expected);
    const std::vector<std::string> header = detail::split_csv_line(line);
    for (std::size_t i = 0; i < header.size(); ++i)
      if (!columns_.emplace(header[i], i).second)
        throw InputError(path_, "header", detail::shown_line(line),
                         "each column once (column '" + header[i] + "' appears twice)");
    for (const std::string& c : required)
      if (!columns_.count(c)) throw InputError(path_, "header", detail::shown_line(line), "a header naming " + expected);
    int row = 1;
    while (std::getline(in, line)) {
      ++row;
      if (line.empty() || line == "\r" || line[0] == '#') continue;
      std::vector<std::string> cells = detail::split_csv_line(line);
      if (cells.size() != header.size())
        throw InputError(path_, "row " + std::to_string(row), line,
                         std::to_string(header.size()) + " comma-separated cells, as the header");
      rows_.push_back({row, std::move(cells)});
    }
  }

  std::size_t size() const { return rows_.size(); }
  bool has(const std::string& column) const { return columns_.count(column) > 0; }
  // Where a cell is, for an error: "row N.column".
  std::string where(std::size_t r, const std::string& column) const {
    return "row " + std::to_string(rows_[r].line) + "." + column;
  }
  const std::string& text(std::size_t r, const std::string& column) const {
    return rows_[r].cells[columns_.at(column)];
  }
  // A finite number in (low, high]: times and sizes are positive.
  double number(std::size_t r, const std::string& column, double low, double high, const char* allowed) const {
    const std::string& s = text(r, column);
    if (const std::optional<double> v = detail::decimal_cell(s, low, high)) return *v;
    throw InputError(path_, where(r, column), s, allowed);
  }

 private:
  struct Row {
    int line;
    std::vector<std::string> cells;
  };
  std::string path_;
  std::map<std::string, std::size_t> columns_;
  std::vector<Row> rows_;
};

constexpr double kMaxMs = 1e9;        // a kernel of over 11 days is no measurement
constexpr double kMaxGflop = 1e12;
constexpr double kMaxBytes = 1e18;
constexpr double kMaxCount = 1e9;     // batch, heads, tokens, head dim
constexpr const char* kPositiveMs = "a number of milliseconds above 0 and at most 1e9";

// An efficiency above the peak is a mistyped peak or a broken timing, and
// one under limits::kMinEfficiency a broken timing or a wrong unit: neither
// is a measurement to build on.
void check_fraction(double f, const std::string& file, const std::string& what) {
  if (!(f >= limits::kMinEfficiency && f <= 1))
    throw InputError(file, what, std::to_string(f),
                     "a fraction of the device's peak from " + detail::number_text(limits::kMinEfficiency) +
                         " to 1: is --base the GPU that was measured, and are the times in milliseconds?");
}

void read_gemm(const std::string& path, const DeviceSpec& d, DeviceMeasurements& out) {
  const MeasurementTable t(path, {"dtype", "role", "gflop", "ms"});
  const std::string dtype = d.has_bf16 ? "bf16" : "fp16";
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> decades;  // decade -> (gflop, efficiency)
  std::set<std::string> other_dtypes;  // what the table has instead, for the error below
  // The types scripts/device/gemm_sweep.cu times: a row of any other is
  // a typo, not a measurement to leave out unsaid.
  static const std::set<std::string> kDtypes = {"bf16", "fp16", "fp32", "fp8", "tf32"};
  const bool shaped = t.has("m") && t.has("n") && t.has("k");
  // One row per product (type, role and its shape, or without m, n and k
  // its size): a second, three times slower, had shifted the curve
  // without a word.
  std::map<std::string, std::size_t> row_of;
  for (std::size_t r = 0; r < t.size(); ++r) {
    const std::string& row_dtype = t.text(r, "dtype");
    const std::string product =
        row_dtype + "," + t.text(r, "role") + "," +
        (shaped ? t.text(r, "m") + "," + t.text(r, "n") + "," + t.text(r, "k") : t.text(r, "gflop"));
    if (const auto [earlier, fresh] = row_of.emplace(product, r); !fresh)
      throw InputError(path, t.where(r, "role"), t.text(r, "role"),
                       "one row per product (type, role and " + std::string(shaped ? "m, n, k" : "gflop") + "; " +
                           t.where(earlier->second, "role") + " already times this one)");
    if (!kDtypes.count(row_dtype))
      throw InputError(path, t.where(r, "dtype"), row_dtype,
                       "one of the types scripts/device/gemm_sweep.cu times: " +
                           detail::names_with_hint({kDtypes.begin(), kDtypes.end()}, row_dtype));
    // Every row's size and time are checked, of the types not priced too:
    // a NaN or negative time is a broken file wherever it sits.
    const double gflop = t.number(r, "gflop", 0, kMaxGflop, "a GFLOP count above 0 and at most 1e12");
    const double ms = t.number(r, "ms", 0, kMaxMs, kPositiveMs);
    if (row_dtype != dtype) {
      other_dtypes.insert(row_dtype);
      continue;
    }
    if (shaped) {
      // A product's FLOPs are 2·m·n·k: a row whose gflop says otherwise
      // has one of them wrong, and its efficiency with it. The sweep
      // prints gflop to 6 decimals.
      auto dim = [&](const char* c) { return t.number(r, c, 0, kMaxCount, "a dimension above 0 and at most 1e9"); };
      const double product = 2 * dim("m") * dim("n") * dim("k") / 1e9;
      if (std::abs(gflop - product) > std::max(1e-6, 1e-3 * product))
        throw InputError(path, t.where(r, "gflop"), t.text(r, "gflop"),
                         "2·m·n·k / 1e9 = " + detail::number_text(product) + " GFLOP, from the row's own m, n and k");
    }
    // A role names the product: "square" (a square product, left out of
    // the transformer-shaped curve) or the linear it stands for, as
    // scripts/device/gemm_sweep.cu writes them (qkv_h4096_t1024_fwd) or by
    // hand (mlp_up). A name, not free text: a cell of spaces, other bytes
    // or pages of text is a broken row, not a GEMM to count.
    static const std::regex kRole("[A-Za-z0-9_.-]{1,64}");
    if (!std::regex_match(t.text(r, "role"), kRole))
      throw InputError(path, t.where(r, "role"), detail::shown_line(t.text(r, "role")),
                       "a name of 1 to 64 letters, digits, '_', '.' or '-': square, or the linear it times "
                       "(qkv_h4096_t1024_fwd)");
    const double efficiency = gflop * 1e9 / (ms * 1e-3) / (d.peak_tflops * 1e12);
    out.largest = std::max(out.largest, efficiency);
    if (gflop < 10 || t.text(r, "role") == "square") continue;
    auto& [sizes, efficiencies] = decades[static_cast<int>(std::floor(std::log10(gflop)))];
    sizes.push_back(gflop);
    efficiencies.push_back(efficiency);
  }
  // No row of the device's 16-bit type at all: a table of another GPU, or
  // of another spelling ("BF16"), not a broken timing.
  if (out.largest == 0) {
    const std::string found = detail::join_names({other_dtypes.begin(), other_dtypes.end()});
    throw InputError(path, "dtype", found.empty() ? "(no rows)" : found,
                     "rows of dtype " + dtype + ", the 16-bit type " + d.name +
                         " trains in (is --base the GPU that was measured?)");
  }
  check_fraction(out.largest, path, "largest " + dtype + " product's efficiency");
  for (const auto& [decade, v] : decades) {
    if (static_cast<int>(v.first.size()) < kMinProductsPerDecade) continue;
    out.gemm.push_back({median(v.first), median(v.second)});
    // Each decade is checked here, by the file it came from: a slip in
    // some rows (microseconds as milliseconds) once surfaced only as the
    // calibrated device's gemm_efficiency[0].
    check_fraction(out.gemm.back().efficiency, path,
                   "median efficiency of the " + dtype + " products of " + detail::number_text(std::pow(10.0, decade)) +
                       " to " + detail::number_text(std::pow(10.0, decade + 1)) + " GFLOP");
    out.gemm_products += static_cast<int>(v.first.size());
  }
  if (out.gemm.empty())
    throw InputError(path, "dtype", dtype,
                     "at least " + std::to_string(kMinProductsPerDecade) + " transformer-shaped " + dtype +
                         " products (role other than square) of one size decade from 10 GFLOP up");
  // The catalog's convention: the largest product at the top of the curve,
  // each decade's median relative to the largest decade's beneath it.
  const double top = out.gemm.back().efficiency;
  for (EfficiencyPoint& p : out.gemm) p.efficiency = std::min(1.0, p.efficiency * out.largest / top);
}

void read_attention(const std::string& path, const DeviceSpec& d, DeviceMeasurements& out) {
  const MeasurementTable t(
      path, {"backend", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "forward_ms", "backward_ms"});
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_backend;
  int priced_rows = 0;
  for (std::size_t r = 0; r < t.size(); ++r) {
    const std::string& backend = t.text(r, "backend");
    // The backends scripts/device/kernel_sweep.py times; "efficient"
    // (PyTorch's memory-efficient kernel) is no kernel the cost model
    // prices. Any other name is a typo, not a measurement to leave out
    // unsaid.
    static const std::set<std::string> kBackends = {"cudnn", "efficient", "flash"};
    if (!kBackends.count(backend))
      throw InputError(path, t.where(r, "backend"), backend,
                       "one of the backends scripts/device/kernel_sweep.py times: " +
                           detail::names_with_hint({kBackends.begin(), kBackends.end()}, backend));
    // Every row's shape and times are checked, of kernels or shapes not
    // priced too: a NaN or negative time is a broken file wherever it sits.
    auto count = [&](const char* c) { return t.number(r, c, 0, kMaxCount, "a count above 0 and at most 1e9"); };
    const double batch = count("batch"), heads = count("heads"), kv = count("kv_heads"), seq = count("seq"),
                 head_dim = count("head_dim");
    const std::string& causal = t.text(r, "causal");
    if (causal != "0" && causal != "1") throw InputError(path, t.where(r, "causal"), causal, "0 or 1");
    const double fwd = t.number(r, "forward_ms", 0, kMaxMs, kPositiveMs);
    const double bwd = t.number(r, "backward_ms", 0, kMaxMs, kPositiveMs);
    if (backend == "efficient") continue;
    ++priced_rows;
    if (causal != "1" || head_dim != 128 || seq < 2048 || kv != heads) continue;
    const double executed = 0.5 * 4 * batch * seq * seq * heads * head_dim;  // causal: half the dense count
    auto& [f, b] = by_backend[backend];
    f.push_back(executed / (fwd * 1e-3) / (d.peak_tflops * 1e12));
    b.push_back(kFusedAttentionBackwardRatio * executed / (bwd * 1e-3) / (d.peak_tflops * 1e12));
  }
  // Rows of a priced kernel none of which has the shape the figures are
  // read at would leave the base device's figures in place unsaid.
  if (by_backend.empty() && priced_rows > 0)
    throw InputError(path, "rows", std::to_string(priced_rows) + " flash/cudnn rows, none of that shape",
                     "at least one causal (causal 1) row of head_dim 128, seq >= 2048 and kv_heads = heads: the "
                     "shape the attention figures are read at");
  for (const auto& [backend, v] : by_backend) {
    const double f = median(v.first), b = median(v.second);
    check_fraction(f, path, backend + " forward");
    check_fraction(b, path, backend + " backward");
    (backend == "flash" ? out.flash2_forward : out.flash3_forward) = f;
    (backend == "flash" ? out.flash2_backward : out.flash3_backward) = b;
  }
}

void read_elementwise(const std::string& path, const DeviceSpec& d, DeviceMeasurements& out) {
  const MeasurementTable t(path, {"kernel", "bytes", "ms"});
  std::vector<double> fractions;
  for (std::size_t r = 0; r < t.size(); ++r) {
    const double bytes = t.number(r, "bytes", 0, kMaxBytes, "a byte count above 0 and at most 1e18");
    fractions.push_back(bytes / (t.number(r, "ms", 0, kMaxMs, kPositiveMs) * 1e-3) / (d.hbm_GBps * 1e9));
  }
  if (fractions.empty()) return;
  out.memory_efficiency = median(fractions);
  check_fraction(out.memory_efficiency, path, "median fraction of hbm_GBps");
}

}  // namespace

DeviceMeasurements read_device_measurements(const std::string& folder, const DeviceSpec& device) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError(folder, "", folder, "a folder written by scripts/device/measure.sh (gemm.csv, attention.csv, "
                                         "elementwise.csv)");
  DeviceMeasurements m;
  read_gemm((fs::path(folder) / "gemm.csv").string(), device, m);
  for (const auto& [file, read] : {std::pair{"attention.csv", &read_attention}, std::pair{"elementwise.csv", &read_elementwise}}) {
    const fs::path path = fs::path(folder) / file;
    if (fs::exists(path, ec)) read(path.string(), device, m);
  }
  return m;
}

DeviceSpec calibrated_device(const DeviceSpec& base, const DeviceMeasurements& measured, const std::string& name) {
  DeviceSpec d = base;
  d.name = name;
  const double share = training_over_isolated();
  d.gemm_efficiency = measured_gemm_curve(measured.gemm, base.gemm_efficiency);
  if (measured.flash2_forward > 0) {
    d.attention_forward_efficiency = measured.flash2_forward * share;
    d.attention_backward_efficiency = measured.flash2_backward * share;
  }
  if (measured.flash3_forward > 0) {
    d.flash3_forward_efficiency = measured.flash3_forward * share;
    d.flash3_backward_efficiency = measured.flash3_backward * share;
  }
  if (measured.memory_efficiency > 0) d.memory_efficiency = measured.memory_efficiency;
  check_device(d, "calibrated device " + name);
  return d;
}

void write_device_file(const DeviceSpec& device, const std::string& path) {
  write_file_atomically(path, detail::yaml_document([&](detail::DocumentWriter& out) { detail::write_device(out, device); }));
}

}  // namespace autohaap
