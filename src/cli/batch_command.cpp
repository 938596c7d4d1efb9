// `autohaap batch MANIFEST --out DIR`: plan every entry of a sweep or fleet
// manifest (jobs/*.yaml), or one entry (--index, a Slurm array task id) or
// a shard of them, skipping entries whose inputs did not change; print one
// line per entry and a summary block. `--count` and `--list` only read the
// manifest, so a submit script can size its job array; with --index or
// --shard they count or list the entries those select.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "autohaap/batch/manifest.hpp"
#include "autohaap/batch/runner.hpp"
#include "autohaap/batch/selection.hpp"
#include "autohaap/error.hpp"
#include "autohaap/search/search_options.hpp"
#include "commands.hpp"
#include "stop_signals.hpp"

namespace autohaap::cli {
namespace {

struct BatchArgs {
  std::string manifest;
  std::string out;
  std::optional<long long> index;  // not given: every entry (or --shard's)
  std::string shard;
  std::optional<int> threads;      // not given: the manifest's
  std::string cache;
  bool count = false;
  bool list = false;
};

std::string entry_line(const EntryResult& r, std::size_t position, std::size_t selected) {
  char head[64];
  std::snprintf(head, sizeof head, "[%zu/%zu] ", position, selected);
  std::string line = head + r.name + ": " + to_string(r.status);
  if (r.status == EntryStatus::skipped) line += std::string(" (unchanged; ") + to_string(r.outcome) + ")";
  if (r.outcome == EntryStatus::found) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %.6g s/iteration  MFU %.4f  %d GPUs in %d stage%s", r.iteration_time_s, r.mfu,
                  r.gpus, r.stages, r.stages == 1 ? "" : "s");
    line += buf;
  }
  if (r.status != EntryStatus::skipped) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "  (%.2f s)", r.wall_s);
    line += buf;
  }
  // The note of a result kept from an earlier run too: a plan a time limit
  // stopped (best so far, with its proven gap) had read as a plain "found".
  if (!r.error.empty()) line += "\n    " + r.error;
  return line;
}

int run_batch_command(const BatchArgs& a) {
  const std::atomic<bool>& stop = install_stop_signals();
  if (a.threads && (*a.threads < 0 || *a.threads > kMaxThreads))
    throw InputError("command line", "--threads", std::to_string(*a.threads), "0 (all cores) to 4096");
  const Manifest manifest = load_manifest(a.manifest);
  // --index and --shard are checked first: --count and --list answer for
  // the entries they select (what a Slurm task of the array would run).
  EntrySelection selection = EntrySelection::all();
  if (a.index || !a.shard.empty()) {
    if (a.index && !a.shard.empty())
      throw InputError("command line", "--index / --shard", "both", "at most one of --index and --shard");
    if (a.index && *a.index < 0)
      throw InputError("command line", "--index", std::to_string(*a.index),
                       "an entry index from 0 (the manifest has " + std::to_string(manifest.entries.size()) +
                           " entries; --list shows them)");
    selection = a.shard.empty() ? EntrySelection::one(*a.index) : parse_shard(a.shard);
  }
  const std::vector<std::size_t> selected = select_entries(manifest.entries.size(), selection);
  if (a.count) {
    std::cout << selected.size() << "\n";
    return kExitOk;
  }
  if (a.list) {
    for (const std::size_t i : selected) std::cout << i << " " << manifest.entries[i].name << "\n";
    return kExitOk;
  }
  if (a.out.empty()) throw InputError("command line", "--out", "(missing)", "an output folder (or --count / --list)");

  std::cout << "AutoHAAP batch: " << manifest.name << " (" << manifest.path << "), " << manifest.entries.size()
            << " entries, running " << describe(selection) << " (" << selected.size() << "), strategy "
            << manifest.options.strategy << ", output " << a.out << "\n"
            << std::flush;

  BatchRunOptions options;
  options.out_dir = a.out;
  options.cache_dir = a.cache;
  options.threads = a.threads.value_or(-1);
  options.cancel = &stop;
  options.on_entry = [](const EntryResult& r, std::size_t position, std::size_t count) {
    std::cout << entry_line(r, position, count) << "\n" << std::flush;
  };
  options.on_warning = [](const std::string& message) { std::cerr << "warning: " << message << "\n"; };

  const BatchReport report = run_batch(manifest, selected, options);

  if (report.interrupted) std::cout << "interrupted: the entry in progress was not recorded\n";
  const BatchSummary& s = report.summary;
  std::cout << "== AutoHAAP batch summary ==\n"
            << "manifest            : " << manifest.name << "\n"
            << "selected            : " << selected.size() << "\n"
            << "found               : " << report.count(EntryStatus::found) << "\n"
            << "infeasible          : " << report.count(EntryStatus::infeasible) << "\n"
            << "failed              : " << report.count(EntryStatus::failed) << "\n"
            << "skipped             : " << report.count(EntryStatus::skipped) << "\n"
            << "interrupted         : " << (report.interrupted ? "yes" : "no") << "\n"
            << "batch_entries       : " << s.rows.size() << "\n"
            << "batch_pending       : " << s.count(EntryStatus::pending) << "\n"
            << "summary             : " << a.out << "/summary.csv\n"
            << "== end batch summary ==\n";
  return report.exit_code();
}

}  // namespace

CLI::App* register_batch_command(CLI::App& app, CommandAction& action) {
  auto a = std::make_shared<BatchArgs>();
  auto* cmd = app.add_subcommand(
      "batch",
      "plan every entry of a sweep or fleet manifest; skips entries whose inputs did not change.\n"
      "Exit 0 when every entry is found, infeasible or skipped; 1 when any failed; 2 invalid manifest or flags;\n"
      "4 interrupted");
  cmd->add_option("manifest", a->manifest, "manifest file (jobs/*.yaml)")->required();
  cmd->add_option("-o,--out", a->out, "output folder: <entry>.json plans, results/, summary.csv/.json, cache/");
  cmd->add_option("--index", a->index, "run only entry I (0-based; e.g. $SLURM_ARRAY_TASK_ID)");
  cmd->add_option("--shard", a->shard, "run only entries whose index is I modulo N (I/N, 0 <= I < N)");
  cmd->add_option("-j,--threads", a->threads, "worker threads per search (default: the manifest's; 0: all cores)");
  cmd->add_option("--cache", a->cache, "latency cache folder, one file per problem (default: <out>/cache)");
  cmd->add_flag("--count", a->count, "print the number of entries (those --index or --shard select) and exit");
  cmd->add_flag("--list", a->list, "print each entry's index and name (those --index or --shard select) and exit")
      ->excludes("--count");
  action = [a] { return run_batch_command(*a); };
  return cmd;
}

}  // namespace autohaap::cli
