#include "autohaap/batch/entry_result.hpp"

#include "../io/json_input.hpp"  // first: rapidjson as cereal configures it

#include <cereal/types/string.hpp>

#include <array>
#include <filesystem>
#include <optional>
#include <sstream>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"

namespace autohaap {
namespace {

constexpr const char* kResultFormat = "autohaap-batch-result/1";

constexpr std::array<EntryStatus, 5> kStatuses = {EntryStatus::found, EntryStatus::infeasible, EntryStatus::failed,
                                                  EntryStatus::skipped, EntryStatus::pending};

// One list of fields for both directions, so the writer and the reader
// cannot drift apart. Statuses travel as their names (`status`, `outcome`),
// so the files read well and survive a reordering of the enum.
template <class Archive>
void fields(Archive& ar, EntryResult& r, std::string& format, std::string& status, std::string& outcome) {
  ar(cereal::make_nvp("format", format), cereal::make_nvp("name", r.name), cereal::make_nvp("model", r.model),
     cereal::make_nvp("cluster", r.cluster), cereal::make_nvp("training", r.training),
     cereal::make_nvp("status", status), cereal::make_nvp("outcome", outcome),
     cereal::make_nvp("input_fingerprint", r.input_fingerprint),
     cereal::make_nvp("iteration_time_s", r.iteration_time_s), cereal::make_nvp("tokens_per_s", r.tokens_per_s),
     cereal::make_nvp("mfu", r.mfu), cereal::make_nvp("gpus", r.gpus), cereal::make_nvp("stages", r.stages),
     cereal::make_nvp("wall_s", r.wall_s), cereal::make_nvp("error", r.error),
     cereal::make_nvp("plan_file", r.plan_file), cereal::make_nvp("cache_hits", r.cache_hits),
     cereal::make_nvp("cache_misses", r.cache_misses), cereal::make_nvp("tool_version", r.tool_version));
}

// Which field of a result document has the wrong JSON type, by the field
// list itself (a default result written out): cereal says only
// "IsNumber()". Nothing when every field it has is of the written type.
std::optional<std::string> mistyped_field(const std::string& text) {
  rj::Document doc, reference;
  try {
    parse_json(text, "", doc);
    parse_json(entry_result_to_json(EntryResult{}), "", reference);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!doc.IsObject()) return std::nullopt;
  for (auto m = reference.MemberBegin(); m != reference.MemberEnd(); ++m) {
    const auto it = doc.FindMember(m->name);
    if (it == doc.MemberEnd()) continue;
    const bool number = m->value.IsNumber();
    if (number ? it->value.IsNumber() : it->value.IsString()) continue;
    rj::StringBuffer shown;
    rj::Writer<rj::StringBuffer> w(shown);
    it->value.Accept(w);
    std::string value(shown.GetString(), shown.GetSize());
    if (value.size() > 40) value = value.substr(0, 40) + "...";
    return std::string("'") + m->name.GetString() + "': got " + value + "; allowed: " +
           (number ? "a number" : "a string");
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(EntryStatus status) {
  switch (status) {
    case EntryStatus::found: return "found";
    case EntryStatus::infeasible: return "infeasible";
    case EntryStatus::failed: return "failed";
    case EntryStatus::skipped: return "skipped";
    case EntryStatus::pending: return "pending";
  }
  return "?";
}

std::optional<EntryStatus> parse_entry_status(const std::string& name) {
  for (EntryStatus s : kStatuses)
    if (name == to_string(s)) return s;
  return std::nullopt;
}

std::string entry_result_to_json(const EntryResult& result) {
  EntryResult r = result;
  std::string format = kResultFormat, status = to_string(r.status), outcome = to_string(r.outcome);
  std::ostringstream os;
  {
    cereal::JSONOutputArchive ar(os);
    fields(ar, r, format, status, outcome);
  }
  return os.str() + "\n";
}

std::optional<EntryResult> entry_result_from_json(const std::string& text, std::string* why) {
  auto refuse = [why](const std::string& reason) -> std::optional<EntryResult> {
    if (why) *why = reason;
    return std::nullopt;
  };
  EntryResult r;
  std::string format, status, outcome;
  try {
    std::istringstream is(checked_json(text, ""));
    cereal::JSONInputArchive ar(is);
    fields(ar, r, format, status, outcome);
  } catch (const InputError& e) {
    return refuse(e.value());  // not JSON, nested too deep, a number out of range
  } catch (const std::exception& e) {
    // cereal's error, which names no field: the first of the wrong type.
    const auto field = mistyped_field(text);
    return refuse(std::string("not a result document (") + (field ? *field : e.what()) + ")");
  }
  if (format != kResultFormat) return refuse("format '" + format + "', not " + kResultFormat);
  const auto s = parse_entry_status(status);
  const auto o = parse_entry_status(outcome);
  if (!s || !o) return refuse("unknown status '" + (s ? outcome : status) + "'");
  r.status = *s;
  r.outcome = *o;
  return r;
}

std::optional<EntryResult> read_entry_result(const std::string& path, std::string* why) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    return entry_result_from_json(read_file(path), why);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

}  // namespace autohaap
