#include "autohaap/io/profile_loader.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "csv_cells.hpp"
#include "name_list.hpp"

namespace autohaap {

using detail::split_csv_line;

void add_profile_csv(ProfileTable& table, const std::string& path) {
  const std::string text = detail::without_byte_order_mark(read_file(path));
  std::istringstream in(text);
  std::string line;
  // Six columns, then optionally `layer` and `hidden` (the model's hidden
  // size the row measured, checked against the model), in either order.
  constexpr const char* kHeader = "device,op,tp,micro_batch,seq_len,latency_ms[,layer][,hidden]";
  if (!std::getline(in, line)) throw InputError(path, "header", "(empty file)", kHeader);
  const std::vector<std::string> header = split_csv_line(line);
  const std::vector<std::string> expected = {"device", "op", "tp", "micro_batch", "seq_len", "latency_ms"};
  int layer_column = -1, hidden_column = -1;
  bool header_ok = header.size() >= expected.size() && header.size() <= expected.size() + 2 &&
                   std::equal(expected.begin(), expected.end(), header.begin());
  for (std::size_t i = expected.size(); header_ok && i < header.size(); ++i) {
    int* column = header[i] == "layer" ? &layer_column : header[i] == "hidden" ? &hidden_column : nullptr;
    header_ok = column != nullptr && *column < 0;
    if (header_ok) *column = static_cast<int>(i);
  }
  if (!header_ok) throw InputError(path, "header", detail::shown_line(line), kHeader);
  int row = 1;
  std::map<ProfileKey, int> row_of;  // the row that gave each key
  while (std::getline(in, line)) {
    ++row;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> c = split_csv_line(line);
    const std::string where = "row " + std::to_string(row);
    if (c.size() != header.size() && !(c.size() == expected.size() && header.size() > expected.size())) {
      throw InputError(path, where, line, std::to_string(header.size()) + " comma-separated cells");
    }
    auto integer = [&](int col, int min) {
      int v = 0;
      const std::string& s = c[col];
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || v < min) {
        throw InputError(path, where + "." + header[col], s,
                         "an integer from " + std::to_string(min) + " to 2147483647, written in decimal");
      }
      return v;
    };
    ProfileKey key;
    key.device = c[0];
    // Which devices it may name depends on the cluster (a device file's own
    // name too): check_profile_fits.
    if (key.device.empty()) throw InputError(path, where + ".device", key.device, "a device name");
    key.op = c[1];
    if (!is_profile_op(key.op)) {
      std::string allowed;
      for (const char* op : kProfileOps) allowed += std::string(allowed.empty() ? "" : " ") + op;
      throw InputError(path, where + ".op", key.op, allowed + ", optionally with _backward");
    }
    key.tp = integer(2, 1);
    key.micro_batch = integer(3, 1);
    key.seq_len = integer(4, 1);
    // Not inf, not nan: a latency the cost model can add up.
    const std::optional<double> latency = detail::decimal_cell(c[5], 0, limits::kMaxOpLatencyMs);
    if (!latency)
      throw InputError(path, where + ".latency_ms", c[5],
                       "a decimal number of milliseconds above 0 and at most " +
                           std::to_string(static_cast<long long>(limits::kMaxOpLatencyMs)));
    const double ms = *latency;
    auto given = [&](int column) { return column >= 0 && static_cast<std::size_t>(column) < c.size() && !c[column].empty(); };
    key.layer = given(layer_column) ? (c[layer_column] == "-1" ? -1 : integer(layer_column, 0)) : -1;
    if (given(hidden_column)) table.state_hidden(integer(hidden_column, 1), where + ".hidden");
    if (const auto [earlier, fresh] = row_of.emplace(key, row); !fresh)
      throw InputError(path, where, line,
                       "one row per device, op, tp, micro_batch, seq_len and layer (row " +
                           std::to_string(earlier->second) + " already gave this one)");
    table.add(key, ms * 1e-3);
  }
  if (row_of.empty()) throw InputError(path, "rows", "(none)", "at least one measurement row after the header");
  // A whole layer's backward is read beside its forward (cost_model.cpp,
  // work_time): alone, it was left out without a word while its ratio
  // to the analytic time was printed as a correction.
  for (const auto& [key, row] : row_of) {
    if (key.op != "layer_backward") continue;
    ProfileKey forward = key;
    forward.op = "layer";
    if (!row_of.count(forward))
      throw InputError(path, "row " + std::to_string(row) + ".op", key.op,
                       "a layer_backward row beside the layer row of its device, tp, micro_batch, seq_len and layer "
                       "(the forward it is the backward of)");
  }
}

void check_profile_fits(const ProfileTable& table, const Problem& problem, const std::string& path) {
  bool at_seq_len = false;
  std::set<std::string> cluster_devices;
  for (const NodeGroup& g : problem.cluster.groups) cluster_devices.insert(g.device.name);
  // A row that states its model's hidden size measured that model only.
  for (const auto& [hidden, where] : table.stated_hidden())
    if (hidden != problem.model.hidden)
      throw InputError(path, where, std::to_string(hidden),
                       "the hidden size of " + problem.model.name + ", " + std::to_string(problem.model.hidden) +
                           " (this row measured another model)");
  for (const auto& [key, latency] : table.entries()) {
    (void)latency;
    // A catalog device, or one the cluster names (a device file's, as
    // `device --measured` writes them; Metis profiles take those too).
    if (!is_catalog_device(key.device) && !cluster_devices.count(key.device))
      throw InputError(path, "device", key.device,
                       "a catalog device name or one of the cluster's devices: " +
                           detail::join_names({cluster_devices.begin(), cluster_devices.end()}));
    if (key.layer >= problem.model.layers)
      throw InputError(path, "layer", std::to_string(key.layer),
                       "a layer index of " + problem.model.name + ": 0 to " + std::to_string(problem.model.layers - 1) +
                           ", or -1 (every layer)");
    at_seq_len = at_seq_len || key.seq_len == problem.seq_len();
    // A row at a tensor-parallel degree the model cannot run measured
    // another model: its ratio to the analytic time would correct this
    // one's stages with a figure of nothing they run.
    if (const auto v = stage_violation(problem.model, problem.seq_len(), problem.training.sequence_parallel, nullptr,
                                         StageDegrees{key.tp, 1, 1}, 1);
        v && v->rule == StageRule::tp_not_dividing_heads)
      throw InputError(path, "tp", std::to_string(key.tp) + " (" + key.device + ", " + key.op + ")",
                       "a tensor-parallel degree " + problem.model.name + " can run: " + v->allowed);
  }
  if (!at_seq_len)
    throw InputError(path, "seq_len", "no row at " + std::to_string(problem.seq_len()),
                     "rows measured at the training's sequence length, " + std::to_string(problem.seq_len()) +
                         " tokens (the others can time nothing here)");
}

void check_profile_serves_cluster(const ProfileTable& table, const Problem& problem, const std::string& path) {
  std::set<std::string> cluster_devices, measured;
  for (const NodeGroup& g : problem.cluster.groups) cluster_devices.insert(g.device.name);
  for (const auto& [key, latency] : table.entries()) measured.insert(key.device);
  if (table.empty() || std::any_of(cluster_devices.begin(), cluster_devices.end(),
                                   [&](const std::string& d) { return table.measures_device(d); }))
    return;
  throw InputError(path, "device", detail::join_names({measured.begin(), measured.end()}),
                   "measurements of at least one of the cluster's devices: " +
                       detail::join_names({cluster_devices.begin(), cluster_devices.end()}));
}

ProfileTable load_profile_csv(const std::string& path) {
  ProfileTable t;
  add_profile_csv(t, path);
  return t;
}

}  // namespace autohaap
