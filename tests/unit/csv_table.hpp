// A small CSV reader for the published measurements under tests/data: a
// header row, then one row per record; cells may be double-quoted (with ""
// for a quote inside). Rows come back as column-name -> text maps.
#pragma once

#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace autohaap::test_data {

using CsvRow = std::map<std::string, std::string>;

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// Every row of `file` (a path under tests/data), keyed by the header.
inline std::vector<CsvRow> read_csv(const std::string& file) {
  std::ifstream in(std::string(AUTOHAAP_TEST_DATA_DIR) + "/" + file);
  if (!in) throw std::runtime_error("cannot read tests/data/" + file);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_csv_line(line);
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = split_csv_line(line);
    if (cells.size() != header.size())
      throw std::runtime_error("tests/data/" + file + ": a row with " + std::to_string(cells.size()) +
                               " cells under a header of " + std::to_string(header.size()));
    CsvRow row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace autohaap::test_data
