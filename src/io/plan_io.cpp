#include "autohaap/io/plan_io.hpp"

#include "json_input.hpp"
#include "rapidjson.hpp"  // rapidjson as cereal configures it

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <vector>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/io/yaml_value.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/specs/spec_fingerprint.hpp"
#include "autohaap/specs/training.hpp"
#include "document_writer.hpp"
#include "name_list.hpp"
#include "spec_writer.hpp"

namespace autohaap {

static_assert(kMaxPlanListItems == static_cast<std::size_t>(limits::kMaxLayers),
              "a plan lists at most one stage a layer");
namespace {

using detail::DocumentWriter;
using detail::number_text;
using serialization_detail::expected_kind;

constexpr const char* kMissing = "<missing>";

std::string stage_key(std::size_t i, const char* key) {
  return "stages[" + std::to_string(i) + "]." + key;
}

std::string set_key(std::size_t i, std::size_t k, const char* key) {
  return "stages[" + std::to_string(i) + "].replicas[" + std::to_string(k) + "]." + key;
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

std::vector<int> stage_nodes(const Plan& plan, const ClusterSpec& cluster) {
  std::vector<int> nodes;
  for (const auto& s : plan.stages) {
    bool known_group = s.group >= 0 && s.group < static_cast<int>(cluster.groups.size());
    nodes.push_back(known_group ? nodes_spanned(s, cluster.groups[s.group].gpus_per_node) : 0);
  }
  return nodes;
}

// One count for all groups; 0: the embedded cluster's, if any.
std::vector<int> stage_nodes(const Plan& plan, int gpus_per_node) {
  if (gpus_per_node <= 0 && plan.specs) return stage_nodes(plan, plan.specs->cluster);
  std::vector<int> nodes;
  if (gpus_per_node <= 0) return nodes;
  for (const auto& s : plan.stages) nodes.push_back(nodes_spanned(s, gpus_per_node));
  return nodes;
}

// ------------------------------------------------------------- writing

// The keys of `specs`: what each spec's fingerprint was when written (for
// people and scripts grouping plans by their problem; readers recompute
// them), then the specs in the form of their YAML files.
void write_specs(DocumentWriter& out, const PlanSpecs& s) {
  out.key("fingerprints");
  out.begin_map();
  out.key("model");
  out.value(spec_fingerprint(s.model));
  out.key("cluster");
  out.value(spec_fingerprint(s.cluster));
  out.key("training");
  out.value(spec_fingerprint(s.training));
  out.end_map();
  out.key("model");
  out.begin_map();
  detail::write_model(out, s.model);
  out.end_map();
  out.key("cluster");
  out.begin_map();
  detail::write_cluster(out, s.cluster);
  out.end_map();
  out.key("training");
  out.begin_map();
  detail::write_training(out, s.training);
  out.end_map();
}

// An optional list (StagePlan::chunks): written only with items, and read
// back refused when empty, so the file never says an empty list means
// something its absence does not.
template <class T>
constexpr bool is_list = requires(const T& t) {
  t.empty();
  t.front();
} && !std::is_same_v<T, std::string>;

// The schema visitor that writes a plan file (plan_schema.hpp): every key
// but the sections a plan does not have; each stage's node count where
// known.
class FileWriter {
 public:
  FileWriter(DocumentWriter& out, const std::vector<int>& nodes) : out_(out), nodes_(nodes) {}

  void tag(const char* key, const char* text) {
    out_.key(key);
    out_.value(std::string(text));
  }
  template <class T>
  void field(const char* key, const T& v) {
    out_.key(key);
    put(v);
  }
  template <class T, class U>
  void optional(const char* key, const T& v, const U&) {
    if constexpr (is_list<T>)
      if (v.empty()) return;  // an empty list is what its absence means
    field(key, v);
  }
  void range(const char* key, int begin, int end) {
    out_.key(key);
    out_.begin_list(true);
    out_.value(begin);
    out_.value(end);
    out_.end_list();
  }
  template <class T>
  void list(const char* key, const std::vector<T>& items, const char*, const char*) {
    out_.key(key);
    out_.begin_list(false);
    const std::size_t outer = item_;
    for (std::size_t i = 0; i < items.size(); ++i) {
      item_ = std::is_same_v<T, StagePlan> ? i : kNone;  // node counts are per stage
      out_.begin_map();
      plan_schema::describe(*this, items[i]);
      out_.end_map();
    }
    item_ = outer;
    out_.end_list();
  }
  // A one-device stage is written as before replica sets existed.
  template <class T, class Keys>
  void either(const char* key, const std::vector<T>& items, const char* kind, const char* item_kind, Keys keys) {
    if (items.empty())
      keys();
    else
      list(key, items, kind, item_kind);
  }
  template <class T, class Written>
  void section(const char* key, const T& v, Written written) {
    if (!written(v)) return;
    out_.key(key);
    out_.begin_map();
    plan_schema::describe(*this, v);
    out_.end_map();
  }
  void informational(const char* key, const int& /*stated*/) {
    if (item_ >= nodes_.size() || nodes_[item_] <= 0) return;
    out_.key(key);
    out_.value(nodes_[item_]);
  }
  void specs(const char* key, const std::optional<PlanSpecs>& specs) {
    if (!specs) return;
    out_.key(key);
    out_.begin_map();
    write_specs(out_, *specs);
    out_.end_map();
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  template <class T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      out_.value(v);
    } else if constexpr (std::is_enum_v<T>) {
      out_.value(std::string(plan_schema::EnumNames<T>::name(v)));
    } else if constexpr (std::is_integral_v<T> && sizeof(T) <= sizeof(int)) {
      out_.value(static_cast<int>(v));
    } else if constexpr (std::is_integral_v<T>) {
      out_.value(static_cast<long long>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      out_.value(static_cast<double>(v));
    } else if constexpr (std::is_same_v<T, std::vector<double>> || std::is_same_v<T, std::vector<int>>) {
      out_.begin_list(true);
      for (auto x : v) out_.value(x);
      out_.end_list();
    } else {
      static_assert(std::is_same_v<T, std::string>, "a plan value the schema cannot write");
      out_.value(v);
    }
  }

  DocumentWriter& out_;
  const std::vector<int>& nodes_;  // per stage, or empty
  std::size_t item_ = kNone;       // the stage being written
};

std::string yaml_text(const Plan& plan, const std::vector<int>& nodes) {
  return detail::yaml_document([&](DocumentWriter& out) {
    FileWriter w(out, nodes);
    plan_schema::describe(w, plan);
  });
}

std::string json_text(const Plan& plan, const std::vector<int>& nodes) {
  return detail::json_document([&](DocumentWriter& out) {
    FileWriter w(out, nodes);
    plan_schema::describe(w, plan);
  });
}

// ------------------------------------------------------------- reading

// The schema visitor that reads a plan file (plan_schema.hpp), YAML or JSON
// (converted node by node, below). Every value is taken as the schema says:
// a missing required key, a value of another type, an unknown enum name or
// a layer range not 2 long is an InputError naming the key path. Once every
// value is read, each mapping's keys are checked against the schema's, in
// the order the mappings were met: a key the schema does not list is
// refused, with the closest listed one as a hint.
class FileReader {
 public:
  // `json`: the document was JSON, whose strings are quoted and whose
  // numbers and booleans are not: a string must be quoted there.
  FileReader(const std::string& file, bool json) : file_(file), json_(json) {}

  Plan read(const YAML::Node& root) {
    Plan plan;
    plan_ = &plan;
    visit(YamlValue(root, file_, ""), plan);
    for (const Mapping& m : mappings_) check_keys(m);
    // A stage of replica sets names its first set's device (plan.hpp).
    for (StagePlan& s : plan.stages) {
      if (!s.has_replica_sets()) continue;
      s.group = s.replicas.front().group;
      s.device = s.replicas.front().device;
      s.first_gpu = s.replicas.front().first_gpu;
    }
    return plan;
  }

  void tag(const char* key, const char* text) {
    const auto value = get<std::string>(required(key, expected_kind<std::string>()));
    if (value != text) throw InputError(file_, here().key_path(key), value, text);
  }
  template <class T>
  void field(const char* key, T& member) {
    if (refused_by_) return refuse(key);
    member = get<T>(required(key, expected_kind<T>()));
  }
  template <class T, class U>
  void optional(const char* key, T& member, const U& absent) {
    const auto v = find(key);
    member = v ? get<T>(*v) : static_cast<T>(absent);
    // An optional list means something only with items: an empty one is
    // refused rather than read as its absence.
    if constexpr (is_list<T>)
      if (v && member.empty()) fail(*v, "a non-empty list, or no such key");
  }
  void range(const char* key, int& begin, int& end) {
    const YamlValue v = required(key, expected_kind<std::vector<int>>());
    const auto pair = get<std::vector<int>>(v);
    if (pair.size() != 2) {
      std::string shown = "[";
      for (std::size_t i = 0; i < pair.size(); ++i) shown += (i ? ", " : "") + std::to_string(pair[i]);
      throw InputError(file_, v.path(), shown + "]", "[first, end): a list of 2 integers");
    }
    begin = pair[0];
    end = pair[1];
  }
  template <class T>
  void list(const char* key, std::vector<T>& items, const char* kind, const char* item_kind) {
    const YamlValue v = required(key, kind);
    if (!v.is_list()) fail(v, kind);
    const std::vector<YamlValue> elements = v.as_list();
    if (elements.size() > kMaxPlanListItems)
      throw InputError(file_, v.path(), std::to_string(elements.size()) + " items",
                       "at most " + std::to_string(kMaxPlanListItems));
    items.assign(elements.size(), T{});
    for (std::size_t i = 0; i < elements.size(); ++i) {
      if (!elements[i].is_map()) fail(elements[i], item_kind);
      visit(elements[i], items[i]);
    }
  }
  template <class T, class Written>
  void section(const char* key, T& member, Written) {
    member = T{};
    const auto v = find(key);
    if (!v) return;
    if (!v->is_map()) fail(*v, expected_kind<T>());
    visit(*v, member);
  }
  // Not read back (the writer derives it), but a value of it must still be
  // what the writer writes: a positive count.
  void informational(const char* key, int& stated) {
    if (refused_by_) return refuse(key);
    const auto v = find(key);
    if (!v) return;
    stated = get<int>(*v);
    if (stated < 1) fail(*v, "a positive count (nodes the stage touches)");
  }
  // The list where the mapping has its key (then the other keys are
  // refused: the list says where the stage runs), else the other keys.
  template <class T, class Keys>
  void either(const char* key, std::vector<T>& items, const char* kind, const char* item_kind, Keys keys) {
    if (!here().find(key)) {
      find(key);
      items.clear();
      keys();
      return;
    }
    list(key, items, kind, item_kind);
    if (items.empty())
      throw InputError(file_, here().key_path(key), "[]",
                       std::string("at least one entry (") + kind + "); or no '" + key + "' key");
    refused_by_ = key;
    keys();
    refused_by_ = nullptr;
  }
  void specs(const char* key, std::optional<PlanSpecs>& specs) {
    specs.reset();
    const auto v = find(key);
    if (!v) return;
    if (!v->is_map()) fail(*v, "a mapping of model, cluster and training");
    const YamlObject obj = v->as_object();
    obj.check_keys({"fingerprints", "model", "cluster", "training"});
    // The fingerprints a plan was written with (hex64 of each spec), read
    // back to say which spec was edited since: each key once, each value 16
    // hex digits, as written; a mistyped one would only mislead that note.
    if (const auto f = obj.find("fingerprints")) {
      if (!f->is_map()) fail(*f, "a mapping of model, cluster and training to their 16-hex-digit fingerprints");
      const YamlObject fingerprints = f->as_object();
      fingerprints.check_keys({"model", "cluster", "training"});
      for (const std::string& spec : fingerprints.keys()) {
        const YamlValue v = fingerprints.at(spec, "a fingerprint");
        const std::string text = v.is_scalar() ? v.as_string() : std::string();
        const bool hex = text.size() == 16 && std::all_of(text.begin(), text.end(), [](unsigned char c) {
                           return std::isdigit(c) || (c >= 'a' && c <= 'f');
                         });
        if (!hex) fail(v, "16 hex digits (0-9, a-f), as the plan was written");
      }
    }
    PlanSpecs s;
    s.model = read_model(obj.at("model", "a model spec").as_object(), plan_->model);
    s.cluster = read_cluster(obj.at("cluster", "a cluster spec").as_object(), plan_->cluster);
    s.training = read_training(obj.at("training", "a training spec").as_object());
    specs = std::move(s);
  }

 private:
  // A mapping met while reading, and the keys the schema gave it.
  struct Mapping {
    YamlObject object;
    std::vector<std::string> keys;
  };

  template <class T>
  void visit(const YamlValue& v, T& value) {
    mappings_.push_back({YamlObject(v.node(), file_, v.path()), {}});  // refuses a key given twice
    const std::size_t saved = current_;
    current_ = mappings_.size() - 1;
    plan_schema::describe(*this, value);
    current_ = saved;
  }

  const YamlObject& here() const { return mappings_[current_].object; }

  // A key that may not stand beside the list `refused_by_`.
  void refuse(const char* key) {
    if (const auto v = find(key))
      throw InputError(file_, v->path(), shorten(v->text()),
                       std::string("no '") + key + "' beside '" + refused_by_ + "': each entry there names its own");
  }

  // Every key the schema asks for is a key the mapping may hold.
  std::optional<YamlValue> find(const char* key) {
    mappings_[current_].keys.emplace_back(key);
    return here().find(key);
  }
  YamlValue required(const char* key, const std::string& kind) {
    auto v = find(key);
    // A YAML merge key (`<<: *anchor`) is a key like any other to a YAML
    // 1.2 reader: what it would merge is missing, and said so.
    if (!v && here().has("<<"))
      throw InputError(file_, here().key_path("<<"), shorten(here().find("<<")->text()),
                       "the keys written out: merge keys (<<) are not read, so '" + std::string(key) +
                           "' is missing here");
    if (!v) {
      // A required key written with a typo is the likelier fault than one
      // left out: named as written (`num_micro_batchs`), not as missing.
      // Not for keys of two or three letters: tp, cp, dp and pp are one
      // edit apart, and the schema's keys are not all known here yet.
      const bool short_key = std::string_view(key).size() <= 3;
      for (const std::string& written : short_key ? std::vector<std::string>{} : here().keys())
        if (written != key && !detail::closest_name({key}, written).empty())
          throw InputError(file_, here().key_path(written), written,
                           std::string("the required key '") + key + "' (did you mean '" + key + "'?)");
      throw InputError(file_, here().key_path(key), kMissing, "a value for this required key: " + kind);
    }
    return *v;
  }

  [[noreturn]] void fail(const YamlValue& v, const std::string& allowed) const {
    throw InputError(file_, v.path(), shorten(v.text()), allowed);
  }

  // A value of type T. Quoted scalars are strings: `tp: "4"` is refused as
  // an integer, in YAML as in JSON.
  template <class T>
  T get(const YamlValue& v) const {
    if constexpr (std::is_enum_v<T>) {
      using Names = plan_schema::EnumNames<T>;
      const auto name = get<std::string>(v);
      const auto parsed = Names::parse(name);
      if (!parsed) throw InputError(file_, v.path(), name, Names::kAllowed);
      return *parsed;
    } else if constexpr (std::is_same_v<T, std::vector<int>> || std::is_same_v<T, std::vector<double>>) {
      if (!v.is_list()) fail(v, expected_kind<T>());
      T values;
      for (const YamlValue& item : v.as_list()) values.push_back(get<typename T::value_type>(item));
      return values;
    } else {
      T value{};
      const bool quoted = v.node().Tag() == "!";
      const bool as_text = std::is_same_v<T, std::string>;
      bool ok = as_text ? v.is_scalar() && (quoted || !json_) : is_plain_scalar(v.node());
      // The scalar rules of every user file (io/yaml_value.hpp).
      if constexpr (std::is_same_v<T, bool>) {
        const auto flag = ok ? yaml12_bool(v.node().Scalar()) : std::nullopt;
        if (!flag) fail(v, expected_kind<T>());
        return *flag;
      } else if constexpr (std::is_integral_v<T>) {
        ok = ok && is_decimal_integer(v.node().Scalar());
      } else if constexpr (as_text) {
        ok = ok && is_valid_utf8(v.node().Scalar());
      }
      if (!ok) fail(v, expected_kind<T>());
      if (!YAML::convert<T>::decode(v.node(), value)) {
        // A decimal integer past the type: say its range (each key's own,
        // smaller one is checked where the plan is).
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          fail(v, std::string(expected_kind<T>()) + " of at most " + std::to_string(std::numeric_limits<T>::max()) +
                      " in magnitude (each key's own range is smaller)");
        fail(v, expected_kind<T>());
      }
      return value;
    }
  }

  void check_keys(const Mapping& m) const {
    for (const std::string& key : m.object.keys()) {
      if (std::find(m.keys.begin(), m.keys.end(), key) != m.keys.end()) continue;
      throw InputError(file_, m.object.key_path(key), key, "keys " + detail::names_with_hint(m.keys, key));
    }
  }

  const std::string& file_;
  const bool json_;
  const char* refused_by_ = nullptr;  // see either()
  Plan* plan_ = nullptr;
  std::vector<Mapping> mappings_;
  std::size_t current_ = 0;
};

std::string render(const rj::Value& value) {
  if (value.IsString()) return shorten(value.GetString());
  rj::StringBuffer buffer;
  rj::Writer<rj::StringBuffer> writer(buffer);
  value.Accept(writer);
  return shorten(buffer.GetString());
}

Plan read_yaml(const std::string& text, const std::string& file) {
  const YAML::Node root = parse_yaml(text, file);
  if (!root.IsDefined() || root.IsNull())
    throw InputError(file, "", "an empty document", std::string("a plan mapping (format: ") + kPlanFormat + ")");
  if (!root.IsMap()) throw InputError(file, "", shorten(YamlValue(root, file, "").text()), "a mapping");
  return FileReader(file, false).read(root);
}

Plan read_json(const std::string& text, const std::string& file) {
  rj::Document doc;
  parse_json(text, file, doc);
  if (!doc.IsObject())
    throw InputError(file, "", render(doc), std::string("a JSON object (format: ") + kPlanFormat + ")");
  // The plan's lists counted before the document becomes YAML nodes (about
  // a kilobyte each): a file of 400,000 stages took 5 GB and 30 s to refuse.
  auto count = [&](const rj::Value& parent, const std::string& key_path, const char* key) {
    const auto it = parent.FindMember(key);
    if (it == parent.MemberEnd() || !it->value.IsArray()) return;
    if (it->value.Size() > kMaxPlanListItems)
      throw InputError(file, key_path, std::to_string(it->value.Size()) + " items",
                       "at most " + std::to_string(kMaxPlanListItems));
  };
  count(doc, "stages", "stages");
  if (const auto stages = doc.FindMember("stages"); stages != doc.MemberEnd() && stages->value.IsArray()) {
    for (rj::SizeType i = 0; i < stages->value.Size(); ++i)
      if (stages->value[i].IsObject())
        count(stages->value[i], "stages[" + std::to_string(i) + "].replicas", "replicas");
  }
  return FileReader(file, true).read(yaml_of_json(doc));
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

void check_plan_file_name(const std::string& path, const std::string& flag) {
  const std::string ext = lowercase_extension(path);
  if (ext == ".json" || ext == ".yaml" || ext == ".yml") return;
  throw InputError("command line", flag, path, "a plan file name ending .json, .yaml or .yml");
}

Plan plan_from_string(const std::string& text, bool is_json, const std::string& file) {
  Plan plan = is_json ? read_json(text, file) : read_yaml(text, file);
  check_plan(plan, file);
  return plan;
}

Plan read_plan(const std::string& path) {
  return plan_from_string(read_file(path), is_json_path(path), path);
}

PlanSpecs plan_specs(const Problem& problem) { return PlanSpecs{problem.model, problem.cluster, problem.training}; }

namespace {

Plan with_specs(const Plan& plan, const Problem& problem) {
  Plan out = plan;
  out.specs = plan_specs(problem);
  return out;
}

}  // namespace

std::string plan_to_yaml(const Plan& plan, int gpus_per_node_hint) {
  return yaml_text(plan, stage_nodes(plan, gpus_per_node_hint));
}

std::string plan_to_yaml(const Plan& plan, const ClusterSpec& cluster) {
  return yaml_text(plan, stage_nodes(plan, cluster));
}

std::string plan_to_yaml(const Plan& plan, const Problem& problem) {
  return plan_to_yaml(with_specs(plan, problem), problem.cluster);
}

std::string plan_to_json(const Plan& plan, int gpus_per_node_hint) {
  return json_text(plan, stage_nodes(plan, gpus_per_node_hint));
}

std::string plan_to_json(const Plan& plan, const ClusterSpec& cluster) {
  return json_text(plan, stage_nodes(plan, cluster));
}

std::string plan_to_json(const Plan& plan, const Problem& problem) {
  return plan_to_json(with_specs(plan, problem), problem.cluster);
}

void write_plan(const Plan& plan, const std::string& path, int gpus_per_node_hint) {
  write_file_atomically(path, is_json_path(path) ? plan_to_json(plan, gpus_per_node_hint)
                                                 : plan_to_yaml(plan, gpus_per_node_hint));
}

void write_plan(const Plan& plan, const std::string& path, const ClusterSpec& cluster) {
  write_file_atomically(path, is_json_path(path) ? plan_to_json(plan, cluster) : plan_to_yaml(plan, cluster));
}

void write_plan(const Plan& plan, const std::string& path, const Problem& problem) {
  // A plan the loader would refuse is never written: what `search` and
  // `batch` write, `estimate`, `export` and `validate` must read back.
  try {
    check_plan_against(plan, problem, path);
  } catch (const InputError& e) {
    throw std::logic_error(std::string("internal error: a plan for ") + path +
                           " breaks a plan rule, so it is not written: " + e.what());
  }
  write_file_atomically(path, is_json_path(path) ? plan_to_json(plan, problem) : plan_to_yaml(plan, problem));
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
    within(stage_key(i, "gpus"), s.gpus, 1, limits::kMaxClusterGpus);
    within(stage_key(i, "tp"), s.tp, 1, limits::kMaxClusterGpus);
    within(stage_key(i, "cp"), s.cp, 1, limits::kMaxClusterGpus);
    within(stage_key(i, "dp"), s.dp, 1, limits::kMaxClusterGpus);
    if (!s.has_replica_sets()) {
      name(stage_key(i, "device"), s.device, "a device name");
      within(stage_key(i, "group"), s.group, 0, limits::kMaxClusterGpus);
      within(stage_key(i, "first_gpu"), s.first_gpu, 0, limits::kMaxClusterGpus - 1);
    }
    // Replica sets (plan.hpp, ReplicaSet): each of whole replicas
    // (tp * cp GPUs each), taking an equal whole share of its sequences per
    // replica; together the stage's GPUs and the whole micro-batch.
    const int per_replica = s.tp * s.cp;
    long long set_gpus = 0, set_sequences = 0;
    for (std::size_t k = 0; k < s.replicas.size(); ++k) {
      const ReplicaSet& r = s.replicas[k];
      name(set_key(i, k, "device"), r.device, "a device name");
      within(set_key(i, k, "group"), r.group, 0, limits::kMaxClusterGpus);
      within(set_key(i, k, "first_gpu"), r.first_gpu, 0, limits::kMaxClusterGpus - 1);
      within(set_key(i, k, "gpus"), r.gpus, 1, limits::kMaxClusterGpus);
      within(set_key(i, k, "sequences"), r.sequences, 1, limits::kMaxGlobalBatch);
      if (r.gpus % per_replica != 0)
        throw InputError(file, set_key(i, k, "gpus"), std::to_string(r.gpus),
                         "a multiple of tp * cp = " + std::to_string(per_replica) + " (whole replicas)");
      const int replicas = r.gpus / per_replica;
      if (r.sequences % replicas != 0)
        throw InputError(file, set_key(i, k, "sequences"), std::to_string(r.sequences),
                         "a multiple of the set's " + std::to_string(replicas) +
                             " replicas (gpus / (tp * cp); each replica takes an equal share)");
      set_gpus += r.gpus;
      set_sequences += r.sequences;
    }
    if (s.has_replica_sets()) {
      if (set_gpus != s.gpus)
        throw InputError(file, stage_key(i, "gpus"), std::to_string(s.gpus),
                         "the replica sets' GPUs together: " + std::to_string(set_gpus));
      if (set_sequences != plan.micro_batch_size)
        throw InputError(file, stage_key(i, "replicas"), "sequences summing to " + std::to_string(set_sequences),
                         "sequences summing to micro_batch_size = " + std::to_string(plan.micro_batch_size) +
                             " (the sets share each micro-batch)");
    }
    const long long product = static_cast<long long>(s.tp) * s.cp * s.dp;
    if (s.gpus != product)
      throw InputError(file, stage_key(i, "gpus"), std::to_string(s.gpus),
                       "tp * cp * dp = " + std::to_string(product));
    // A stage of a pipeline may hold no transformer layer: DeepSpeed's
    // layer partitions give a stage only the embedding, or only the
    // reshape between it and the first layer (AMP's trials,
    // tests/unit/amp_trials_test.cpp). Such a stage still holds the
    // embedding or the output layer where it is first or last, and passes
    // every micro-batch on.
    const bool several = plan.stages.size() > 1;
    if (s.layer_begin < 0 || s.layer_end > limits::kMaxLayers || s.layer_begin > s.layer_end ||
        (s.layer_begin == s.layer_end && !several))
      throw InputError(file, stage_key(i, "layers"), layers_text(s),
                       "[first, end) with 0 <= first < end <= " + std::to_string(limits::kMaxLayers) +
                           (several ? " (or first = end: a stage of no transformer layer)" : ""));
    const std::string chunks_rule = chunks_violation(s.chunks, plan.vpp, s.num_layers());
    if (!chunks_rule.empty()) {
      std::string shown = "[";
      for (std::size_t c = 0; c < s.chunks.size() && c < 8; ++c) shown += (c ? ", " : "") + std::to_string(s.chunks[c]);
      throw InputError(file, stage_key(i, "chunks"), shown + (s.chunks.size() > 8 ? ", ...]" : "]"), chunks_rule);
    }
  }

  const std::string stage_count = std::to_string(plan.stages.size());
  auto one_per_stage = [&](const char* key, std::size_t n) {
    if (n != 0 && n != plan.stages.size())
      throw InputError(file, key, std::to_string(n) + " entries", "one entry per stage (" + stage_count + ")");
  };
  one_per_stage("predicted.stage_time_s", plan.predicted.stage_time_s.size());
  one_per_stage("predicted.stage_memory_GiB", plan.predicted.stage_memory_GiB.size());
  // Predictions are what estimate wrote (0: none; infinite where a figure
  // has no finite value): never negative or NaN, which a reader comparing
  // plans would take at their word.
  auto predicted_figure = [&](const std::string& key, double value) {
    if (!(value >= 0))
      throw InputError(file, key, number_text(value), "a number >= 0 (as estimate writes it; 0: not predicted)");
  };
  const PredictedPerformance& predicted = plan.predicted;
  predicted_figure("predicted.iteration_time_s", predicted.iteration_time_s);
  predicted_figure("predicted.tokens_per_s", predicted.tokens_per_s);
  predicted_figure("predicted.mfu", predicted.mfu);
  predicted_figure("predicted.hfu", predicted.hfu);
  predicted_figure("predicted.model_tflops_per_gpu", predicted.model_tflops_per_gpu);
  predicted_figure("predicted.bubble_s", predicted.bubble_s);
  for (std::size_t i = 0; i < predicted.stage_time_s.size(); ++i)
    predicted_figure("predicted.stage_time_s[" + std::to_string(i) + "]", predicted.stage_time_s[i]);
  for (std::size_t i = 0; i < predicted.stage_memory_GiB.size(); ++i)
    predicted_figure("predicted.stage_memory_GiB[" + std::to_string(i) + "]", predicted.stage_memory_GiB[i]);

  const SearchStats& search = plan.search;
  without_nul("search.strategy", search.strategy, "a strategy name");
  at_least("search.evaluated", search.evaluated, 0);
  at_least("search.pruned", search.pruned, 0);
  at_least("search.cache_hits", search.cache_hits, 0);
  at_least("search.cache_misses", search.cache_misses, 0);
  if (!(search.wall_s >= 0)) throw InputError(file, "search.wall_s", number_text(search.wall_s), "a number >= 0");
  at_least("search.ranks", search.ranks, 1);
  at_least("search.threads", search.threads, 1);
  if (!(search.bound_s >= 0) || std::isinf(search.bound_s))
    throw InputError(file, "search.bound_s", number_text(search.bound_s), "a number of seconds >= 0 (0: nothing proven)");
  if (!(search.gap >= 0 && search.gap <= 1))
    throw InputError(file, "search.gap", number_text(search.gap), "a number from 0 to 1");

  if (plan.specs) {
    if (plan.specs->model.name != plan.model)
      throw InputError(file, "specs.model.name", plan.specs->model.name, "'" + plan.model + "' (the plan's model)");
    if (plan.specs->cluster.name != plan.cluster)
      throw InputError(file, "specs.cluster.name", plan.specs->cluster.name,
                       "'" + plan.cluster + "' (the plan's cluster)");
  }
}

namespace {

void check_plan_for(const Plan& plan, const ModelSpec& model, const ClusterSpec& cluster, int seq_len,
                    bool sequence_parallel, const std::string& file) {
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
    std::string key;  // its first_gpu
  };
  std::vector<std::vector<GpuRange>> used(cluster.groups.size());
  const int group_count = static_cast<int>(cluster.groups.size());
  int next_layer = 0;

  // One device's GPUs of stage i: the whole stage, or one replica set
  // (`key` names a field of either). Each is checked on its own group:
  // device, GPU range, the stage rule with its own replicas and share of
  // the micro-batch, and tp groups inside nodes.
  auto place = [&](std::size_t i, const auto& key, int group, const std::string& device, int first_gpu, int gpus,
                   int dp, int micro_batch) {
    const StagePlan& s = plan.stages[i];
    const std::string tp = std::to_string(s.tp);
    if (group >= group_count)
      throw InputError(file, key("group"), std::to_string(group),
                       "0.." + std::to_string(group_count - 1) + " (cluster '" + cluster.name + "' has " +
                           std::to_string(group_count) + " groups)");
    const NodeGroup& g = cluster.groups[group];
    const std::string group_name = "group " + std::to_string(group);
    if (device != g.device.name)
      throw InputError(file, key("device"), device, "'" + g.device.name + "' (the device of " + group_name + ")");

    const long long end_gpu = static_cast<long long>(first_gpu) + gpus;
    const std::string gpu_text = "GPUs " + std::to_string(first_gpu) + ".." + std::to_string(end_gpu - 1);
    if (end_gpu > g.gpus())
      throw InputError(file, key("first_gpu"), gpu_text,
                       "GPUs within 0.." + std::to_string(g.gpus() - 1) + " of " + group_name);

    // The stage rule (specs/parallel_rules.hpp): tp inside a node and over
    // the heads, cp over the sequence, dp over the micro-batch.
    const StageDegrees degrees{s.tp, s.cp, dp};
    if (const auto v = stage_violation(model, seq_len, sequence_parallel, &g, degrees, micro_batch))
      throw InputError(file, key(stage_field(v->rule)), std::to_string(stage_field_value(v->rule, degrees)),
                       v->allowed);
    // Ranks within a stage are ordered tensor-parallel first, then context-
    // parallel, then data-parallel (Megatron's order): tensor-parallel group
    // k holds GPUs first_gpu + k*tp .. + tp - 1.
    const int per_node = g.gpus_per_node;
    for (int k = 0; k < s.cp * dp; ++k) {
      const int begin = first_gpu + k * s.tp;
      if (begin / per_node != (begin + s.tp - 1) / per_node)
        throw InputError(file, key("first_gpu"), std::to_string(first_gpu),
                         "a first GPU that keeps each group of tp=" + tp + " GPUs inside one node of " +
                             std::to_string(per_node) + " GPUs");
    }
    // The nodes a file states, for its readers, are the ones it uses (as
    // the writer counts them, nodes_spanned): a hand-edited count had been
    // read and silently rewritten.
    if (!s.has_replica_sets() && s.stated_nodes > 0) {
      const int spans = nodes_spanned(s, per_node);
      if (s.stated_nodes != spans)
        throw InputError(file, key("nodes"), std::to_string(s.stated_nodes),
                         std::to_string(spans) + " (the nodes of " + std::to_string(per_node) + " GPUs that " +
                             gpu_text + " of " + group_name + " touch), or no nodes key");
    }
    // A stage of its own GPUs, and each replica set of one, lies inside one
    // node or on whole nodes (own_gpus_placement_allowed): GPUs 1..2 on
    // nodes of 2 had a cp ring across two nodes priced as inside one, and a
    // set of GPUs 2..3 on nodes of 3 was launched as two node ranks on each
    // of its nodes.
    if (!own_gpus_placement_allowed(first_gpu, gpus, per_node))
      throw InputError(file, key("first_gpu"), std::to_string(first_gpu),
                       "a first GPU that keeps " + std::string(s.has_replica_sets() ? "the set's " : "the stage's ") +
                           std::to_string(gpus) + " GPUs inside one node of " + std::to_string(per_node) +
                           " GPUs, or on whole nodes from a node's first GPU");
    used[group].push_back({first_gpu, static_cast<int>(end_gpu), i, key("first_gpu")});
  };

  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& s = plan.stages[i];
    if (!s.has_replica_sets()) {
      place(i, [&](const char* field) { return stage_key(i, field); }, s.group, s.device, s.first_gpu, s.gpus, s.dp,
            plan.micro_batch_size);
    }
    for (std::size_t k = 0; k < s.replicas.size(); ++k) {
      const ReplicaSet& r = s.replicas[k];
      // tp and cp are the stage's; the rest the set's.
      auto key = [&](const char* field) {
        const std::string f = field;
        return f == "tp" || f == "cp" ? stage_key(i, field) : set_key(i, k, f == "dp" ? "sequences" : field);
      };
      place(i, key, r.group, r.device, r.first_gpu, r.gpus, s.set_replicas(k), r.sequences);
    }

    if (s.layer_begin != next_layer)
      throw InputError(file, stage_key(i, "layers"), layers_text(s),
                       "[" + std::to_string(next_layer) + ", ...): " +
                           (i == 0 ? std::string("the first stage starts at layer 0")
                                   : "each stage starts where stages[" + std::to_string(i - 1) + "] ends"));
    if (s.layer_end > model.layers)
      throw InputError(file, stage_key(i, "layers"), layers_text(s),
                       "an end of at most " + std::to_string(model.layers) + " (the model's layers)");
    if (s.num_layers() == 0 && model.family == ModelFamily::generic)
      throw InputError(file, stage_key(i, "layers"), layers_text(s),
                       "one layer or more (a model of generic layers has no embedding or output layer, so a stage "
                       "without a layer would hold nothing)");
    next_layer = s.layer_end;
  }
  if (next_layer != model.layers) {
    const std::size_t last = plan.stages.size() - 1;
    throw InputError(file, stage_key(last, "layers"), layers_text(plan.stages[last]),
                     "[..., " + std::to_string(model.layers) + "): the last stage ends at the model's last layer");
  }
  std::vector<int> stage_layers;
  for (const StagePlan& s : plan.stages) stage_layers.push_back(s.num_layers());
  // The plan's shape, as Megatron-LM runs it; whether the training's
  // runtime has the interleaved schedule is checked where the training is
  // known (cli/plan_problem.cpp).
  const std::string vpp_rule =
      interleaving_violation(model, Runtime::megatron, plan.vpp, stage_layers, plan.num_micro_batches);
  if (!vpp_rule.empty()) throw InputError(file, "vpp", std::to_string(plan.vpp), vpp_rule);

  for (std::size_t g = 0; g < used.size(); ++g) {
    auto& ranges = used[g];
    std::sort(ranges.begin(), ranges.end(),
              [](const GpuRange& a, const GpuRange& b) { return std::tie(a.begin, a.stage) < std::tie(b.begin, b.stage); });
    for (std::size_t k = 1; k < ranges.size(); ++k) {
      const GpuRange& a = ranges[k - 1];
      const GpuRange& b = ranges[k];
      if (b.begin >= a.end) continue;
      // Name the later range, as a reader scanning the file would meet it.
      const bool a_later = std::tie(a.stage, a.key) > std::tie(b.stage, b.key);
      const GpuRange& later = a_later ? a : b;
      const GpuRange& earlier = a_later ? b : a;
      const std::string owner = earlier.stage == later.stage ? "another replica set of this stage"
                                                              : "stages[" + std::to_string(earlier.stage) + "]";
      throw InputError(file, later.key,
                       "GPUs " + std::to_string(later.begin) + ".." + std::to_string(later.end - 1) + " of group " +
                           std::to_string(g),
                       "GPUs no other stage or replica set uses (" + owner + " has " +
                           std::to_string(earlier.begin) + ".." + std::to_string(earlier.end - 1) + ")");
    }
  }
}

}  // namespace

void check_plan_against(const Plan& plan, const ModelSpec& model, const ClusterSpec& cluster, int seq_len,
                        const std::string& file) {
  check_plan_for(plan, model, cluster, seq_len, false, file);
}

void check_plan_against(const Plan& plan, const Problem& problem, const std::string& file) {
  check_plan_for(plan, problem.model, problem.cluster, problem.seq_len(), problem.training.sequence_parallel, file);
}

}  // namespace autohaap
