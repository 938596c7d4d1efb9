// `autohaap search` (and `autohaap` alone): find the fastest feasible plan
// for a model on a cluster, print the top plans, the prune table on
// --explain, the best plan's breakdown and the summary block; write the plan.
//
// Started by an MPI launcher (mpirun, srun), the search runs distributed
// over the job's ranks (dist/distributed_search.hpp), and only rank 0
// prints and writes; with --checkpoint the same driver runs in one
// process. Otherwise it is run_search in this process, and MPI is never
// touched.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <type_traits>
#include <variant>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/dist/distributed_search.hpp"
#include "autohaap/dist/mpi_session.hpp"
#include "autohaap/dist/rank_report.hpp"
#include "autohaap/report/report_writer.hpp"
#include "autohaap/search/parallel.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/plan_printer.hpp"
#include "autohaap/search/cluster_merge.hpp"
#include "autohaap/search/refinement.hpp"
#include "autohaap/search/runtime_price.hpp"
#include "autohaap/search/search_space.hpp"
#include "autohaap/search/searcher.hpp"
#include "commands.hpp"
#include "problem_args.hpp"
#include "search_args.hpp"
#include "stop_signals.hpp"

namespace autohaap::cli {
namespace {

// One line, rewritten in place, only when stderr is a terminal.
class ProgressLine {
 public:
  // On a terminal the line is redrawn in place at every update; into a file
  // (a Slurm job's log, a batch script's redirect) a plain line is written
  // every kLogInterval seconds instead, so a long search still says how
  // far it is without flooding the log.
  explicit ProgressLine(bool shown_here = true)
      : enabled_(shown_here), terminal_(isatty(STDERR_FILENO) != 0) {}
  void update(const SearchProgress& p) {
    if (!enabled_) return;
    if (!terminal_) {
      if (p.elapsed_s < next_log_s_) return;
      next_log_s_ = p.elapsed_s + kLogInterval;
    }
    // best, the proven bound on the optimum and the gap between them
    // (a bound of 0 is none proven yet: "-").
    const bool found = p.best_iteration_s < 1e300;
    auto text = [](const char* format, double value) {
      char buf[32];
      std::snprintf(buf, sizeof buf, format, value);
      return std::string(buf);
    };
    const char* start = terminal_ ? "\r" : "progress ";
    const char* end = terminal_ ? "   " : "\n";
    if (p.initializing)
      std::fprintf(stderr, "%s[%6.1fs] initialization: tasks %lld/%lld  best %s%s", start, p.elapsed_s,
                   static_cast<long long>(p.done), static_cast<long long>(p.total),
                   found ? text("%.6g s", p.best_iteration_s).c_str() : "-", end);
    else
      std::fprintf(stderr, "%s[%6.1fs] skeletons %lld/%lld  evaluated %lld  pruned %lld  best %s  bound %s  gap %s%s",
                   start, p.elapsed_s, static_cast<long long>(p.done), static_cast<long long>(p.total),
                   static_cast<long long>(p.evaluated), static_cast<long long>(p.pruned),
                   found ? text("%.6g s", p.best_iteration_s).c_str() : "-",
                   p.bound_s > 0 ? text("%.6g s", p.bound_s).c_str() : "-",
                   found ? text("%.2f%%", 100 * search_gap(p.best_iteration_s, p.bound_s)).c_str() : "-", end);
    std::fflush(stderr);
    shown_ = terminal_;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  static constexpr double kLogInterval = 60;
  bool enabled_;
  bool terminal_;
  bool shown_ = false;
  double next_log_s_ = kLogInterval;
};

// With `by_source` (measured profiles given), a column says where each
// plan's times come from: such plans rank by it first (refine_plans), so a
// faster analytic plan may be listed below a measured one.
std::string format_top_table(const std::vector<Plan>& top, bool by_source) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-4s %12s %12s %7s %6s %4s  %s%s\n", "rank", "iteration s", "tokens/s", "MFU",
                "stages", "B", by_source ? "times      " : "", "pipeline");
  out += buf;
  for (std::size_t i = 0; i < top.size(); ++i) {
    const Plan& p = top[i];
    std::string pipeline;
    for (const StagePlan& s : p.stages) {
      if (!pipeline.empty()) pipeline += " > ";
      pipeline += stage_summary(s) + "[" + std::to_string(s.num_layers()) + "]";
    }
    if (p.vpp > 1) pipeline += "  (vpp " + std::to_string(p.vpp) + ")";
    std::snprintf(buf, sizeof buf, "%-4zu %12.4f %12.0f %7.4f %6zu %4d  ", i + 1, p.predicted.iteration_time_s,
                  p.predicted.tokens_per_s, p.predicted.mfu, p.stages.size(), p.micro_batch_size);
    out += buf;
    if (by_source) {
      std::snprintf(buf, sizeof buf, "%-11s", to_string(p.predicted.time_source));
      out += buf;
    }
    out += pipeline + "\n";
  }
  return out;
}

// The fastest plan of `top` timed less measured than the best (analytic
// where the best is measured or corrected), when it is faster than the
// best: what ranking by time source passed over.
const Plan* faster_less_measured(const std::vector<Plan>& top) {
  const Plan* fastest = nullptr;
  for (const Plan& p : top)
    if (p.predicted.time_source > top.front().predicted.time_source &&
        p.predicted.iteration_time_s < top.front().predicted.iteration_time_s &&
        (!fastest || p.predicted.iteration_time_s < fastest->predicted.iteration_time_s))
      fastest = &p;
  return fastest;
}

std::string format_prune_table(const PruneReport& r) {
  std::string out = "candidate skeletons: " + std::to_string(r.considered) + ", kept after initialization: " +
                    std::to_string(r.kept) + "\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-40s %14s\n", "rule", "removed");
  out += buf;
  for (const auto& [rule, count] : r.rows()) {
    std::snprintf(buf, sizeof buf, "%-40s %14lld\n", rule.c_str(), static_cast<long long>(count));
    out += buf;
  }
  return out;
}

// The problem and the flags checked: everything that can be wrong with
// the input, before any search starts.
Problem load_search_problem(const SearchArgs& a) {
  ProblemArgs pa = a.problem;
  if (pa.model.empty()) pa.model = "llama3-8b";
  if (pa.cluster.empty()) pa.cluster = kDefaultClusterName;
  Problem problem = load_problem_args(pa);
  // More node groups than one search takes, once identical ones are one
  // (cluster_merge.hpp, as the search merges them): said of the cluster's
  // file (the search itself knows the cluster by its name alone).
  const std::size_t distinct_groups = merge_identical_groups(problem.cluster).cluster.groups.size();
  if (const std::string why = group_count_violation(distinct_groups); !why.empty())
    throw InputError(pa.cluster, "groups",
                     std::to_string(distinct_groups) +
                         (distinct_groups < problem.cluster.groups.size() ? " distinct node groups" : " node groups"),
                     why);
  // The option table's checks, an error naming the flag. NaN and infinity
  // fail them (a NaN time limit once meant no limit).
  validate_flags(a.settings);
  if (problem.runnable_by != RunnableBy::any && a.settings.search.strategy == "metis")
    throw InputError("command line", "--runnable", to_string(problem.runnable_by),
                     "any with --strategy metis (the Metis baseline searches its own space)");
  if (problem.runnable_by != RunnableBy::any) {
    // The comparison searches the unrestricted space with the same
    // strategy, after the restricted plan is written: a strategy that would
    // refuse it is refused now, before any plan is.
    Problem unrestricted = problem;
    unrestricted.runnable_by = RunnableBy::any;
    SearchOptions limits;
    static_cast<SearchSettings&>(limits) = a.settings.search;
    if (const std::string why = strategy_size_violation(unrestricted, limits, a.settings.search.strategy);
        !why.empty())
      throw InputError("command line", "--runnable", to_string(problem.runnable_by),
                       "any with --strategy " + a.settings.search.strategy +
                           " on this problem (the comparison searches the unrestricted space with it too: " + why +
                           ")");
  }
  // A bad extension fails before the search.
  if (!a.out.empty()) check_plan_file_name(a.out, "-o");
  if (!a.report.empty()) report_format_for(a.report, "--report");
  // What is written after the search must be writable before it starts,
  // each to a file of its own.
  check_outputs_apart({{"-o", a.out}, {"--report", a.report}, {"--checkpoint", a.settings.distributed.checkpoint_path}},
                      input_files(a.problem));
  check_overwrites_only(a.out, "-o", "plan");
  check_overwrites_only_output(a.report, "--report", "report", {"<title>" + std::string(kReportTitle)});
  for (const std::string* path : {&a.out, &a.report, &a.settings.distributed.checkpoint_path}) {
    if (path->empty()) continue;
    check_writable(*path);
    // A run killed while writing left its temporary beside the file (tens
    // of MB a checkpoint): gone once nothing has written to it for 10 minutes.
    if (const int n = remove_abandoned_temporaries(*path); n > 0)
      std::cerr << "note: removed " << n << " temporary file" << (n > 1 ? "s" : "") << " a killed run left beside "
                << *path << "\n";
  }
  return problem;
}

SearchOptions search_options(const SearchArgs& a, const std::atomic<bool>& stop,
                             const std::shared_ptr<ProgressLine>& progress) {
  SearchOptions options;
  static_cast<SearchSettings&>(options) = a.settings.search;
  options.cancel = &stop;
  options.progress = [progress](const SearchProgress& p) { progress->update(p); };
  options.initialization_progress = options.progress;
  return options;
}

// One row of the option table as a flag: bound to its member, whose
// initializer is the default --help shows; a switch on by default is
// turned off by --no-NAME. Ranges are checked after parsing
// (validate_flags), so the CLI and the manifest refuse a value alike; a
// choice is also offered to CLI11, which lists it in --help.
void add_flag_for(CLI::App* cmd, const SearchOption& option, SearchConfig& settings) {
  const std::string names =
      option.short_flag.empty() ? flag_name(option) : std::string(option.short_flag) + "," + flag_name(option);
  const std::string help(option.help);
  std::visit(
      [&](auto member) {
        auto& value = setting(settings, member);
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (value) cmd->add_flag_callback(names, [&value] { value = false; }, help);
          else cmd->add_flag(names, value, help);
        } else {
          CLI::Option* flag = cmd->add_option(names, value, help)->capture_default_str();
          if (option.range.choices) flag->check(CLI::IsMember(option.range.choices()));
        }
      },
      option.member);
}

// `--inject-failure RANK:WHERE` (tests only).
dist::InjectedFailure parse_injected_failure(const std::string& text) {
  dist::InjectedFailure failure;
  if (text.empty()) return failure;
  const std::size_t colon = text.find(':');
  const std::string rank = text.substr(0, colon), where = colon == std::string::npos ? "" : text.substr(colon + 1);
  const bool digits = !rank.empty() && rank.size() < 6 &&
                      std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || (where != "search" && where != "exchange" && where != "input"))
    throw InputError("command line", "--inject-failure", text, "RANK:search, RANK:exchange or RANK:input");
  failure.rank = std::stoi(rank);
  failure.where = where == "search"     ? dist::InjectedFailure::Where::search
                  : where == "exchange" ? dist::InjectedFailure::Where::exchange
                                        : dist::InjectedFailure::Where::input;
  return failure;
}

void print_header(const Problem& problem, const SearchArgs& a, const std::string& where) {
  std::cout << "AutoHAAP search: " << problem.model.name << " on " << problem.cluster.name << " ("
            << problem.cluster.total_gpus() << " GPUs in " << problem.cluster.groups.size()
            << " groups), global batch " << problem.training.global_batch << ", strategy " << a.settings.search.strategy << where
            << "\n" << device_notes(problem);
  // TBB runs no more workers than the process's hardware threads (a rank
  // under mpirun may be bound to fewer): said, not silently cut.
  const int hardware = parallel::hardware_threads();
  if (a.settings.search.threads > hardware)
    std::cout << "note: -j " << a.settings.search.threads << ": this process has " << hardware << " hardware thread"
              << (hardware > 1 ? "s" : "") << " and runs that many workers\n";
}

// The tables, the plan file and the summary block; returns the exit code.
// `options` runs the unrestricted search a --runnable comparison needs.
int print_result(const Problem& problem, const SearchArgs& a, const SearchResult& searched,
                 const SearchOptions& options) {
  if (a.explain) std::cout << "\n" << format_prune_table(searched.prune);
  // The search's own best goes to the plan file at once: refining it below
  // can take seconds, and a launcher that was told to stop (mpirun kills its
  // ranks a second after passing on SIGTERM) must still leave a plan. The
  // refined plan replaces it (both writes are atomic).
  if (!a.out.empty() && !searched.top.empty()) write_plan(searched.top.front(), a.out, problem);
  // Interleaving, context parallelism and the uniform plans on the plans
  // found (search/refinement.hpp says why after the search).
  const CostModel model(problem);
  const FinishedSearch finished = finish_search(model, searched, a.settings.search, options.cancel);
  const std::vector<Plan>& top = finished.plans;
  const SearchResult& result = finished.result;
  if (!result.stop_reason.empty()) std::cout << "\nsearch stopped early: " << result.stop_reason << "\n";
  if (result.status != searched.status)
    std::cout << "\nrefinement stopped early (" << result.stopped_by
              << "): the search ended, but its plans' refinement (cp, vpp, idle GPUs as replica sets) did not\n";
  std::vector<std::pair<std::string, std::string>> extra;
  if (!result.stopped_by.empty()) extra.emplace_back("stopped_by", result.stopped_by);
  std::string price_table;
  std::vector<ComparedPlan> compared;
  if (problem.runnable_by != RunnableBy::any) {
    // What the restriction costs, against the same search unrestricted and
    // the uniform plans a user would write by hand.
    std::optional<Plan> best;
    if (!top.empty()) best = top.front();
    const RuntimePrice price = runtime_price(problem, options, best);
    price_table = format_runtime_price(price, best, problem.runnable_by) + "\n";
    for (const PriceRow& r : price_rows(price, best, problem.runnable_by))
      compared.push_back({r.label, r.plan ? r.plan->predicted.iteration_time_s : 0.0, r.versus_best,
                          r.plan ? pipeline_summary(*r.plan) : std::string()});
    extra.emplace_back("runnable", to_string(problem.runnable_by));
    auto seconds = [](const std::optional<Plan>& p) {
      if (!p) return std::string("none");
      char text[32];
      std::snprintf(text, sizeof text, "%.6g", p->predicted.iteration_time_s);
      return std::string(text);
    };
    extra.emplace_back("unrestricted_time_s", seconds(price.unrestricted));
    extra.emplace_back("uniform_all_time_s", seconds(price.uniform_all_gpus));
    extra.emplace_back("uniform_alone_time_s", seconds(price.uniform_fastest_device));
  }
  if (top.empty()) {
    std::cout << "\nno feasible plan: " << result.infeasible_reason << "\n" << (price_table.empty() ? "" : "\n")
              << price_table;
    // Nothing is written; a file already there is an earlier run's answer,
    // which a script reading it after this run must not take for this one.
    std::error_code ec;
    if (!a.out.empty() && std::filesystem::exists(a.out, ec))
      std::cerr << "note: no plan written; " << a.out << " is left as it was and holds an earlier plan, not this "
                << "search's\n";
    Plan empty;
    empty.model = problem.model.name;
    empty.cluster = problem.cluster.name;
    empty.search = result.stats;
    std::cout << format_summary_block(empty, result.status, extra);
    return exit_code(result.status);
  }
  const Plan& best = top.front();
  // Files first: a stopped run whose standard output is gone (its launcher
  // was killed) still leaves its plan.
  if (!a.out.empty()) write_plan(best, a.out, problem);  // self-contained: with its specs
  if (!a.report.empty()) write_report(model, best, a.report, compared);
  const bool by_source = !problem.profiles.empty();
  std::string ranking_note;
  if (by_source) {
    extra.emplace_back("ranked_by", "time source (measured, corrected, analytic), then time: --profiles");
    if (const Plan* faster = faster_less_measured(top)) {
      char text[512];
      std::snprintf(text, sizeof text, "%.6g", faster->predicted.iteration_time_s);
      extra.emplace_back("faster_below_s", text);
      std::snprintf(text, sizeof text,
                    "note: with --profiles, plans timed on measured or corrected points rank before less measured "
                    "ones, and the bound and gap are of those; a plan listed below, timed %s, is faster (%.4f s "
                    "against %.4f s) by a model the profiles show to be optimistic where they measure\n",
                    to_string(faster->predicted.time_source), faster->predicted.iteration_time_s,
                    best.predicted.iteration_time_s);
      ranking_note = text;
    }
  }
  std::cout << "\ntop " << top.size() << " plan" << (top.size() > 1 ? "s" : "") << "\n"
            << format_top_table(top, by_source) << ranking_note << "\nbest plan\n"
            << format_stage_table(model, best) << "\nmemory per GPU (GiB)\n"
            << format_memory_table(model, best) << "\n";
  if (!a.out.empty()) std::cout << "plan written to " << a.out << "\n";
  if (!a.report.empty()) std::cout << "report written to " << a.report << "\n";
  std::cout << price_table << format_summary_block(best, result.status, extra);
  return exit_code(result.status);
}

int run_single_process(const SearchArgs& a, const std::atomic<bool>& stop) {
  const Problem problem = load_search_problem(a);
  auto progress = std::make_shared<ProgressLine>();
  const SearchOptions options = search_options(a, stop, progress);
  print_header(problem, a, "");
  const SearchResult result = run_search(problem, options);
  progress->finish();
  return print_result(problem, a, result, options);
}

// Every rank runs this. MPI starts only under a launcher; errors that some
// ranks may see alone (inputs) are agreed on before anyone searches.
int run_distributed(const SearchArgs& a, const std::atomic<bool>& stop) {
  std::optional<dist::MpiSession> mpi;
  if (dist::started_by_mpi_launcher()) mpi.emplace();
  const bool root = !mpi || mpi->rank() == 0;
  const int ranks = mpi ? mpi->size() : 1;

  Problem problem;
  dist::InjectedFailure injected;
  auto load = [&] {
    problem = load_search_problem(a);
    injected = parse_injected_failure(a.inject_failure);
  };
  if (!mpi) {
    load();  // an error reaches main() like any command's
  } else if (auto failure = mpi->first_failure(load)) {
    if (root) std::cerr << "error: " << failure->message << "\n";
    return failure->exit_code;
  }

  auto progress = std::make_shared<ProgressLine>(root);
  dist::DistributedOptions options;
  static_cast<dist::DistributedSettings&>(options) = a.settings.distributed;
  options.search = search_options(a, stop, progress);
  // Rank 0 saves the search's best before its final checkpoint (see
  // print_result: the refined plan replaces it).
  // A failure to write is not reported here, inside the ranks' collective
  // step: print_result writes the file again and reports it.
  if (root && !a.out.empty()) {
    options.search.ended = [&a, &problem](const Plan& best) {
      try {
        write_plan(best, a.out, problem);
      } catch (const std::exception&) {
      }
    };
  }
  options.note = [](const std::string& line) { std::cout << line << "\n" << std::flush; };
  options.inject_failure = injected;
  if (root) print_header(problem, a, ", " + std::to_string(ranks) + " rank" + (ranks > 1 ? "s" : ""));

  const dist::DistributedResult r = dist::run_distributed_search(problem, options, mpi ? &*mpi : nullptr);
  progress->finish();
  if (r.failure) {
    if (root) std::cerr << "error: " << r.failure->message << "\n";
    return r.failure->exit_code;
  }
  if (!root) return exit_code(r.result.status);
  if (a.rank_report) std::cout << "\nper-rank report\n" << dist::format_rank_table(r.ranks);
  if (!a.settings.distributed.checkpoint_path.empty()) {
    // A search stopped during its initialization has no chunks yet: what
    // the file holds then is the initialization's progress, if any.
    if (r.chunks > 0)
      std::cout << "\ncheckpoint: " << r.chunks << " chunks, " << r.chunks_restored << " restored, "
                << r.chunks_searched << " searched in this run\n";
    else if (r.checkpoints_written > 0)
      std::cout << "\ncheckpoint: the initialization's progress saved to " << a.settings.distributed.checkpoint_path
                << " (a rerun goes on from it)\n";
    else
      std::cout << "\ncheckpoint: nothing saved (stopped before a round of the initialization ended)\n";
  }
  // Every collective is over: an error from here on (say, an unwritable
  // --out) ends this rank alone, like a one-process run.
  try {
    return print_result(problem, a, r.result, options.search);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitInvalidInput;
  }
}

}  // namespace

int run_search_command(const SearchArgs& a) {
  const std::atomic<bool>& stop = install_stop_signals();
  // A checkpoint needs the MPI synchronizer (it keeps the file), even in one
  // process.
  if (dist::started_by_mpi_launcher() || !a.settings.distributed.checkpoint_path.empty()) return run_distributed(a, stop);
  return run_single_process(a, stop);
}

void add_search_options(CLI::App* cmd, SearchArgs& a) {
  add_problem_options(cmd, a.problem, false);
  for (const SearchOption& option : kSearchOptions) add_flag_for(cmd, option, a.settings);
  cmd->add_flag("--explain", a.explain, "print how many candidates each pruning rule removed");
  cmd->add_flag("--profiles-only", a.problem.profiles_only,
                "search only the devices, tp and micro-batches the --profiles measure");
  cmd->add_option("--runnable", a.problem.runnable,
                  "any: every plan AutoHAAP can score; megatron: only plans stock Megatron-LM runs (one tp, cp, dp "
                  "and recompute mode; any layer split and device order), compared with the unrestricted best")
      ->capture_default_str()
      ->check(CLI::IsMember(runnable_by_names()));
  cmd->add_option("-o,--out", a.out, "write the best plan here (.json or .yaml)");
  cmd->add_option("--report", a.report, "write a picture of the best plan (.svg, or .html with its tables)");
  cmd->add_flag("--rank-report", a.rank_report, "print what each MPI rank did (share, work, cache, traffic, time)");
  // Not in --help: the MPI tests make one rank fail on purpose with it.
  cmd->add_option("--inject-failure", a.inject_failure, "testing: make rank RANK fail at search, exchange or input")
      ->group("");
}

CLI::App* register_search_command(CLI::App& app, CommandAction& action, CommandAction& default_action) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand("search", "find the fastest feasible plan (default command)");
  add_search_options(cmd, *a);
  action = [a] { return run_search_command(*a); };
  default_action = [] { return run_search_command(SearchArgs{}); };
  return cmd;
}

}  // namespace autohaap::cli
