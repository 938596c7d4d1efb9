// Reading plain CSV files. The cells of one line of a plain CSV file (no
// quoting: the tables this project reads — measured profiles, device
// measurements — hold names and numbers only), each trimmed of spaces and
// a carriage return; a trailing comma gives a last empty cell. Numbers in
// decimal only.
//
// Internal to src/io. Cost: linear in the line.
#pragma once

#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autohaap/io/yaml_value.hpp"

namespace autohaap::detail {

// A CSV file's text without the UTF-8 byte-order mark spreadsheet programs
// put first when they save "CSV UTF-8": invisible in a message, it made a
// correct header read as another.
inline std::string without_byte_order_mark(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  return text;
}

// A line as a message shows it: without the carriage return of a CRLF file.
inline std::string shown_line(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

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

// A cell's number, written in decimal (yaml_value.hpp is_decimal_number:
// std::stod alone reads `0x10` as 16 and `0x1p1` as 2), within
// (low, high] and so finite; none otherwise.
inline std::optional<double> decimal_cell(const std::string& cell, double low, double high) {
  if (!is_decimal_number(cell)) return std::nullopt;
  try {
    std::size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size() && v > low && v <= high) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace autohaap::detail
