// Search benchmark: every strategy on the GPT-3 and Llama 3 families, on a
// homogeneous cluster and on mixed clusters of two and three device types
// from 32 to 1024 GPUs. Per strategy: plans fully estimated, wall time,
// best iteration time and throughput; then AutoHAAP's ratios against the
// exhaustive space (run where it is small enough, counted otherwise), the
// Metis-style search and the Megatron-style uniform plan.
//
// usage: search_bench OUT.md [--threads N] [--quick] [--exhaustive-limit N]
//        search_bench OUT.md --anytime [--threads N]
// Writes a markdown report to OUT.md and to stdout. --anytime instead
// follows AutoHAAP's best plan and proven bound over time on a few
// problems (time to the best plan, gap at fractions of the full search's
// time) and runs each again with --time-limit at 20% of that time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "autohaap/io/catalog.hpp"
#include "autohaap/search/searcher.hpp"

namespace {

using namespace autohaap;

struct ClusterCase {
  std::string label;
  ClusterSpec cluster;
};

ClusterSpec mixed(const std::string& name, const std::vector<std::pair<const char*, int>>& groups) {
  ClusterSpec c;
  c.name = name;
  for (const auto& [device, nodes] : groups) c.groups.push_back(make_node_group(catalog_device(device), nodes, 8));
  c.inter_group_GBps = kDefaultInterGroupGBps;
  c.inter_group_latency_us = kDefaultInterGroupLatencyUs;
  return c;
}

std::vector<ClusterCase> clusters(bool quick) {
  std::vector<ClusterCase> out;
  // Two nodes of 2 GPUs: small enough for the exhaustive reference on the
  // smaller models.
  ClusterSpec tiny = mixed("mixed-4", {});
  tiny.groups = {make_node_group(catalog_device("a100-80gb"), 1, 2),
                 make_node_group(catalog_device("v100-32gb"), 1, 2)};
  out.push_back({"4 (a100 + v100)", tiny});
  out.push_back({"32 (a100-40 + v100)", {catalog_cluster("mixed-a100-v100")}});
  out.push_back({"128 (h100 + a100)", mixed("mixed-128", {{"h100-sxm", 8}, {"a100-80gb", 8}})});
  if (!quick) {
    out.push_back(
        {"256 (h100 + a100 + v100)", mixed("mixed-256", {{"h100-sxm", 16}, {"a100-40gb", 8}, {"v100-32gb", 8}})});
  }
  out.push_back({"1024 (a100, homogeneous)", {catalog_cluster("a100-80gb-128nodes")}});
  out.push_back(
      {"1024 (h100 + a100 + v100)", mixed("mixed-1024", {{"h100-sxm", 64}, {"a100-80gb", 32}, {"v100-32gb", 32}})});
  return out;
}

struct Run {
  bool ran = false;
  bool found = false;
  std::int64_t candidates = 0;
  std::int64_t evaluated = 0;
  std::int64_t stage_estimates = 0;
  double wall_s = 0;
  double iteration_s = 0;
  double tokens_per_s = 0;
  std::string plan;
};

std::string describe(const Plan& plan) {
  std::ostringstream s;
  s << "B=" << plan.micro_batch_size << " pp=" << plan.stages.size() << ":";
  // Consecutive stages of one group with one layout, shown once.
  for (std::size_t i = 0; i < plan.stages.size();) {
    std::size_t j = i;
    int layers = 0;
    while (j < plan.stages.size() && plan.stages[j].group == plan.stages[i].group &&
           plan.stages[j].tp == plan.stages[i].tp && plan.stages[j].cp == plan.stages[i].cp &&
           plan.stages[j].dp == plan.stages[i].dp) {
      layers += plan.stages[j].num_layers();
      ++j;
    }
    s << " " << (j - i) << "x" << plan.stages[i].device << "(tp" << plan.stages[i].tp;
    if (plan.stages[i].cp > 1) s << ",cp" << plan.stages[i].cp;
    s << ",dp" << plan.stages[i].dp << ")/" << layers << "L";
    i = j;
  }
  return s.str();
}

Run run(const Problem& problem, const std::string& strategy, int threads) {
  SearchOptions options;
  options.strategy = strategy;
  options.threads = threads;
  options.exhaustive_limit = std::numeric_limits<std::int64_t>::max();
  const SearchResult r = run_search(problem, options);
  Run out;
  out.ran = true;
  out.found = !r.top.empty();
  out.candidates = r.candidates;
  out.evaluated = r.stats.evaluated;
  out.stage_estimates = r.stage_estimates;
  out.wall_s = r.stats.wall_s;
  if (out.found) {
    out.iteration_s = r.top[0].predicted.iteration_time_s;
    out.tokens_per_s = r.top[0].predicted.tokens_per_s;
    out.plan = describe(r.top[0]);
  }
  return out;
}

// One progress report: when, the best iteration time so far, the bound.
struct TracePoint {
  double elapsed_s = 0, best_s = 0, bound_s = 0;
};

struct Trace {
  std::vector<TracePoint> points;
  SearchResult result;
};

Trace traced(const Problem& problem, int threads, double time_limit_s) {
  Trace t;
  SearchOptions options;
  options.threads = threads;
  options.time_limit_s = time_limit_s;
  options.progress_interval_s = 0;  // every skeleton
  options.progress = [&t](const SearchProgress& p) {
    t.points.push_back({p.elapsed_s, p.best_iteration_s, p.bound_s});
  };
  t.result = run_search(problem, options);
  return t;
}

// The last report at or before `at` seconds (none before the search phase).
const TracePoint* at_time(const Trace& t, double at) {
  const TracePoint* last = nullptr;
  for (const TracePoint& p : t.points)
    if (p.elapsed_s <= at) last = &p;
  return last;
}

std::string number(double v, const char* format = "%.3g") {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}
std::string count(std::int64_t v) {
  if (v == std::numeric_limits<std::int64_t>::max()) return ">9.2e18";
  if (v >= 10'000'000) return number(static_cast<double>(v), "%.2e");
  return std::to_string(v);
}
std::string cell(const Run& r, double value, const char* format = "%.3g") {
  if (!r.ran) return "-";
  if (!r.found) return "none";
  return number(value, format);
}

}  // namespace

std::string anytime_report(int threads);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: search_bench OUT.md [--threads N] [--quick] [--exhaustive-limit N]\n";
    return 2;
  }
  const std::string out_path = argv[1];
  int threads = 2;
  bool quick = false;
  std::int64_t exhaustive_limit = 3'000'000;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--exhaustive-limit") && i + 1 < argc)
      exhaustive_limit = std::atoll(argv[++i]);
  }
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--anytime") != 0) continue;
    const std::string report = anytime_report(threads);
    std::ofstream file(out_path);
    file << report;
    std::cout << report;
    return file ? 0 : 1;
  }
  const std::vector<std::string> models =
      quick ? std::vector<std::string>{"gpt3-1.3b", "llama3-8b", "llama3-405b"}
            : std::vector<std::string>{"gpt3-1.3b", "gpt3-6.7b",  "gpt3-13b",   "gpt3-175b",
                                       "llama3-8b", "llama3-70b", "llama3-405b"};

  std::ostringstream runs, ratios;
  runs << "| model | cluster (GPUs) | strategy | candidates | evaluated | stage estimates | wall s | iteration s | "
          "tokens/s | plan |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  ratios << "| model | cluster (GPUs) | exhaustive / autohaap evaluations | autohaap vs exhaustive iteration | "
            "metis / autohaap evaluations | metis / autohaap time | autohaap / uniform throughput |\n"
            "|---|---|---:|---:|---:|---:|---:|\n";
  for (const ClusterCase& c : clusters(quick)) {
    for (const std::string& model : models) {
      Problem problem;
      problem.model = catalog_model(model);
      problem.cluster = c.cluster;
      problem.training = catalog_training("default");
      const Run autohaap = run(problem, "autohaap", threads);
      const Run uniform = run(problem, "uniform", threads);
      const Run metis = run(problem, "metis", threads);
      Run exhaustive;
      exhaustive.candidates = exhaustive_candidates(problem);
      if (exhaustive.candidates <= exhaustive_limit) exhaustive = run(problem, "exhaustive", threads);

      for (const auto& [name, r] : {std::pair<const char*, const Run&>{"autohaap", autohaap},
                                    {"uniform", uniform},
                                    {"metis", metis},
                                    {"exhaustive", exhaustive}}) {
        runs << "| " << model << " | " << c.label << " | " << name << " | " << count(r.candidates) << " | "
             << (r.ran ? count(r.evaluated) : "not run") << " | " << (r.ran ? count(r.stage_estimates) : "-") << " | "
             << (r.ran ? number(r.wall_s, "%.3f") : "-") << " | " << cell(r, r.iteration_s, "%.4g") << " | "
             << cell(r, r.tokens_per_s, "%.4g") << " | " << r.plan << " |\n";
      }
      // Counted candidates saturate at INT64_MAX: then the ratio is a floor.
      const bool saturated = exhaustive.candidates == std::numeric_limits<std::int64_t>::max();
      const double exh_ratio = static_cast<double>(exhaustive.ran ? exhaustive.evaluated : exhaustive.candidates) /
                               std::max<std::int64_t>(1, autohaap.evaluated);
      ratios << "| " << model << " | " << c.label << " | " << (saturated ? ">" : "") << number(exh_ratio, "%.3g")
             << (exhaustive.ran ? "" : " (counted)") << " | "
             << (exhaustive.ran && exhaustive.found && autohaap.found
                     ? number(autohaap.iteration_s / exhaustive.iteration_s, "%.6f")
                     : std::string("-"))
             << " | " << number(static_cast<double>(metis.evaluated) / std::max<std::int64_t>(1, autohaap.evaluated))
             << " | " << number(metis.wall_s / std::max(1e-6, autohaap.wall_s)) << " | "
             << (autohaap.found && uniform.found ? number(autohaap.tokens_per_s / uniform.tokens_per_s, "%.3f")
                                                 : std::string(autohaap.found ? "uniform: none" : "-"))
             << " |\n";
      std::cerr << model << " on " << c.label << ": autohaap " << number(autohaap.wall_s, "%.3f") << " s\n";
    }
  }

  std::ostringstream report;
  report << "# AutoHAAP search benchmark\n\n"
         << "Threads: " << threads << ". Training: catalog `default` (global batch 512, micro-batch sizes 1/2/4/8, "
         << "recompute none/selective/full, ZeRO-1). `evaluated` counts full plan estimates (AutoHAAP: its "
         << "probes and the skeletons it balanced to a full plan); `stage estimates` the cost-model stage/layer calls below that (AutoHAAP: "
         << "latency-cache misses). Exhaustive runs only where its candidate count is at most "
         << count(exhaustive_limit) << "; elsewhere its candidates are counted, not run.\n\n"
         << "## Runs\n\n"
         << runs.str() << "\n## Ratios\n\n"
         << ratios.str();
  std::ofstream file(out_path);
  file << report.str();
  std::cout << report.str();
  return file ? 0 : 1;
}

namespace {

// Best, bound and gap at a time, as the table prints them.
std::string snapshot(const Trace& t, double at) {
  const TracePoint* p = at_time(t, at);
  if (!p) return "initializing";
  if (!std::isfinite(p->best_s)) return "no plan yet";
  return number(100 * search_gap(p->best_s, p->bound_s), "%.1f%%");
}

}  // namespace

// The anytime behaviour on five problems: two of the table's mixed
// clusters, and four, five and six node groups, where initialization is
// most of the time.
std::string anytime_report(int threads) {
  struct Case {
    std::string model, label;
    ClusterSpec cluster;
  };
  const std::vector<Case> cases = {
      {"llama3-70b", "256 (h100 + a100 + v100)",
       mixed("mixed-256", {{"h100-sxm", 16}, {"a100-40gb", 8}, {"v100-32gb", 8}})},
      {"gpt3-175b", "1024 (h100 + a100 + v100)",
       mixed("mixed-1024", {{"h100-sxm", 64}, {"a100-80gb", 32}, {"v100-32gb", 32}})},
      {"llama3-8b", "64 (h100 + a100-80 + a100-40 + v100)",
       mixed("four-64", {{"h100-sxm", 2}, {"a100-80gb", 2}, {"a100-40gb", 2}, {"v100-32gb", 2}})},
      {"llama3-70b", "320 in 5 groups (h100, h200, a100-80, a100-40, a800)",
       mixed("five-320", {{"h100-sxm", 8}, {"h200", 8}, {"a100-80gb", 8}, {"a100-40gb", 8}, {"a800", 8}})},
      {"llama3-70b", "384 in 6 groups (the five and h800)",
       mixed("six-384",
             {{"h100-sxm", 8}, {"h200", 8}, {"a100-80gb", 8}, {"a100-40gb", 8}, {"a800", 8}, {"h800", 8}})},
  };
  std::ostringstream table;
  table << "| model | cluster (GPUs) | wall s | search starts s | time to best s | gap when the search starts | "
           "time to gap <= 1% s | --time-limit 20%: status, best vs optimum, proven gap | --time-limit 90%: same |\n"
           "|---|---|---:|---:|---:|---:|---:|---|---|\n";
  for (const Case& c : cases) {
    Problem problem;
    problem.model = catalog_model(c.model);
    problem.cluster = c.cluster;
    problem.training = catalog_training("default");
    const Trace full = traced(problem, threads, 0);
    const double wall = full.result.stats.wall_s;
    const double best = full.result.top.empty() ? 0 : full.result.top.front().predicted.iteration_time_s;
    double to_best = wall, to_one_percent = wall;
    for (const TracePoint& p : full.points) {
      if (p.best_s <= best * (1 + 1e-12) && to_best == wall) to_best = p.elapsed_s;
      if (search_gap(p.best_s, p.bound_s) <= 0.01 && to_one_percent == wall) to_one_percent = p.elapsed_s;
    }
    const double starts = full.points.empty() ? wall : full.points.front().elapsed_s;
    auto limited = [&](double fraction) {
      const Trace t = traced(problem, threads, fraction * wall);
      std::string outcome = summary_label(t.result.status);
      if (!t.result.top.empty() && best > 0) {
        outcome += ", +" + number(100 * (t.result.top.front().predicted.iteration_time_s / best - 1), "%.2f") +
                   "%, gap " + number(100 * t.result.stats.gap, "%.1f") + "%";
      }
      return outcome;
    };
    table << "| " << c.model << " | " << c.label << " | " << number(wall, "%.2f") << " | " << number(starts, "%.2f")
          << " | " << number(to_best, "%.2f") << " | " << snapshot(full, starts) << " | "
          << number(to_one_percent, "%.2f") << " | " << limited(0.2) << " | " << limited(0.9) << " |\n";
    std::cerr << c.model << " on " << c.label << ": " << number(wall, "%.2f") << " s\n";
  }
  return "# AutoHAAP anytime search\n\nThreads: " + std::to_string(threads) +
         ". Gap = (best - proven bound) / best of the search's best plan; `search starts`: initialization "
         "done, first skeleton balanced. A search stopped during initialization proves the per-layer rate "
         "bound only.\n\n" +
         table.str();
}
