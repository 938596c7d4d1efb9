#include "autohaap/io/plan_io.hpp"

#include "json_input.hpp"
#include "rapidjson.hpp"  // rapidjson as cereal configures it

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>
#include <tuple>
#include <vector>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/io/yaml_value.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {
namespace {

constexpr const char* kMissing = "<missing>";

// The keys each mapping of a plan document may hold. A key outside these is
// a typo or a file of another kind, and is rejected rather than ignored.
using KeyList = std::vector<std::string_view>;
const KeyList kPlanKeys = {"format", "model", "cluster", "global_batch", "micro_batch_size",
                           "num_micro_batches", "vpp", "zero", "stages", "predicted", "search"};
const KeyList kStageKeys = {"device", "group", "first_gpu", "nodes", "gpus", "tp", "cp", "dp", "layers", "recompute"};
const KeyList kPredictedKeys = {"iteration_time_s", "tokens_per_s", "mfu", "hfu", "model_tflops_per_gpu",
                                "bubble_s", "stage_time_s", "stage_memory_GiB", "fits"};
const KeyList kSearchKeys = {"strategy", "evaluated", "pruned", "cache_hits", "cache_misses",
                             "wall_s", "ranks", "threads"};

bool known(const KeyList& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string known_keys(const KeyList& keys) {
  std::string s = "one of ";
  for (std::size_t i = 0; i < keys.size(); ++i) s += (i ? ", " : "") + std::string(keys[i]);
  return s;
}

std::string join_key(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string stage_key(std::size_t i, const char* key) {
  return "stages[" + std::to_string(i) + "]." + key;
}

// Error messages quote values; a whole mapping would drown the message.
std::string shorten(std::string s) {
  constexpr std::size_t kMax = 80;
  if (s.size() > kMax) {
    s.resize(kMax - 3);
    s += "...";
  }
  return s;
}

std::string layers_text(const StagePlan& s) {
  return "[" + std::to_string(s.layer_begin) + ", " + std::to_string(s.layer_end) + "]";
}

// How many nodes a stage's GPUs [first_gpu, first_gpu + gpus) touch; 0 when
// unknown.
int nodes_spanned(const StagePlan& s, int gpus_per_node) {
  if (gpus_per_node <= 0 || s.gpus <= 0 || s.first_gpu < 0) return 0;
  return (s.first_gpu + s.gpus - 1) / gpus_per_node - s.first_gpu / gpus_per_node + 1;
}

std::vector<int> stage_nodes(const Plan& plan, int gpus_per_node) {
  std::vector<int> nodes;
  if (gpus_per_node <= 0) return nodes;
  for (const auto& s : plan.stages) nodes.push_back(nodes_spanned(s, gpus_per_node));
  return nodes;
}

std::vector<int> stage_nodes(const Plan& plan, const ClusterSpec& cluster) {
  std::vector<int> nodes;
  for (const auto& s : plan.stages) {
    bool known_group = s.group >= 0 && s.group < static_cast<int>(cluster.groups.size());
    nodes.push_back(known_group ? nodes_spanned(s, cluster.groups[s.group].gpus_per_node) : 0);
  }
  return nodes;
}

// A plan that was never estimated has no stage times; one that did not come
// from a search has no strategy. Writing their zeros would read as results.
PlanSections sections_of(const Plan& plan) {
  return PlanSections{!plan.predicted.stage_time_s.empty(), !plan.search.strategy.empty()};
}

// ---------------------------------------------------------------- YAML out

// The shortest text that reads back as the same double, so a YAML round trip
// is exact without printing 17 digits for 0.1. Non-finite values use the
// YAML spellings, which yaml-cpp reads back.
std::string number_text(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, result.ptr);
}

// Names go out quoted when a YAML reader would otherwise take them for a
// number, a boolean or null (a cluster called "2024" or "yes"): our reader
// asks for strings, but scripts reading plan files with other parsers do not.
void emit_name(YAML::Emitter& out, const std::string& name) {
  bool ambiguous = false;
  try {
    const YAML::Node as_plain = YAML::Load(name);
    double number;
    bool flag;
    ambiguous = !as_plain.IsScalar() || YAML::convert<double>::decode(as_plain, number) ||
                YAML::convert<bool>::decode(as_plain, flag);
  } catch (const YAML::Exception&) {
    // Not valid as a plain scalar at all; the emitter quotes it by itself.
  }
  if (ambiguous && !name.empty()) out << YAML::DoubleQuoted;
  out << name;
}

void emit_numbers(YAML::Emitter& out, const std::vector<double>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (double v : values) out << number_text(v);
  out << YAML::EndSeq;
}

std::string yaml_text(const Plan& plan, const std::vector<int>& nodes) {
  const PlanSections sections = sections_of(plan);
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kPlanFormat;
  out << YAML::Key << "model" << YAML::Value;
  emit_name(out, plan.model);
  out << YAML::Key << "cluster" << YAML::Value;
  emit_name(out, plan.cluster);
  out << YAML::Key << "global_batch" << YAML::Value << plan.global_batch;
  out << YAML::Key << "micro_batch_size" << YAML::Value << plan.micro_batch_size;
  out << YAML::Key << "num_micro_batches" << YAML::Value << plan.num_micro_batches;
  out << YAML::Key << "vpp" << YAML::Value << plan.vpp;
  out << YAML::Key << "zero" << YAML::Value << plan.zero;

  out << YAML::Key << "stages" << YAML::Value << YAML::BeginSeq;
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& s = plan.stages[i];
    out << YAML::BeginMap;
    out << YAML::Key << "device" << YAML::Value;
    emit_name(out, s.device);
    out << YAML::Key << "group" << YAML::Value << s.group;
    out << YAML::Key << "first_gpu" << YAML::Value << s.first_gpu;
    if (i < nodes.size() && nodes[i] > 0) out << YAML::Key << "nodes" << YAML::Value << nodes[i];
    out << YAML::Key << "gpus" << YAML::Value << s.gpus;
    out << YAML::Key << "tp" << YAML::Value << s.tp;
    out << YAML::Key << "cp" << YAML::Value << s.cp;
    out << YAML::Key << "dp" << YAML::Value << s.dp;
    out << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::BeginSeq << s.layer_begin
        << s.layer_end << YAML::EndSeq;
    out << YAML::Key << "recompute" << YAML::Value << to_string(s.recompute);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;

  if (sections.predicted) {
    const PredictedPerformance& p = plan.predicted;
    out << YAML::Key << "predicted" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "iteration_time_s" << YAML::Value << number_text(p.iteration_time_s);
    out << YAML::Key << "tokens_per_s" << YAML::Value << number_text(p.tokens_per_s);
    out << YAML::Key << "mfu" << YAML::Value << number_text(p.mfu);
    out << YAML::Key << "hfu" << YAML::Value << number_text(p.hfu);
    out << YAML::Key << "model_tflops_per_gpu" << YAML::Value << number_text(p.model_tflops_per_gpu);
    out << YAML::Key << "bubble_s" << YAML::Value << number_text(p.bubble_s);
    out << YAML::Key << "stage_time_s" << YAML::Value;
    emit_numbers(out, p.stage_time_s);
    out << YAML::Key << "stage_memory_GiB" << YAML::Value;
    emit_numbers(out, p.stage_memory_GiB);
    out << YAML::Key << "fits" << YAML::Value << p.fits;
    out << YAML::EndMap;
  }
  if (sections.search) {
    const SearchStats& s = plan.search;
    out << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "strategy" << YAML::Value;
    emit_name(out, s.strategy);
    out << YAML::Key << "evaluated" << YAML::Value << static_cast<long long>(s.evaluated);
    out << YAML::Key << "pruned" << YAML::Value << static_cast<long long>(s.pruned);
    out << YAML::Key << "cache_hits" << YAML::Value << static_cast<long long>(s.cache_hits);
    out << YAML::Key << "cache_misses" << YAML::Value << static_cast<long long>(s.cache_misses);
    out << YAML::Key << "wall_s" << YAML::Value << number_text(s.wall_s);
    out << YAML::Key << "ranks" << YAML::Value << s.ranks;
    out << YAML::Key << "threads" << YAML::Value << s.threads;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// ---------------------------------------------------------------- JSON out

std::string json_text(const Plan& plan, const std::vector<int>& nodes) {
  std::ostringstream os;
  {
    // cereal's "precision" option caps decimal places, which would round
    // small numbers away; rapidjson's default (no cap) keeps the round trip
    // exact. Two-space indent, as in the YAML form.
    using Options = cereal::JSONOutputArchive::Options;
    cereal::JSONOutputArchive ar(
        os, Options(rj::Writer<rj::StringBuffer>::kDefaultMaxDecimalPlaces, Options::IndentChar::space, 2));
    save_plan(ar, plan, sections_of(plan), nodes);
  }  // the archive closes the document when it goes out of scope
  return os.str() + "\n";
}

// ---------------------------------------------------------------- YAML in

class YamlPlanReader {
 public:
  explicit YamlPlanReader(const std::string& file) : file_(file) {}

  Plan read(const std::string& text) const {
    const YAML::Node loaded = parse_yaml(text, file_);
    // const: operator[] on a mutable node may add the key it looks for.
    const YAML::Node root = loaded;
    if (!root.IsDefined() || root.IsNull())
      throw InputError(file_, "", "an empty document", std::string("a plan mapping (format: ") + kPlanFormat + ")");
    require_map(root, "");

    Plan plan;
    const auto format = read<std::string>(root, "", "format");
    if (format != kPlanFormat) throw InputError(file_, "format", format, kPlanFormat);
    plan.model = read<std::string>(root, "", "model");
    plan.cluster = read<std::string>(root, "", "cluster");
    plan.global_batch = read<int>(root, "", "global_batch");
    plan.micro_batch_size = read<int>(root, "", "micro_batch_size");
    plan.num_micro_batches = read<int>(root, "", "num_micro_batches");
    plan.vpp = read_optional<int>(root, "", "vpp", 1);
    plan.zero = read<int>(root, "", "zero");

    const YAML::Node stages = required(root, "", "stages", "a list of stages");
    if (!stages.IsSequence()) throw InputError(file_, "stages", render(stages), "a list of stages");
    for (std::size_t i = 0; i < stages.size(); ++i)
      plan.stages.push_back(read_stage(stages[i], "stages[" + std::to_string(i) + "]"));

    if (const YAML::Node p = root["predicted"]) plan.predicted = read_predicted(p, "predicted");
    if (const YAML::Node s = root["search"]) plan.search = read_search(s, "search");

    check_keys(root, "", kPlanKeys);
    for (std::size_t i = 0; i < stages.size(); ++i)
      check_keys(stages[i], "stages[" + std::to_string(i) + "]", kStageKeys);
    if (root["predicted"]) check_keys(root["predicted"], "predicted", kPredictedKeys);
    if (root["search"]) check_keys(root["search"], "search", kSearchKeys);
    return plan;
  }

 private:
  static std::string render(const YAML::Node& node) {
    if (!node.IsDefined()) return kMissing;
    if (node.IsNull()) return "null";
    if (node.IsScalar()) return shorten(node.Scalar());
    YAML::Emitter out;
    out << YAML::Flow << node;
    return shorten(out.c_str());
  }

  void require_map(const YAML::Node& node, const std::string& path) const {
    if (!node.IsMap()) throw InputError(file_, path, render(node), "a mapping");
  }

  YAML::Node required(const YAML::Node& map, const std::string& path, const char* key, const char* kind) const {
    const YAML::Node child = map[key];
    if (!child.IsDefined())
      throw InputError(file_, join_key(path, key), kMissing, std::string("a value for this required key: ") + kind);
    return child;
  }

  // A scalar of type T. Quoted scalars are strings: `tp: "4"` is refused as
  // an integer, as it is in JSON, so both formats accept the same documents.
  template <class T>
  T convert(const YAML::Node& node, const std::string& path) const {
    T value{};
    bool quoted = node.Tag() == "!";
    bool ok = node.IsScalar() && (std::is_same_v<T, std::string> || !quoted) &&
              YAML::convert<T>::decode(node, value);
    if (!ok) throw InputError(file_, path, render(node), serialization_detail::expected_kind<T>());
    return value;
  }

  template <class T>
  T read(const YAML::Node& map, const std::string& path, const char* key) const {
    return convert<T>(required(map, path, key, serialization_detail::expected_kind<T>()), join_key(path, key));
  }

  // A key added after the first plans were written; absent means `absent`.
  template <class T>
  T read_optional(const YAML::Node& map, const std::string& path, const char* key, T absent) const {
    const YAML::Node child = map[key];
    return child.IsDefined() ? convert<T>(child, join_key(path, key)) : absent;
  }

  template <class T>
  std::vector<T> read_list(const YAML::Node& map, const std::string& path, const char* key) const {
    const std::string list_path = join_key(path, key);
    const YAML::Node node = required(map, path, key, serialization_detail::expected_kind<std::vector<T>>());
    if (!node.IsSequence())
      throw InputError(file_, list_path, render(node), serialization_detail::expected_kind<std::vector<T>>());
    std::vector<T> values;
    for (std::size_t i = 0; i < node.size(); ++i)
      values.push_back(convert<T>(node[i], list_path + "[" + std::to_string(i) + "]"));
    return values;
  }

  StagePlan read_stage(const YAML::Node& node, const std::string& path) const {
    if (!node.IsMap()) throw InputError(file_, path, render(node), "a mapping (one stage)");
    StagePlan s;
    s.device = read<std::string>(node, path, "device");
    s.group = read<int>(node, path, "group");
    s.first_gpu = read<int>(node, path, "first_gpu");
    s.gpus = read<int>(node, path, "gpus");
    s.tp = read<int>(node, path, "tp");
    s.cp = read_optional<int>(node, path, "cp", 1);
    s.dp = read<int>(node, path, "dp");
    const auto layers = read_list<int>(node, path, "layers");
    if (layers.size() != 2)
      throw InputError(file_, join_key(path, "layers"), render(node["layers"]), "[first, end): a list of 2 integers");
    s.layer_begin = layers[0];
    s.layer_end = layers[1];
    const auto recompute = read<std::string>(node, path, "recompute");
    const auto parsed = parse_recompute(recompute);
    if (!parsed) throw InputError(file_, join_key(path, "recompute"), recompute, kRecomputeNames);
    s.recompute = *parsed;
    return s;
  }

  PredictedPerformance read_predicted(const YAML::Node& node, const std::string& path) const {
    require_map(node, path);
    PredictedPerformance p;
    p.iteration_time_s = read<double>(node, path, "iteration_time_s");
    p.tokens_per_s = read<double>(node, path, "tokens_per_s");
    p.mfu = read<double>(node, path, "mfu");
    p.hfu = read<double>(node, path, "hfu");
    p.model_tflops_per_gpu = read<double>(node, path, "model_tflops_per_gpu");
    p.bubble_s = read<double>(node, path, "bubble_s");
    p.stage_time_s = read_list<double>(node, path, "stage_time_s");
    p.stage_memory_GiB = read_list<double>(node, path, "stage_memory_GiB");
    p.fits = read<bool>(node, path, "fits");
    return p;
  }

  SearchStats read_search(const YAML::Node& node, const std::string& path) const {
    require_map(node, path);
    SearchStats s;
    s.strategy = read<std::string>(node, path, "strategy");
    s.evaluated = read<long long>(node, path, "evaluated");
    s.pruned = read<long long>(node, path, "pruned");
    s.cache_hits = read<long long>(node, path, "cache_hits");
    s.cache_misses = read<long long>(node, path, "cache_misses");
    s.wall_s = read<double>(node, path, "wall_s");
    s.ranks = read<int>(node, path, "ranks");
    s.threads = read<int>(node, path, "threads");
    return s;
  }

  void check_keys(const YAML::Node& map, const std::string& path, const KeyList& keys) const {
    for (const auto& entry : map) {
      const std::string key = entry.first.Scalar();
      if (!known(keys, key)) throw InputError(file_, join_key(path, key), render(entry.second), known_keys(keys));
    }
  }

  const std::string& file_;
};

// ---------------------------------------------------------------- JSON in

std::string render(const rj::Value& value) {
  if (value.IsString()) return shorten(value.GetString());
  rj::StringBuffer buffer;
  rj::Writer<rj::StringBuffer> writer(buffer);
  value.Accept(writer);
  return shorten(buffer.GetString());
}

// The value at a key path such as "stages[2].tp", or null if there is none.
const rj::Value* find_json(const rj::Value& root, const std::string& path) {
  const rj::Value* v = &root;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
    } else if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string::npos) return nullptr;
      const unsigned long index = std::stoul(path.substr(i + 1, close - i - 1));
      if (!v->IsArray() || index >= v->Size()) return nullptr;
      v = &(*v)[static_cast<rj::SizeType>(index)];
      i = close + 1;
    } else {
      const std::size_t end = std::min(path.find_first_of(".[", i), path.size());
      const std::string key = path.substr(i, end - i);
      if (!v->IsObject()) return nullptr;
      const auto member = v->FindMember(key.c_str());
      if (member == v->MemberEnd()) return nullptr;
      v = &member->value;
      i = end;
    }
  }
  return v;
}

void check_json_keys(const rj::Value& object, const std::string& path, const KeyList& keys,
                     const std::string& file) {
  for (const auto& member : object.GetObject()) {
    const std::string key(member.name.GetString(), member.name.GetStringLength());
    if (!known(keys, key)) throw InputError(file, join_key(path, key), render(member.value), known_keys(keys));
  }
}

Plan read_json(const std::string& text, const std::string& file) {
  // Parsed here first, apart from cereal, for what the archive cannot tell:
  // where a syntax error is, which optional sections exist, and the value
  // behind a key the archive failed to read.
  rj::Document doc;
  const std::string checked = parse_json(text, file, doc);
  if (!doc.IsObject())
    throw InputError(file, "", render(doc), std::string("a JSON object (format: ") + kPlanFormat + ")");

  // Plans written before interleaving and context parallelism hold neither
  // `vpp` nor a stage's `cp`; they mean 1. Filled in here so the schema
  // (plan_serialization.hpp) stays one fixed layout.
  bool filled = false;
  auto fill = [&](rj::Value& object, const char* key) {
    if (!object.IsObject() || object.HasMember(key)) return;
    object.AddMember(rj::Value(key, doc.GetAllocator()), rj::Value(1), doc.GetAllocator());
    filled = true;
  };
  fill(doc, "vpp");
  if (doc.HasMember("stages") && doc["stages"].IsArray())
    for (rj::Value& stage : doc["stages"].GetArray()) fill(stage, "cp");
  std::string filled_text;
  if (filled) {
    rj::StringBuffer buffer;
    rj::Writer<rj::StringBuffer, rj::UTF8<>, rj::UTF8<>, rj::CrtAllocator, rj::kWriteNanAndInfFlag> writer(buffer);
    doc.Accept(writer);
    filled_text.assign(buffer.GetString(), buffer.GetSize());
  }

  Plan plan;
  const PlanSections sections{doc.HasMember("predicted"), doc.HasMember("search")};
  try {
    std::istringstream is(filled ? filled_text : checked);
    cereal::JSONInputArchive ar(is);
    load_plan(ar, plan, sections);
  } catch (const PlanFieldError& e) {
    if (e.value()) throw InputError(file, e.key_path(), *e.value(), e.allowed());
    const rj::Value* value = find_json(doc, e.key_path());
    if (!value) throw InputError(file, e.key_path(), kMissing, "a value for this required key: " + e.allowed());
    throw InputError(file, e.key_path(), render(*value), e.allowed());
  } catch (const cereal::Exception& e) {
    // Not expected once the document parsed; still bad input, not a crash.
    throw InputError(file, "", e.what(), "a plan document");
  }

  // The load succeeded, so the sections have the shapes the schema asks for.
  check_json_keys(doc, "", kPlanKeys, file);
  const rj::Value& stages = doc["stages"];
  for (rj::SizeType i = 0; i < stages.Size(); ++i)
    check_json_keys(stages[i], "stages[" + std::to_string(i) + "]", kStageKeys, file);
  if (sections.predicted) check_json_keys(doc["predicted"], "predicted", kPredictedKeys, file);
  if (sections.search) check_json_keys(doc["search"], "search", kSearchKeys, file);
  return plan;
}

}  // namespace

// ---------------------------------------------------------------- public

bool is_json_path(std::string_view path) {
  constexpr std::string_view kExt = ".json";
  if (path.size() < kExt.size()) return false;
  const auto tail = path.substr(path.size() - kExt.size());
  return std::equal(tail.begin(), tail.end(), kExt.begin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

Plan plan_from_string(const std::string& text, bool is_json, const std::string& file) {
  Plan plan = is_json ? read_json(text, file) : YamlPlanReader(file).read(text);
  check_plan(plan, file);
  return plan;
}

Plan read_plan(const std::string& path) {
  return plan_from_string(read_file(path), is_json_path(path), path);
}

std::string plan_to_yaml(const Plan& plan, int gpus_per_node_hint) {
  return yaml_text(plan, stage_nodes(plan, gpus_per_node_hint));
}

std::string plan_to_yaml(const Plan& plan, const ClusterSpec& cluster) {
  return yaml_text(plan, stage_nodes(plan, cluster));
}

std::string plan_to_json(const Plan& plan, int gpus_per_node_hint) {
  return json_text(plan, stage_nodes(plan, gpus_per_node_hint));
}

std::string plan_to_json(const Plan& plan, const ClusterSpec& cluster) {
  return json_text(plan, stage_nodes(plan, cluster));
}

void write_plan(const Plan& plan, const std::string& path, int gpus_per_node_hint) {
  write_file_atomically(path, is_json_path(path) ? plan_to_json(plan, gpus_per_node_hint)
                                                 : plan_to_yaml(plan, gpus_per_node_hint));
}

void write_plan(const Plan& plan, const std::string& path, const ClusterSpec& cluster) {
  write_file_atomically(path, is_json_path(path) ? plan_to_json(plan, cluster) : plan_to_yaml(plan, cluster));
}

void check_plan(const Plan& plan, const std::string& file) {
  auto at_least = [&](const std::string& key, long long value, long long min) {
    if (value < min) throw InputError(file, key, std::to_string(value), "an integer >= " + std::to_string(min));
  };
  // The same bounds as the specs' (io/spec_loader.hpp), so a plan read
  // without its specs (report, export) keeps every count in range.
  auto within = [&](const std::string& key, long long value, long long min, long long max) {
    if (value < min || value > max)
      throw InputError(file, key, std::to_string(value),
                       "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  };
  // A name is written back into JSON plans, whose readers end a string at
  // a NUL (io/json_input.hpp): one with a NUL would not read back.
  auto without_nul = [&](const std::string& key, const std::string& value, const std::string& what) {
    if (value.find('\0') == std::string::npos) return;
    std::string shown = value;
    std::replace(shown.begin(), shown.end(), '\0', '?');
    throw InputError(file, key, shown, what + " without NUL characters");
  };
  auto name = [&](const std::string& key, const std::string& value, const std::string& what) {
    if (value.empty()) throw InputError(file, key, "", what);
    without_nul(key, value, what);
  };
  name("model", plan.model, "a model name");
  name("cluster", plan.cluster, "a cluster name");
  within("global_batch", plan.global_batch, 1, limits::kMaxGlobalBatch);
  within("micro_batch_size", plan.micro_batch_size, 1, limits::kMaxGlobalBatch);
  within("num_micro_batches", plan.num_micro_batches, 1, limits::kMaxGlobalBatch);
  within("vpp", plan.vpp, 1, limits::kMaxLayers);
  if (plan.zero < 0 || plan.zero > 3) throw InputError(file, "zero", std::to_string(plan.zero), "0, 1, 2 or 3");
  if (plan.stages.empty()) throw InputError(file, "stages", "[]", "at least one stage");
  if (plan.stages.size() > static_cast<std::size_t>(limits::kMaxLayers))
    throw InputError(file, "stages", std::to_string(plan.stages.size()) + " stages",
                     "at most " + std::to_string(limits::kMaxLayers) + " (one layer each, at least)");

  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& s = plan.stages[i];
    name(stage_key(i, "device"), s.device, "a device name");
    within(stage_key(i, "group"), s.group, 0, limits::kMaxClusterGpus);
    within(stage_key(i, "first_gpu"), s.first_gpu, 0, limits::kMaxClusterGpus - 1);
    within(stage_key(i, "gpus"), s.gpus, 1, limits::kMaxClusterGpus);
    within(stage_key(i, "tp"), s.tp, 1, limits::kMaxClusterGpus);
    within(stage_key(i, "cp"), s.cp, 1, limits::kMaxClusterGpus);
    within(stage_key(i, "dp"), s.dp, 1, limits::kMaxClusterGpus);
    const long long product = static_cast<long long>(s.tp) * s.cp * s.dp;
    if (s.gpus != product)
      throw InputError(file, stage_key(i, "gpus"), std::to_string(s.gpus),
                       "tp * cp * dp = " + std::to_string(product));
    if (s.layer_begin < 0 || s.layer_begin >= s.layer_end || s.layer_end > limits::kMaxLayers)
      throw InputError(file, stage_key(i, "layers"), layers_text(s),
                       "[first, end) with 0 <= first < end <= " + std::to_string(limits::kMaxLayers));
  }

  const std::string stage_count = std::to_string(plan.stages.size());
  auto one_per_stage = [&](const char* key, std::size_t n) {
    if (n != 0 && n != plan.stages.size())
      throw InputError(file, key, std::to_string(n) + " entries", "one entry per stage (" + stage_count + ")");
  };
  one_per_stage("predicted.stage_time_s", plan.predicted.stage_time_s.size());
  one_per_stage("predicted.stage_memory_GiB", plan.predicted.stage_memory_GiB.size());

  const SearchStats& search = plan.search;
  without_nul("search.strategy", search.strategy, "a strategy name");
  at_least("search.evaluated", search.evaluated, 0);
  at_least("search.pruned", search.pruned, 0);
  at_least("search.cache_hits", search.cache_hits, 0);
  at_least("search.cache_misses", search.cache_misses, 0);
  if (!(search.wall_s >= 0)) throw InputError(file, "search.wall_s", number_text(search.wall_s), "a number >= 0");
  at_least("search.ranks", search.ranks, 1);
  at_least("search.threads", search.threads, 1);
}

void check_plan_against(const Plan& plan, const ModelSpec& model, const ClusterSpec& cluster,
                        const std::string& file) {
  check_plan(plan, file);
  if (plan.model != model.name)
    throw InputError(file, "model", plan.model, "'" + model.name + "' (the model given)");
  if (plan.cluster != cluster.name)
    throw InputError(file, "cluster", plan.cluster, "'" + cluster.name + "' (the cluster given)");
  const long long batch = static_cast<long long>(plan.micro_batch_size) * plan.num_micro_batches;
  if (batch != plan.global_batch)
    throw InputError(file, "global_batch", std::to_string(plan.global_batch),
                     "micro_batch_size * num_micro_batches = " + std::to_string(batch));

  struct GpuRange {
    int begin, end;
    std::size_t stage;
  };
  std::vector<std::vector<GpuRange>> used(cluster.groups.size());
  const int group_count = static_cast<int>(cluster.groups.size());
  int next_layer = 0;

  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& s = plan.stages[i];
    const std::string tp = std::to_string(s.tp);

    if (s.group >= group_count)
      throw InputError(file, stage_key(i, "group"), std::to_string(s.group),
                       "0.." + std::to_string(group_count - 1) + " (cluster '" + cluster.name + "' has " +
                           std::to_string(group_count) + " groups)");
    const NodeGroup& g = cluster.groups[s.group];
    const std::string group_name = "group " + std::to_string(s.group);
    if (s.device != g.device.name)
      throw InputError(file, stage_key(i, "device"), s.device, "'" + g.device.name + "' (the device of " + group_name + ")");

    const long long end_gpu = static_cast<long long>(s.first_gpu) + s.gpus;
    const std::string gpu_text = "GPUs " + std::to_string(s.first_gpu) + ".." + std::to_string(end_gpu - 1);
    if (end_gpu > g.gpus())
      throw InputError(file, stage_key(i, "first_gpu"), gpu_text,
                       "GPUs within 0.." + std::to_string(g.gpus() - 1) + " of " + group_name);

    // The stage rule (specs/parallel_rules.hpp): tp inside a node and over
    // the heads, cp over the sequence, dp over the micro-batch.
    const StageDegrees degrees{s.tp, s.cp, s.dp};
    if (const auto v = stage_violation(model, model.seq_len, &g, degrees, plan.micro_batch_size))
      throw InputError(file, stage_key(i, stage_field(v->rule)), std::to_string(stage_field_value(v->rule, degrees)),
                       v->allowed);
    // Ranks within a stage are ordered tensor-parallel first, then context-
    // parallel, then data-parallel (Megatron's order): tensor-parallel group
    // k holds GPUs first_gpu + k*tp .. + tp - 1.
    const int per_node = g.gpus_per_node;
    for (int k = 0; k < s.cp * s.dp; ++k) {
      const int begin = s.first_gpu + k * s.tp;
      if (begin / per_node != (begin + s.tp - 1) / per_node)
        throw InputError(file, stage_key(i, "first_gpu"), std::to_string(s.first_gpu),
                         "a first GPU that keeps each group of tp=" + tp + " GPUs inside one node of " +
                             std::to_string(per_node) + " GPUs");
    }

    if (s.layer_begin != next_layer)
      throw InputError(file, stage_key(i, "layers"), layers_text(s),
                       "[" + std::to_string(next_layer) + ", ...): " +
                           (i == 0 ? std::string("the first stage starts at layer 0")
                                   : "each stage starts where stages[" + std::to_string(i - 1) + "] ends"));
    if (s.layer_end > model.layers)
      throw InputError(file, stage_key(i, "layers"), layers_text(s),
                       "an end of at most " + std::to_string(model.layers) + " (the model's layers)");
    next_layer = s.layer_end;

    used[s.group].push_back({s.first_gpu, static_cast<int>(end_gpu), i});
  }
  if (next_layer != model.layers) {
    const std::size_t last = plan.stages.size() - 1;
    throw InputError(file, stage_key(last, "layers"), layers_text(plan.stages[last]),
                     "[..., " + std::to_string(model.layers) + "): the last stage ends at the model's last layer");
  }
  std::vector<int> stage_layers;
  for (const StagePlan& s : plan.stages) stage_layers.push_back(s.num_layers());
  const std::string vpp_rule = interleaving_violation(model, plan.vpp, stage_layers, plan.num_micro_batches);
  if (!vpp_rule.empty()) throw InputError(file, "vpp", std::to_string(plan.vpp), vpp_rule);

  for (std::size_t g = 0; g < used.size(); ++g) {
    auto& ranges = used[g];
    std::sort(ranges.begin(), ranges.end(),
              [](const GpuRange& a, const GpuRange& b) { return std::tie(a.begin, a.stage) < std::tie(b.begin, b.stage); });
    for (std::size_t k = 1; k < ranges.size(); ++k) {
      const GpuRange& a = ranges[k - 1];
      const GpuRange& b = ranges[k];
      if (b.begin >= a.end) continue;
      // Name the later stage, as a reader scanning the file would meet it.
      const GpuRange& later = a.stage > b.stage ? a : b;
      const GpuRange& earlier = a.stage > b.stage ? b : a;
      throw InputError(file, stage_key(later.stage, "first_gpu"),
                       "GPUs " + std::to_string(later.begin) + ".." + std::to_string(later.end - 1) + " of group " +
                           std::to_string(g),
                       "GPUs no other stage uses (stages[" + std::to_string(earlier.stage) + "] has " +
                           std::to_string(earlier.begin) + ".." + std::to_string(earlier.end - 1) + ")");
    }
  }
}

}  // namespace autohaap
