// The cells of one line of a plain CSV file (no quoting: the tables this
// project reads — measured profiles, device measurements — hold names and
// numbers only), each trimmed of spaces and a carriage return; a trailing
// comma gives a last empty cell.
//
// Internal to src/io. Cost: linear in the line.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace autohaap::detail {

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\r')) cell.pop_back();
    while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
    cells.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

}  // namespace autohaap::detail
