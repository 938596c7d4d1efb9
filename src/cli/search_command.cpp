// `autohaap search` (and `autohaap` alone): find the fastest feasible plan
// for a model on a cluster, print the top plans, the prune table on
// --explain, the best plan's breakdown and the summary block; write the plan.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/io/plan_printer.hpp"
#include "autohaap/search/searcher.hpp"
#include "commands.hpp"
#include "problem_args.hpp"
#include "search_args.hpp"

namespace autohaap::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

// One line, rewritten in place, only when stderr is a terminal.
class ProgressLine {
 public:
  ProgressLine() : enabled_(isatty(STDERR_FILENO) != 0) {}
  void update(const SearchProgress& p) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r[%6.1fs] skeletons %lld/%lld  evaluated %lld  pruned %lld  best %s   ", p.elapsed_s,
                 static_cast<long long>(p.done), static_cast<long long>(p.total),
                 static_cast<long long>(p.evaluated), static_cast<long long>(p.pruned),
                 p.best_iteration_s < 1e300 ? (std::to_string(p.best_iteration_s) + " s").c_str() : "-");
    std::fflush(stderr);
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

std::string format_top_table(const std::vector<Plan>& top) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-4s %12s %12s %7s %6s %4s  %s\n", "rank", "iteration s", "tokens/s", "MFU",
                "stages", "B", "pipeline");
  out += buf;
  for (std::size_t i = 0; i < top.size(); ++i) {
    const Plan& p = top[i];
    std::string pipeline;
    for (const StagePlan& s : p.stages) {
      if (!pipeline.empty()) pipeline += " > ";
      pipeline += s.device + ":" + std::to_string(s.tp) + "x" + std::to_string(s.dp) + "[" +
                  std::to_string(s.num_layers()) + "]";
    }
    std::snprintf(buf, sizeof buf, "%-4zu %12.4f %12.0f %7.4f %6zu %4d  ", i + 1, p.predicted.iteration_time_s,
                  p.predicted.tokens_per_s, p.predicted.mfu, p.stages.size(), p.micro_batch_size);
    out += buf + pipeline + "\n";
  }
  return out;
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

}  // namespace

int run_search_command(const SearchArgs& a) {
  ProblemArgs pa = a.problem;
  if (pa.model.empty()) pa.model = "llama3-8b";
  if (pa.cluster.empty()) pa.cluster = kDefaultClusterName;
  const Problem problem = load_problem_args(pa);
  if (a.threads < 0) throw InputError("command line", "--threads", std::to_string(a.threads), "0 (all cores) or more");
  if (a.top < 1) throw InputError("command line", "--top", std::to_string(a.top), "1 or more");
  if (a.time_limit < 0) throw InputError("command line", "--time-limit", std::to_string(a.time_limit), "seconds >= 0");

  SearchOptions options;
  options.strategy = a.strategy;
  options.threads = a.threads;
  options.top_k = a.top;
  options.time_limit_s = a.time_limit;
  options.cancel = &g_interrupted;
  auto progress = std::make_shared<ProgressLine>();
  options.progress = [progress](const SearchProgress& p) { progress->update(p); };
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);

  std::cout << "AutoHAAP search: " << problem.model.name << " on " << problem.cluster.name << " ("
            << problem.cluster.total_gpus() << " GPUs in " << problem.cluster.groups.size()
            << " groups), global batch " << problem.training.global_batch << ", strategy " << a.strategy << "\n";
  const SearchResult result = run_search(problem, options);
  progress->finish();

  if (a.explain) std::cout << "\n" << format_prune_table(result.prune);
  if (result.top.empty()) {
    std::cout << "\nno feasible plan: " << result.infeasible_reason << "\n";
    Plan empty;
    empty.model = problem.model.name;
    empty.cluster = problem.cluster.name;
    empty.search = result.stats;
    std::cout << format_summary_block(empty, result.timed_out ? "interrupted-no-plan" : "infeasible");
    return result.timed_out ? kExitInterrupted : kExitInfeasible;
  }

  const Plan& best = result.top.front();
  const CostModel model(problem);
  std::cout << "\ntop " << result.top.size() << " plan" << (result.top.size() > 1 ? "s" : "") << "\n"
            << format_top_table(result.top) << "\nbest plan\n"
            << format_stage_table(model, best) << "\nmemory per GPU (GiB)\n"
            << format_memory_table(model, best) << "\n";
  if (!a.out.empty()) {
    write_plan(best, a.out, problem.cluster);
    std::cout << "plan written to " << a.out << "\n";
  }
  std::cout << format_summary_block(best, result.timed_out ? "time-limit-best-so-far" : "found");
  return result.timed_out ? kExitInterrupted : kExitOk;
}

void add_search_options(CLI::App* cmd, SearchArgs& a) {
  add_problem_options(cmd, a.problem, false);
  cmd->add_option("-s,--strategy", a.strategy, "autohaap | exhaustive | uniform | metis")
      ->check(CLI::IsMember(search_strategies()))
      ->default_val("autohaap");
  cmd->add_option("-j,--threads", a.threads, "worker threads (0: all cores)")->default_val(0);
  cmd->add_option("-k,--top", a.top, "plans to list")->default_val(1);
  cmd->add_option("--time-limit", a.time_limit, "stop after S seconds with the best plan so far (exit 4)")
      ->default_val(0);
  cmd->add_flag("--explain", a.explain, "print how many candidates each pruning rule removed");
  cmd->add_option("-o,--out", a.out, "write the best plan here (.json or .yaml)");
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
