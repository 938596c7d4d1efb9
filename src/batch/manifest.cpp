#include "autohaap/batch/manifest.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <type_traits>
#include <variant>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/io/yaml_value.hpp"
#include "autohaap/search/search_options.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

// A plan file DIR/summary.json would collide with the batch summary.
constexpr const char* kReservedName = "summary";

constexpr std::size_t kMaxEntryNameBytes = 200;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

std::string file_safe(std::string s) {
  for (char& c : s)
    if (!is_name_char(c)) c = '-';
  return s;
}

// One reference as written in the manifest, resolved against its folder.
struct Reference {
  std::string resolved;  // a file path, or a catalog name
  std::string label;     // catalog name or file stem, for entry names
  bool is_file = false;
};

Reference resolve(const std::string& ref, const fs::path& base_dir) {
  const bool path_like = looks_like_path(ref);
  const fs::path candidate = base_dir / ref;
  std::error_code ec;
  if (path_like || (!base_dir.empty() && fs::is_regular_file(candidate, ec))) {
    const fs::path p = fs::path(ref).is_absolute() ? fs::path(ref) : candidate.lexically_normal();
    return {p.string(), file_safe(p.stem().string()), true};
  }
  return {ref, file_safe(ref), false};
}

// Loads every distinct reference once, and turns a loader's error into one
// that names the manifest entry first (and the referenced file's own key,
// when the file itself was bad).
class SpecLoader {
 public:
  SpecLoader(std::string manifest, fs::path base_dir) : manifest_(std::move(manifest)), base_(std::move(base_dir)) {}

  std::pair<Reference, const ModelSpec*> model(const YamlValue& v) { return get(v, models_, load_model, named_model); }
  std::pair<Reference, const ClusterSpec*> cluster(const YamlValue& v) {
    return get(v, clusters_, load_cluster, named_cluster);
  }
  std::pair<Reference, const TrainingSpec*> training(const std::optional<YamlValue>& v) {
    if (!v) {
      static const TrainingSpec kDefault = load_training("");
      return {Reference{"", "default"}, &kDefault};
    }
    return get(*v, trainings_, load_training, named_training);
  }

 private:
  // `load` reads a file the reference resolved to; `named` a catalog entry
  // (never a file of that name where the batch happens to run).
  template <class Spec, class Load, class Named>
  std::pair<Reference, const Spec*> get(const YamlValue& v, std::map<std::string, Spec>& memo, Load load,
                                        Named named) {
    const Reference ref = resolve(v.as_string(), base_);
    auto it = memo.find(ref.resolved);
    if (it == memo.end()) {
      std::error_code ec;
      if (ref.is_file && !fs::is_regular_file(ref.resolved, ec))
        throw InputError(manifest_, v.path(), v.as_string(),
                         "a catalog name or an existing file (looked for " + ref.resolved + ")");
      try {
        it = memo.emplace(ref.resolved, ref.is_file ? load(ref.resolved) : named(ref.resolved)).first;
      } catch (const InputError& e) {
        // A catalog miss names no file: the manifest's value is the culprit.
        if (e.file().empty()) throw InputError(manifest_, v.path(), v.as_string(), e.allowed());
        // Otherwise the referenced file is bad: name it and its own key.
        std::string where = e.file();
        if (!e.key().empty()) where += ": " + e.key();
        throw InputError(manifest_, v.path() + " (" + where + ")", e.value(), e.allowed());
      }
    }
    return {ref, &it->second};
  }

  std::string manifest_;
  fs::path base_;
  std::map<std::string, ModelSpec> models_;
  std::map<std::string, ClusterSpec> clusters_;
  std::map<std::string, TrainingSpec> trainings_;
};

std::vector<YamlValue> non_empty_list(const YamlObject& root, const std::string& key, const std::string& what) {
  const YamlValue v = root.at(key, "a non-empty list of " + what);
  std::vector<YamlValue> items = v.as_list();
  if (items.empty()) v.fail("a non-empty list of " + what);
  return items;
}

// The table's options that apply to each entry's search (in_manifest),
// read by their manifest keys and checked as the CLI checks its flags: a
// refusal names the manifest, the key path, the value and the table's
// wording of what is allowed.
BatchOptions parse_options(const YamlObject& root) {
  SearchConfig config;
  const auto v = root.find("options");
  if (!v) return config.search;
  const YamlObject opts = v->as_object();
  std::vector<std::string> keys;
  for (const SearchOption& option : kSearchOptions)
    if (option.in_manifest) keys.push_back(manifest_key(option));
  opts.check_keys(keys);
  for (const SearchOption& option : kSearchOptions) {
    const auto value = option.in_manifest ? opts.find(manifest_key(option)) : std::nullopt;
    if (!value) continue;
    std::visit(
        [&](auto member) {
          auto& target = setting(config, member);
          using T = std::remove_cvref_t<decltype(target)>;
          if constexpr (std::is_same_v<T, std::string>) target = value->as_string();
          else if constexpr (std::is_same_v<T, bool>) target = value->as_bool();
          else if constexpr (std::is_same_v<T, double>) target = value->as_double();
          else {
            // The scalar rules of every spec file: decimal, unquoted (yaml-cpp
            // reads 010 as 8 and 0x2 as 2).
            const YAML::Node& node = value->node();
            if (!is_plain_scalar(node) || !is_decimal_integer(node.Scalar()))
              value->fail(std::string(option.allowed) + ", written in decimal and not quoted");
            try {
              target = node.template as<T>();
            } catch (const YAML::Exception&) {
              value->fail(std::string(option.allowed));
            }
          }
        },
        option.member);
    try {
      validate(option, config);
    } catch (const InputError& e) {
      throw InputError(value->file(), value->path(), e.value(), e.allowed());
    }
  }
  // Then the rules between options (a gap needs a strategy that proves
  // one), as the CLI checks its flags before any search runs.
  try {
    validate(config);
  } catch (const InputError& e) {
    const auto* option = std::find_if(kSearchOptions.begin(), kSearchOptions.end(),
                                      [&](const SearchOption& o) { return o.name == e.key(); });
    const std::string key = option != kSearchOptions.end() ? manifest_key(*option) : e.key();
    throw InputError(v->file(), v->path() + "." + key, e.value(), e.allowed());
  }
  return config.search;
}

class Expander {
 public:
  Expander(Manifest& m, SpecLoader& loader) : m_(m), loader_(loader) {}

  void add(const YamlValue& model, const YamlValue& cluster, const std::optional<YamlValue>& training,
           const std::string& source, const std::optional<YamlValue>& explicit_name) {
    const auto [mref, mspec] = loader_.model(model);
    const auto [cref, cspec] = loader_.cluster(cluster);
    const auto [tref, tspec] = loader_.training(training);
    BatchEntry e;
    e.source = source;
    e.model = mref.label;
    e.cluster = cref.label;
    e.training = tref.label;
    e.name = e.model + "__" + e.cluster + "__" + e.training;
    std::string name_path = source;
    if (explicit_name) {
      e.name = explicit_name->as_string();
      name_path = explicit_name->path();
      for (char c : e.name)
        if (!is_name_char(c)) explicit_name->fail("a file name of letters, digits, '.', '_' and '-'");
    }
    // Files are named after the entry (OUT/<name>.json, its result and
    // cache files, their temporaries ".<name>.json.tmp.PID.N"): past 200
    // bytes a name would break the 255-byte limit of common file systems
    // midway through the batch.
    if (e.name.size() > kMaxEntryNameBytes)
      throw InputError(m_.path, name_path, e.name,
                       "a name of at most " + std::to_string(kMaxEntryNameBytes) +
                           " bytes (its files are named after it)" +
                           (explicit_name ? "" : "; give the entry a shorter 'name'"));
    if (e.name == kReservedName || e.name == "." || e.name == "..")
      throw InputError(m_.path, name_path, e.name, "a name other than 'summary', '.' and '..'");
    if (const auto it = first_use_.find(e.name); it != first_use_.end())
      throw InputError(m_.path, name_path, e.name, "an entry name not already used by " + it->second);
    first_use_.emplace(e.name, source);
    e.problem.model = *mspec;
    e.problem.cluster = *cspec;
    e.problem.training = *tspec;
    try {
      check_training_for_model(*mspec, *tspec, tref.resolved);
    } catch (const InputError& refused) {
      throw InputError(m_.path, source + " (" + refused.file() + ": " + refused.key() + ")", refused.value(),
                       refused.allowed());
    }
    m_.entries.push_back(std::move(e));
  }

 private:
  Manifest& m_;
  SpecLoader& loader_;
  std::map<std::string, std::string> first_use_;
};

}  // namespace

const char* to_string(ManifestForm form) {
  switch (form) {
    case ManifestForm::product: return "product";
    case ManifestForm::entries: return "entries";
    case ManifestForm::fleet: return "fleet";
  }
  return "?";
}

Manifest parse_manifest(const std::string& text, const std::string& source, const std::string& base_dir) {
  const YAML::Node node = parse_yaml(text, source);
  if (!node.IsDefined() || node.IsNull())
    throw InputError(source, "", "an empty document", "a manifest with models/clusters, entries or fleet");
  const YamlObject root(node, source, "");
  root.check_keys({"name", "options", "models", "clusters", "trainings", "entries", "fleet"});

  Manifest m;
  m.path = source;
  m.name = root.get_string("name", fs::path(source).stem().string());
  m.options = parse_options(root);

  const bool product = root.has("models") || root.has("clusters") || root.has("trainings");
  const int forms = int(product) + int(root.has("entries")) + int(root.has("fleet"));
  if (forms != 1)
    throw InputError(source, "", forms == 0 ? "no entries" : "more than one form",
                     "exactly one of: models + clusters (+ trainings), entries, fleet");

  SpecLoader loader(source, base_dir);
  Expander expand(m, loader);
  if (product) {
    m.form = ManifestForm::product;
    const auto models = non_empty_list(root, "models", "models");
    const auto clusters = non_empty_list(root, "clusters", "clusters");
    std::vector<std::optional<YamlValue>> trainings;
    if (root.has("trainings")) {
      for (const auto& t : non_empty_list(root, "trainings", "training setups")) trainings.emplace_back(t);
    } else {
      trainings.emplace_back(std::nullopt);
    }
    const long long count = static_cast<long long>(models.size()) * static_cast<long long>(clusters.size()) *
                            static_cast<long long>(trainings.size());
    if (count > kMaxManifestEntries)
      throw InputError(source, "models", std::to_string(count) + " entries (" + std::to_string(models.size()) +
                                             " models x " + std::to_string(clusters.size()) + " clusters x " +
                                             std::to_string(trainings.size()) + " trainings)",
                       "at most " + std::to_string(kMaxManifestEntries) +
                           " entries in one manifest: split it into several");
    for (const auto& mv : models)
      for (const auto& cv : clusters)
        for (const auto& tv : trainings)
          expand.add(mv, cv, tv, mv.path() + " x " + cv.path() + (tv ? " x " + tv->path() : ""), std::nullopt);
  } else if (root.has("entries")) {
    m.form = ManifestForm::entries;
    const auto entries = non_empty_list(root, "entries", "entries {model, cluster, training, name}");
    if (static_cast<long long>(entries.size()) > kMaxManifestEntries)
      throw InputError(source, "entries", std::to_string(entries.size()) + " entries",
                       "at most " + std::to_string(kMaxManifestEntries) +
                           " entries in one manifest: split it into several");
    for (const auto& item : entries) {
      const YamlObject e = item.as_object();
      e.check_keys({"model", "cluster", "training", "name"});
      expand.add(e.at("model", "a model"), e.at("cluster", "a cluster"), e.find("training"), item.path(),
                 e.find("name"));
    }
  } else {
    m.form = ManifestForm::fleet;
    for (const auto& item : non_empty_list(root, "fleet", "clusters {cluster, models, training}")) {
      const YamlObject f = item.as_object();
      f.check_keys({"cluster", "models", "training"});
      const YamlValue cluster = f.at("cluster", "a cluster");
      const YamlValue models_value = f.at("models", "a non-empty list of models");
      const auto models = models_value.as_list();
      if (models.empty()) models_value.fail("a non-empty list of models");
      if (static_cast<long long>(m.entries.size() + models.size()) > kMaxManifestEntries)
        models_value.fail("at most " + std::to_string(kMaxManifestEntries) +
                          " entries in one manifest (with this cluster's models, more): split it into several");
      for (const auto& mv : models) expand.add(mv, cluster, f.find("training"), mv.path(), std::nullopt);
    }
  }
  return m;
}

Manifest load_manifest(const std::string& path) {
  return parse_manifest(read_file(path), path, fs::path(path).parent_path().string());
}

}  // namespace autohaap
