#include "autohaap/io/metis_profile.hpp"

#include "json_input.hpp"
#include "rapidjson.hpp"  // rapidjson as cereal configures it

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <system_error>
#include <tuple>

#include "autohaap/cost/layer_work.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNamePattern = "DeviceType.<TYPE>_tp<T>_bs<B>.json";

// Metis device-type names (folded: upper case, no '-', '_' or spaces) and
// the catalog devices each stands for.
const std::map<std::string, std::vector<std::string>>& metis_table() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"A100", {"a100-40gb", "a100-80gb"}}, {"A800", {"a800"}},
      {"H100", {"h100-sxm", "h100-pcie"}},  {"H800", {"h800"}},
      {"H20", {"h20"}},                      {"H200", {"h200"}},
      {"GH200", {"gh200"}},                  {"V100", {"v100-16gb", "v100-32gb"}},
      {"A10", {"a10"}},                      {"A40", {"a40"}},
      {"T4", {"t4"}},                        {"L4", {"l4"}},
      {"L40S", {"l40s"}},                    {"RTX3090", {"rtx3090"}},
      {"TITANRTX", {"titan-rtx"}},           {"RTX2080TI", {"rtx2080ti"}},
      {"MI250X", {"mi250x"}},                {"MI300X", {"mi300x"}},
  };
  return table;
}

std::string fold(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

bool same_name(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The exact device name TYPE spells, if it spells one.
std::string exact_device(const std::string& type, const ClusterSpec& cluster) {
  for (const NodeGroup& g : cluster.groups) {
    if (same_name(g.device.name, type)) return g.device.name;
  }
  for (const std::string& d : catalog_device_names()) {
    if (same_name(d, type)) return d;
  }
  return "";
}

std::string describe(const rj::Value& v) {
  if (v.IsString()) return std::string("\"") + v.GetString() + "\"";
  if (v.IsNumber()) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", v.GetDouble());
    return buffer;
  }
  if (v.IsArray()) return "a list of " + std::to_string(v.Size());
  if (v.IsObject()) return "an object";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  return "null";
}

// Typed access to one file's JSON with errors naming file and key path.
class ProfileReader {
 public:
  explicit ProfileReader(std::string file) : file_(std::move(file)) {}

  const rj::Value& member(const rj::Value& object, const std::string& path, const char* key,
                          const std::string& expected) const {
    const std::string where = join(path, key);
    if (!object.IsObject()) throw InputError(file_, path, describe(object), "an object");
    const auto it = object.FindMember(key);
    if (it == object.MemberEnd()) throw InputError(file_, where, "(missing)", expected);
    once(object, path, key);
    return it->value;
  }
  const rj::Value* optional(const rj::Value& object, const char* key, const std::string& path = "") const {
    if (!object.IsObject()) return nullptr;
    const auto it = object.FindMember(key);
    if (it == object.MemberEnd()) return nullptr;
    once(object, path, key);
    return &it->value;
  }
  // A key read is given once: JSON parsers differ on which of two copies
  // wins (rapidjson's lookup the first), and plans and YAML refuse both.
  void once(const rj::Value& object, const std::string& path, const char* key) const {
    int copies = 0;
    for (auto m = object.MemberBegin(); m != object.MemberEnd(); ++m) copies += std::strcmp(m->name.GetString(), key) == 0;
    if (copies > 1)
      throw InputError(file_, join(path, key), "given " + std::to_string(copies) + " times", "each key at most once");
  }
  double number(const rj::Value& v, const std::string& where, bool positive) const {
    if (!v.IsNumber() || !std::isfinite(v.GetDouble()) || v.GetDouble() < 0 || (positive && v.GetDouble() == 0)) {
      throw InputError(file_, where, describe(v), positive ? "a positive number" : "a non-negative number");
    }
    return v.GetDouble();
  }
  std::vector<double> numbers(const rj::Value& v, const std::string& where, bool positive) const {
    if (!v.IsArray()) throw InputError(file_, where, describe(v), "a list of numbers");
    std::vector<double> out;
    for (rj::SizeType i = 0; i < v.Size(); ++i) {
      out.push_back(number(v[i], where + "[" + std::to_string(i) + "]", positive));
    }
    return out;
  }
  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }

 private:
  std::string file_;
};

// What one file says, before it becomes table entries.
struct MetisFile {
  std::string path;
  std::string type;
  int tp = 0, bs = 0;
  std::string model_name;
  int num_layers = 0;
  std::vector<double> param_bytes;  // per entry: embedding, layers, head
  std::vector<double> layer_ms;
  double optimizer_ms = -1;  // execution_time.optimizer_time_ms; -1: not given
};

// Whether `bytes` are `params` parameters at 2 or 4 bytes each, within
// `tolerance` of either.
bool bytes_of(double bytes, double params, double tolerance) {
  const double per_param = params > 0 ? bytes / params : 0;
  return std::abs(per_param - 2) <= 2 * tolerance || std::abs(per_param - 4) <= 4 * tolerance;
}

// A profile times the model whose parameter bytes it records (Metis records
// each whole layer's 16-bit weights, whatever the tp): each layer's
// within 2% of this model's layer at 2 or 4 bytes a parameter (Metis's
// GPT files record 12h^2 + 13h exactly), and the word embedding and the
// output head within 10% of its vocab x hidden (Metis leaves the learned
// positions out and adds the final norm). 10% on the layers had let a
// profile of hidden 768 time a model of hidden 816 as measured, and the
// edges were not checked: a vocabulary of 32,000 took 50,257's times.
void check_layer_shape(const MetisFile& f, const ModelSpec& model) {
  auto refuse = [&](std::size_t index, const std::string& what, double params) {
    char got[96], count[32];
    const double bytes = f.param_bytes.at(index);
    std::snprintf(got, sizeof got, "%.0f bytes (%.3g parameters at 2 bytes)", bytes, bytes / 2);
    std::snprintf(count, sizeof count, "%.3g", params);
    // Built whole: the model's name has no bound a fixed buffer could keep.
    throw InputError(f.path, "model.parameters.parameters_per_layer_bytes[" + std::to_string(index) + "]", got,
                     "the bytes of " + what + " of " + model.name + ": " + count + " parameters (hidden " +
                         std::to_string(model.hidden) + ", ffn " + std::to_string(model.ffn_hidden) + ", vocab " +
                         std::to_string(model.vocab) +
                         ") at 2 or 4 bytes each; a profile of another model shape cannot time this one");
  };
  for (int l = 0; l < model.layers; ++l) {
    const std::size_t index = static_cast<std::size_t>(l) + 1;
    const double params = layer_params(model, l);
    if (!bytes_of(f.param_bytes.at(index), params, 0.02)) refuse(index, "layer " + std::to_string(l), params);
  }
  if (model.family == ModelFamily::generic) return;
  const double table = static_cast<double>(model.vocab) * model.hidden;
  const std::size_t head = static_cast<std::size_t>(model.layers) + 1;
  if (!bytes_of(f.param_bytes.at(0), table, 0.10)) refuse(0, "the word embedding (vocab x hidden)", table);
  if (!bytes_of(f.param_bytes.at(head), table, 0.10)) refuse(head, "the output head (vocab x hidden)", table);
}

MetisFile parse_file(const fs::path& file, const std::smatch& name) {
  MetisFile f;
  f.path = file.string();
  f.type = name[1];
  auto size = [&](const std::string& text, const char* what) {
    int v = 0;
    try {
      v = std::stoi(text);
    } catch (const std::exception&) {
      v = 0;
    }
    if (v < 1) throw InputError(f.path, std::string("file name ") + what, text, "an integer from 1 to 2147483647");
    return v;
  };
  f.tp = size(name[2], "tp");
  f.bs = size(name[3], "bs");

  const std::string text = read_file(f.path);
  rj::Document doc;
  parse_json(text, f.path, doc);
  const ProfileReader r(f.path);
  const rj::Value& model = r.member(doc, "", "model", "an object with model_name, num_layers, parameters");
  const rj::Value& name_value = r.member(model, "model", "model_name", "the model's name");
  if (!name_value.IsString()) throw InputError(f.path, "model.model_name", describe(name_value), "a string");
  f.model_name = name_value.GetString();
  const rj::Value& n = r.member(model, "model", "num_layers", "layers incl. embedding and head");
  if (!n.IsInt() || n.GetInt() < 3) {
    throw InputError(f.path, "model.num_layers", describe(n),
                     "an integer >= 3 (embedding, at least one layer, output head)");
  }
  f.num_layers = n.GetInt();
  const rj::Value& params = r.member(model, "model", "parameters", "an object with parameters_per_layer_bytes");
  f.param_bytes =
      r.numbers(r.member(params, "model.parameters", "parameters_per_layer_bytes", "a list of byte counts"),
                "model.parameters.parameters_per_layer_bytes", false);
  if (const rj::Value* v = r.optional(params, "total_parameters_bytes", "model.parameters")) {
    r.number(*v, "model.parameters.total_parameters_bytes", false);
  }

  const rj::Value& exec = r.member(doc, "", "execution_time", "an object with layer_compute_total_ms");
  f.layer_ms = r.numbers(r.member(exec, "execution_time", "layer_compute_total_ms", "a list of milliseconds"),
                         "execution_time.layer_compute_total_ms", true);
  // Latencies the cost model can add up (io/limits.hpp).
  auto bounded = [&](double ms, const std::string& key) {
    if (ms > limits::kMaxOpLatencyMs)
      throw InputError(f.path, key, (std::ostringstream() << ms).str(),
                       "at most " + std::to_string(static_cast<long long>(limits::kMaxOpLatencyMs)) + " ms");
    return ms;
  };
  for (std::size_t l = 0; l < f.layer_ms.size(); ++l)
    bounded(f.layer_ms[l], "execution_time.layer_compute_total_ms[" + std::to_string(l) + "]");
  for (const char* key : {"total_time_ms", "forward_backward_time_ms", "batch_generator_time_ms",
                          "layernorm_grads_all_reduce_time_ms", "embedding_grads_all_reduce_time_ms"}) {
    if (const rj::Value* v = r.optional(exec, key, "execution_time")) r.number(*v, ProfileReader::join("execution_time", key), false);
  }
  if (const rj::Value* v = r.optional(exec, "optimizer_time_ms", "execution_time"))
    // Positive, as every layer time: a step of 0 ms measured nothing (it was
    // once dropped without a word and the analytic step kept).
    f.optimizer_ms = bounded(r.number(*v, "execution_time.optimizer_time_ms", true), "execution_time.optimizer_time_ms");
  if (const rj::Value* mem = r.optional(doc, "execution_memory")) {
    // Not used (the cost model's memory is calibrated on published peaks),
    // but read as what it is: megabytes one GPU held, no more than a GPU
    // can have (limits::kMaxMemoryGiB); 1e300 had passed.
    auto held = [&](double mb, const std::string& key) {
      if (mb > limits::kMaxMemoryGiB * 1024)
        throw InputError(f.path, key, (std::ostringstream() << mb).str(),
                         "at most " + std::to_string(static_cast<long long>(limits::kMaxMemoryGiB * 1024)) +
                             " MB (memory one GPU held)");
    };
    for (const char* key : {"total_memory", "total_memory_mb"}) {
      const std::string where = ProfileReader::join("execution_memory", key);
      if (const rj::Value* v = r.optional(*mem, key, "execution_memory")) held(r.number(*v, where, false), where);
    }
    // Its length is not held against the file: Metis's own sample profiles
    // list one entry fewer than num_layers here.
    if (const rj::Value* v = r.optional(*mem, "layer_memory_total_mb", "execution_memory")) {
      const std::vector<double> mbs = r.numbers(*v, "execution_memory.layer_memory_total_mb", false);
      for (std::size_t l = 0; l < mbs.size(); ++l)
        held(mbs[l], "execution_memory.layer_memory_total_mb[" + std::to_string(l) + "]");
    }
  }

  auto expect_length = [&](std::size_t got, const char* key) {
    if (static_cast<int>(got) != f.num_layers) {
      throw InputError(f.path, key, "a list of " + std::to_string(got),
                       "one entry per layer: model.num_layers = " + std::to_string(f.num_layers));
    }
  };
  expect_length(f.param_bytes.size(), "model.parameters.parameters_per_layer_bytes");
  expect_length(f.layer_ms.size(), "execution_time.layer_compute_total_ms");
  return f;
}

// The table entries of one file for one device (conversion rules in the
// header): embedding, each layer, head; forward 1/3, backward 2/3.
void add_entries(ProfileTable& table, const MetisFile& f, const std::string& device, int seq) {
  const int last = f.num_layers - 1;
  for (int k = 0; k <= last; ++k) {
    const std::string op = k == 0 ? "embedding" : (k == last ? "lm_head" : "layer");
    const int layer = (k == 0 || k == last) ? -1 : k - 1;
    const double total_s = f.layer_ms[k] * 1e-3;
    table.add(ProfileKey{device, op, f.tp, f.bs, seq, layer}, total_s / 3);
    table.add(ProfileKey{device, op + "_backward", f.tp, f.bs, seq, layer}, 2 * total_s / 3);
  }
  // The measured head covers final norm and loss too: nothing of the head's
  // analytic elementwise work is left to add. Transformer layers never reach
  // this entry (each has its own "layer" entry in this configuration).
  table.add(ProfileKey{device, "elementwise", f.tp, f.bs, seq, -1}, 0.0);
  table.add(ProfileKey{device, "elementwise_backward", f.tp, f.bs, seq, -1}, 0.0);
  if (f.optimizer_ms >= 0) table.add(ProfileKey{device, "optimizer", f.tp, f.bs, seq, -1}, f.optimizer_ms * 1e-3);
}

}  // namespace

std::vector<std::string> metis_device_names(const std::string& type, const ClusterSpec& cluster) {
  if (std::string exact = exact_device(type, cluster); !exact.empty()) return {exact};
  const auto& table = metis_table();
  const auto it = table.find(fold(type));
  return it == table.end() ? std::vector<std::string>{} : it->second;
}

void add_metis_profiles(ProfileTable& table, const std::string& directory, const Problem& problem) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    throw InputError(directory, "", ec ? ec.message() : "not a directory", "a Metis profile directory");
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string extension = it->path().extension().string();
    if (extension == ".json") {
      files.push_back(it->path());
    } else if (extension.size() == 5 && std::equal(extension.begin(), extension.end(), ".json", [](char a, char b) {
                 return std::tolower(static_cast<unsigned char>(a)) == b;
               })) {
      // `.JSON` beside `.json` files: left out, a device's table was
      // missing from the search without a word.
      throw InputError(it->path().string(), "file name", it->path().filename().string(),
                       std::string("a profile file named ") + kNamePattern + " (the extension in lower case)");
    }
  }
  if (ec) throw InputError(directory, "", ec.message(), "a readable Metis profile directory");
  std::sort(files.begin(), files.end());  // deterministic errors and precedence
  if (files.empty()) {
    throw InputError(directory, "", "(no .json files)", std::string("profile files named ") + kNamePattern);
  }

  const std::regex name_re(R"(DeviceType\.(.+)_tp([0-9]+)_bs([0-9]+)\.json)");
  const int expected_layers = problem.model.layers + 2;
  // A Metis file records no sequence length: it is read as measured at the
  // model's own. At another (a training's seq_len: 4096 on a model of 2048)
  // its times had been taken as measured there, as fast as at 2048.
  if (problem.seq_len() != problem.model.seq_len)
    throw InputError(directory, "sequence length", std::to_string(problem.seq_len()) + " tokens (the training's)",
                     "the model's own " + std::to_string(problem.model.seq_len) +
                         " tokens: Metis profile files do not record the sequence length they measured, so they "
                         "are read as measured at the model's (or give a CSV profile, whose rows state seq_len)");
  std::vector<MetisFile> parsed;
  for (const fs::path& file : files) {
    const std::string name = file.filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, name_re)) throw InputError(file.string(), "file name", name, kNamePattern);
    parsed.push_back(parse_file(file, m));
    const MetisFile& f = parsed.back();
    // A tp the model cannot run measured another model (the CSV reader's
    // rule): its ratio to the analytic time would skew every correction.
    if (const auto v = stage_violation(problem.model, problem.seq_len(), problem.training.sequence_parallel, nullptr,
                                         StageDegrees{f.tp, 1, 1}, 1);
        v && v->rule == StageRule::tp_not_dividing_heads)
      throw InputError(f.path, "file name tp", std::to_string(f.tp),
                       "a tensor-parallel degree " + problem.model.name + " can run: " + v->allowed);
    const MetisFile& first = parsed.front();
    if (&f == &first) {
      if (f.num_layers != expected_layers) {
        throw InputError(f.path, "model.num_layers", std::to_string(f.num_layers),
                         std::to_string(expected_layers) + ": the embedding, the " +
                             std::to_string(problem.model.layers) + " layers of " + problem.model.name +
                             " and the output head");
      }
      check_layer_shape(f, problem.model);
    } else if (f.model_name != first.model_name || f.num_layers != first.num_layers) {
      throw InputError(f.path, "model", f.model_name + " with " + std::to_string(f.num_layers) + " layers",
                       "the same model as " + first.path + " (" + first.model_name + " with " +
                           std::to_string(first.num_layers) + " layers)");
    }
  }

  // Exact device names override Metis family names for one configuration;
  // two files of the same kind for one configuration are ambiguous.
  struct Source {
    std::string path;
    bool exact = false;
  };
  std::map<std::tuple<std::string, int, int>, Source> sources;
  const int seq = problem.seq_len();
  for (const bool exact_pass : {false, true}) {
    for (const MetisFile& f : parsed) {
      const bool exact = !exact_device(f.type, problem.cluster).empty();
      if (exact != exact_pass) continue;
      const std::vector<std::string> devices = metis_device_names(f.type, problem.cluster);
      if (devices.empty()) {
        std::string names;
        for (const auto& [k, v] : metis_table()) names += (names.empty() ? "" : " ") + k;
        throw InputError(f.path, "device type in the file name", f.type,
                         "a Metis device type (" + names + ") or a device name of the cluster or catalog");
      }
      for (const std::string& device : devices) {
        const auto key = std::make_tuple(device, f.tp, f.bs);
        if (const auto it = sources.find(key); it != sources.end() && it->second.exact == exact) {
          throw InputError(f.path, "file name", f.type + " tp" + std::to_string(f.tp) + " bs" + std::to_string(f.bs),
                           "one file per device, tp and bs; " + it->second.path + " already profiles " + device);
        }
        sources[key] = Source{f.path, exact};
        add_entries(table, f, device, seq);
      }
    }
  }
}

ProfileTable load_metis_profiles(const std::string& directory, const Problem& problem) {
  ProfileTable t;
  add_metis_profiles(t, directory, problem);
  return t;
}

}  // namespace autohaap
