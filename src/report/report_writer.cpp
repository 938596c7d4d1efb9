#include "autohaap/report/report_writer.hpp"

#include <algorithm>
#include <cctype>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/report/html_report.hpp"
#include "autohaap/report/svg_report.hpp"

namespace autohaap {

ReportFormat report_format_for(const std::string& path, const std::string& flag) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  std::string ext = (dot == std::string::npos || (slash != std::string::npos && dot < slash)) ? "" : path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".svg") return ReportFormat::svg;
  if (ext == ".html" || ext == ".htm") return ReportFormat::html;
  const char* allowed = ".svg, .html or .htm";
  if (!flag.empty()) throw InputError("command line", flag, path, std::string("a file name ending ") + allowed);
  throw InputError(path, "report file extension", ext.empty() ? "(none)" : ext, allowed);
}

void write_report(const CostModel& model, const Plan& plan, const std::string& path,
                  const std::vector<ComparedPlan>& compared) {
  // The format is checked before any work, so a typo costs nothing.
  const ReportFormat format = report_format_for(path);
  write_file_atomically(path, format == ReportFormat::svg ? render_svg_report(model, plan)
                                                          : render_html_report(model, plan, compared));
}

}  // namespace autohaap
