#include "problem_args.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <set>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/cost/layer_work.hpp"
#include "autohaap/specs/parallel_rules.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/metis_profile.hpp"
#include "autohaap/io/profile_loader.hpp"
#include "autohaap/io/spec_loader.hpp"

namespace autohaap::cli {

void add_problem_options(CLI::App* cmd, ProblemArgs& p, bool required) {
  auto* m = cmd->add_option("-m,--model", p.model, "model: catalog name (e.g. llama3-8b) or YAML file");
  auto* c = cmd->add_option("-c,--cluster", p.cluster, "cluster: catalog name or YAML file");
  if (required) {
    m->required();
    c->required();
  }
  cmd->add_option("-t,--train", p.train, "training settings: catalog name or YAML file (default: built-in)");
  cmd->add_option("--profiles", p.profiles,
                  "measured latencies: a CSV file, or a Metis profile directory (DeviceType.<T>_tp<N>_bs<B>.json)");
}

std::string device_notes(const Problem& p, const Plan* plan) {
  std::string notes;
  const Precision precision = p.training.precision;
  // With a plan, only the devices its stages run on.
  std::set<std::string> used;
  if (plan)
    for (const StagePlan& s : plan->stages) {
      used.insert(s.device);
      for (const ReplicaSet& r : s.replicas) used.insert(r.device);
    }
  // The model's heads where the fused kernels run them otherwise than
  // their FLOPs say (layer_work.hpp, fused_attention_head_dim;
  // specs/parallel_rules.hpp, kMaxFusedHeadDim).
  const int head_dim = p.model.head_dim(), kernel_dim = fused_attention_head_dim(head_dim);
  if (p.model.flash_attention && p.model.family != ModelFamily::generic) {
    if (head_dim > kMaxFusedHeadDim && p.training.runtime != Runtime::fsdp)
      notes += "note: " + p.model.name + "'s heads are " + std::to_string(head_dim) + " wide, past the " +
               std::to_string(kMaxFusedHeadDim) +
               " the fused attention kernels take: its attention runs unfused, its scores through memory\n";
    else if (head_dim <= kMaxFusedHeadDim && kernel_dim != head_dim)
      notes += "note: " + p.model.name + "'s heads are " + std::to_string(head_dim) +
               " wide; fused attention runs them in its kernel for " + std::to_string(kernel_dim) +
               ", at the cost of that width\n";
  }
  std::set<std::string> seen;
  for (const NodeGroup& g : p.cluster.groups) {
    const DeviceSpec& d = g.device;
    if (plan && !used.count(d.name)) continue;
    if (!seen.insert(d.name).second) continue;
    const std::string sixteen = d.has_bf16 ? "BF16" : "FP16";
    if (precision == Precision::fp8 && !gemms_in_fp8(precision, d))
      notes += "note: " + d.name + " has no FP8; its stages run their GEMMs in " + sixteen + " at its " + sixteen +
               " peak\n";
    else if ((precision == Precision::bf16 || precision == Precision::fp8) && !d.has_bf16)
      notes += "note: " + d.name + " has no BF16; its stages are costed in FP16 at its FP16 peak\n";
    if (precision == Precision::tf32 && d.peak_tf32_tflops <= 0)
      notes += "note: " + d.name + " has no TF32 tensor cores; its stages are costed at its FP32 peak\n";
    // An asked-for FlashAttention-3/cuDNN kernel where the device has none
    // (attention_kernel_on: Hopper's only) runs FlashAttention-2.
    if (p.model.flash_attention && p.training.attention_kernel == AttentionKernel::flash3 &&
        d.flash3_forward_efficiency <= 0)
      notes += "note: " + d.name + " has no FlashAttention-3/cuDNN fused attention (attention_kernel: flash3); its "
               "stages' attention is costed as FlashAttention-2\n";
    // Figures no measured training run has checked (catalog.cpp,
    // ArchitectureProfile::checked_against): said, not silently trusted.
    const ArchitectureProfile& arch = architecture_profile(d.architecture);
    if (*arch.checked_against == '\0' && uses_architecture_defaults(d))
      notes += "note: " + d.name + " (" + arch.name +
               "): no published training run checks this generation's efficiency figures, which are kernel rates "
               "alone; its times may be optimistic (a device file from its own measurements: autohaap device "
               "--measured)\n";
  }
  // Measured profiles far slower than the analytic model: a units slip
  // more often than not (kImplausiblySlowFactor).
  if (!p.profiles.empty())
    for (const CorrectionFactor& c : CostModel(p).profile_correction().factors()) {
      if (c.factor <= kImplausiblySlowFactor || (plan && !used.count(c.device))) continue;
      char line[512];
      std::snprintf(line, sizeof line,
                    "warning: the measured profile's %s '%s' times are a median %.0fx the analytic model's (x%.1f.."
                    "x%.1f over %d points): check their unit (latency_ms is milliseconds; microseconds read as "
                    "1000x)\n",
                    c.device.c_str(), c.op.c_str(), c.factor, c.min_ratio, c.max_ratio, c.points);
      notes += line;
    }
  return notes;
}

ProfileTable load_profiles_arg(const std::string& profiles, const Problem& problem) {
  // A directory is Metis's layout (one JSON file per device, tp and
  // micro-batch); a file is AutoHAAP's own CSV table.
  std::error_code ec;
  ProfileTable table;
  if (std::filesystem::is_directory(profiles, ec)) {
    table = load_metis_profiles(profiles, problem);
  } else {
    table = load_profile_csv(profiles);
    check_profile_fits(table, problem, profiles);
  }
  check_profile_serves_cluster(table, problem, profiles);
  return table;
}

Problem load_problem_args(const ProblemArgs& a) {
  Problem p = load_problem(a.model, a.cluster, a.train);
  if (!a.profiles.empty()) {
    p.profiles = load_profiles_arg(a.profiles, p);
    // Every point against the time its device's peaks allow, which the cost
    // model checks as it fits its corrections: named by the file here.
    try {
      const CostModel check(p);
    } catch (const InputError& e) {
      if (!e.file().empty() || e.key() != "latency_ms") throw;
      throw InputError(a.profiles, e.key(), e.value(), e.allowed());
    }
  }
  if (a.profiles_only && a.profiles.empty())
    throw InputError("command line", "--profiles-only", "set", "only with --profiles (the measurements to keep to)");
  p.profiles_only = a.profiles_only;
  const auto runnable = parse_runnable_by(a.runnable);
  if (!runnable) throw InputError("command line", "--runnable", a.runnable, "any or megatron");
  p.runnable_by = *runnable;
  if (p.runnable_by == RunnableBy::megatron && p.training.zero > kMegatronMaxZero)
    throw InputError(a.train.empty() ? "built-in training settings" : a.train, "zero", std::to_string(p.training.zero),
                     "0 or 1 with --runnable megatron (Megatron-LM's --use-distributed-optimizer is ZeRO-1)");
  return p;
}

Recompute parse_recompute(const std::string& value, const std::string& flag) {
  if (auto r = autohaap::parse_recompute(value)) return *r;
  throw InputError("command line", flag, value, "none, selective or full");
}

namespace {

// Whether two names are one file: the same inode where both exist, else
// the same path once made absolute and normal (weakly_canonical alone
// leaves a relative name whose first part does not exist as it is, so
// `a.json` and `./a.json` differed), a symbolic link to a file not yet
// written followed to its target (weakly_canonical stops at it, so a
// checkpoint named by a link to the -o file was taken for another file).
bool same_file(const std::string& x, const std::string& y) {
  namespace fs = std::filesystem;
  std::error_code ex, ey;
  if (fs::exists(x, ex) && fs::exists(y, ey)) return fs::equivalent(x, y, ex) && !ex;
  auto normal = [](const std::string& name, std::error_code& ec) {
    fs::path whole = fs::absolute(name, ec);
    if (ec) return whole;
    // 40 links at most, as the kernel follows (ELOOP past it).
    for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(whole, ec)) && !ec; ++hops) {
      const fs::path target = fs::read_symlink(whole, ec);
      if (ec) return whole;
      whole = target.is_absolute() ? target : whole.parent_path() / target;
    }
    ec.clear();
    return fs::weakly_canonical(whole, ec);
  };
  const fs::path px = normal(x, ex), py = normal(y, ey);
  return !ex && !ey && px == py;
}

}  // namespace

std::vector<FlagPath> input_files(const ProblemArgs& args) {
  std::vector<FlagPath> files;
  std::error_code ec;
  for (const FlagPath& f : {FlagPath{"--model", args.model}, FlagPath{"--cluster", args.cluster},
                            FlagPath{"--train", args.train}, FlagPath{"--profiles", args.profiles}})
    if (!f.path.empty() && std::filesystem::exists(f.path, ec)) files.push_back(f);
  return files;
}

void check_outputs_apart(const std::vector<FlagPath>& outputs, const std::vector<FlagPath>& inputs) {
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    if (outputs[j].path.empty()) continue;
    for (std::size_t i = 0; i < j; ++i)
      if (!outputs[i].path.empty() && same_file(outputs[i].path, outputs[j].path))
        throw InputError("command line", outputs[j].flag, outputs[j].path,
                         std::string("a file other than ") + outputs[i].flag + "'s (each output is a file of its own)");
    for (const FlagPath& in : inputs)
      if (!in.path.empty() && same_file(in.path, outputs[j].path))
        throw InputError("command line", outputs[j].flag, outputs[j].path,
                         std::string("a file other than the input ") + in.flag + " reads");
  }
}

namespace {

// Whether an output at `path` would replace something: a file that is not
// empty (a new name or an empty file replaces nothing).
bool replaces_something(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty() || !fs::is_regular_file(path, ec)) return false;
  const auto size = fs::file_size(path, ec);
  return !ec && size > 0;
}

[[noreturn]] void refuse_overwrite(const std::string& path, const char* flag, const std::string& output,
                                   const std::string& kind) {
  throw InputError("command line", flag, path,
                   "a new file or an earlier " + output + ", not " +
                       (kind.empty() ? std::string("a file of another kind") : "a " + kind + " file") + " (the " +
                       output + " would overwrite it)");
}

}  // namespace

void check_overwrites_only(const std::string& path, const char* flag, const char* own_kind) {
  if (!replaces_something(path)) return;
  const std::string kind = input_kind(path);
  if (kind != own_kind) refuse_overwrite(path, flag, own_kind, kind);
}

void check_overwrites_only_output(const std::string& path, const char* flag, const char* output,
                                  const std::vector<std::string>& marks) {
  if (!replaces_something(path)) return;
  std::string head;
  try {
    head = read_file(path).substr(0, 4096);
  } catch (const std::exception&) {
    head.clear();
  }
  for (const std::string& mark : marks)
    if (head.find(mark) != std::string::npos) return;
  refuse_overwrite(path, flag, output, input_kind(path));
}

}  // namespace autohaap::cli
