#include "autohaap/batch/summary.hpp"

#include "../io/rapidjson.hpp"  // rapidjson as cereal configures it

#include <cstdio>
#include <filesystem>

#include "autohaap/batch/fingerprint.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/file_lock.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSummaryFormat = "autohaap-batch-summary/1";

// RFC 4180: quote a field holding a comma, quote or line break; double quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

bool has_plan(const EntryResult& r) { return r.outcome == EntryStatus::found; }

}  // namespace

std::size_t BatchSummary::count(EntryStatus status) const {
  std::size_t n = 0;
  for (const auto& r : rows) n += r.status == status;
  return n;
}

std::string plan_path(const std::string& out_dir, const std::string& entry) {
  return (fs::path(out_dir) / (entry + ".json")).string();
}

std::string result_path(const std::string& out_dir, const std::string& entry) {
  return (fs::path(out_dir) / "results" / (entry + ".json")).string();
}

BatchSummary rebuild_summary(const Manifest& manifest, const std::string& out_dir,
                             const std::vector<std::size_t>& running) {
  BatchSummary s;
  s.manifest_name = manifest.name;
  s.manifest_path = manifest.path;
  std::vector<bool> runs_now(manifest.entries.size(), false);
  for (std::size_t i : running) runs_now.at(i) = true;
  FileLock lock((fs::path(out_dir) / ".summary.lock").string(), FileLock::Mode::exclusive);
  for (std::size_t i = 0; i < manifest.entries.size(); ++i) {
    const BatchEntry& e = manifest.entries[i];
    const std::string path = result_path(out_dir, e.name);
    std::string refused;
    auto r = runs_now[i] ? std::nullopt : read_entry_result(path, &refused);
    // A result made for other inputs than the entry has now (a model file
    // edited, the run that would search it again interrupted before it, or
    // another shard's) is no answer for it: the row is pending, and says
    // why. It had kept its old status and time as current.
    const bool stale = r && r->name == e.name && r->input_fingerprint != input_fingerprint(e.problem, manifest.options);
    if (stale) refused = "made for other inputs (a file it reads changed since); the entry runs again";
    if (!r || r->name != e.name || stale) {
      r = EntryResult{};
      r->name = e.name;
      r->model = e.model;
      r->cluster = e.cluster;
      r->training = e.training;
      // A damaged or stale result file reads as not run (its entry is
      // searched again next time); the row says so instead of hiding it.
      if (!refused.empty())
        r->error = "result file " + path + " refused: " + refused + (stale ? "" : "; the entry runs again");
    }
    s.rows.push_back(*r);
  }
  write_file_atomically((fs::path(out_dir) / "summary.csv").string(), summary_csv(s));
  write_file_atomically((fs::path(out_dir) / "summary.json").string(), summary_json(s));
  return s;
}

std::string summary_csv(const BatchSummary& s) {
  std::string out = "name,model,cluster,training,status,iteration_time_s,tokens_per_s,mfu,gpus,stages,wall_s,error\n";
  for (const EntryResult& r : s.rows) {
    const bool plan = has_plan(r);
    out += csv_field(r.name) + ',' + csv_field(r.model) + ',' + csv_field(r.cluster) + ',' + csv_field(r.training) +
           ',' + to_string(r.status) + ',' + (plan ? fmt("%.6g", r.iteration_time_s) : "") + ',' +
           (plan ? fmt("%.0f", r.tokens_per_s) : "") + ',' + (plan ? fmt("%.4f", r.mfu) : "") + ',' +
           (plan ? std::to_string(r.gpus) : "") + ',' + (plan ? std::to_string(r.stages) : "") + ',' +
           (r.status == EntryStatus::pending ? "" : fmt("%.3f", r.wall_s)) + ',' + csv_field(r.error) + '\n';
  }
  return out;
}

std::string summary_json(const BatchSummary& s) {
  rj::StringBuffer buffer;
  rj::PrettyWriter<rj::StringBuffer> w(buffer);
  w.SetIndent(' ', 2);
  auto key = [&w](const char* k) { w.Key(k); };
  auto str = [&w](const std::string& v) { w.String(v.c_str(), static_cast<rj::SizeType>(v.size())); };
  w.StartObject();
  key("format"); str(kSummaryFormat);
  key("manifest"); str(s.manifest_name);
  key("manifest_path"); str(s.manifest_path);
  key("counts");
  w.StartObject();
  for (EntryStatus st : {EntryStatus::found, EntryStatus::infeasible, EntryStatus::failed, EntryStatus::skipped,
                         EntryStatus::pending}) {
    key(to_string(st));
    w.Uint64(s.count(st));
  }
  w.EndObject();
  key("entries");
  w.StartArray();
  for (const EntryResult& r : s.rows) {
    w.StartObject();
    key("name"); str(r.name);
    key("model"); str(r.model);
    key("cluster"); str(r.cluster);
    key("training"); str(r.training);
    key("status"); str(to_string(r.status));
    key("outcome"); str(to_string(r.outcome));
    if (has_plan(r)) {
      key("iteration_time_s"); w.Double(r.iteration_time_s);
      key("tokens_per_s"); w.Double(r.tokens_per_s);
      key("mfu"); w.Double(r.mfu);
      key("gpus"); w.Int(r.gpus);
      key("stages"); w.Int(r.stages);
      key("plan_file"); str(r.plan_file);
    }
    key("wall_s"); w.Double(r.wall_s);
    key("error"); str(r.error);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace autohaap
