#include "autohaap/search/runtime_price.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "autohaap/search/refinement.hpp"

namespace autohaap {
namespace {

// The fastest uniform plan of `problem` using every one of its GPUs, or
// any number of them; scored on `problem`.
std::optional<Plan> best_uniform(const Problem& problem, bool every_gpu) {
  const CostModel model(problem);
  std::int64_t evaluated = 0;
  // Uniform candidates are a few hundred to a few thousand; keep them all
  // to pick the best that uses every GPU.
  const int keep = every_gpu ? std::numeric_limits<int>::max() / 2 : 1;
  for (Plan& plan : uniform_plans(model, keep, evaluated, /*context_and_interleaving=*/true)) {
    if (!plan.predicted.fits) continue;
    if (every_gpu && plan.num_gpus() != problem.cluster.total_gpus()) continue;
    return std::move(plan);
  }
  return std::nullopt;
}

}  // namespace

std::string pipeline_summary(const Plan& p) {
  std::string out;
  for (std::size_t i = 0; i < p.stages.size();) {
    const StagePlan& s = p.stages[i];
    std::size_t j = i;
    std::string layers;
    const std::string shape = stage_summary(s);
    while (j < p.stages.size() && stage_summary(p.stages[j]) == shape) {
      layers += (layers.empty() ? "" : ",") + std::to_string(p.stages[j].num_layers());
      ++j;
    }
    if (!out.empty()) out += " > ";
    out += shape + "[" + layers + "]";
    i = j;
  }
  if (p.vpp > 1) out += " (vpp " + std::to_string(p.vpp) + ")";
  return out;
}

RuntimePrice runtime_price(const Problem& problem, const SearchOptions& options,
                           const std::optional<Plan>& runnable_best) {
  RuntimePrice price;
  Problem any = problem;
  any.runnable_by = RunnableBy::any;
  const SearchResult result = run_search(any, options);
  const CostModel model(any);
  SearchSettings best_only = options;
  best_only.top_k = 1;
  const std::vector<Plan> top = finish_plans(model, result, best_only);
  if (!top.empty()) price.unrestricted = top.front();
  if (runnable_best && (!price.unrestricted || runnable_best->predicted.iteration_time_s <
                                                   price.unrestricted->predicted.iteration_time_s))
    price.unrestricted = runnable_best;
  price.uniform_all_gpus = best_uniform(any, true);

  // The fastest device: highest dense 16-bit peak, the first such group's
  // device on a tie.
  const auto& groups = any.cluster.groups;
  if (groups.empty()) return price;
  const auto fastest = std::max_element(groups.begin(), groups.end(), [](const NodeGroup& a, const NodeGroup& b) {
    return a.device.peak_tflops < b.device.peak_tflops;
  });
  const Problem alone = restricted_to_device(any, fastest->device.name);
  price.fastest_device = fastest->device.name;
  price.fastest_device_gpus = alone.cluster.total_gpus();
  price.uniform_fastest_device = best_uniform(alone, false);
  return price;
}

std::vector<PriceRow> price_rows(const RuntimePrice& price, const std::optional<Plan>& runnable_best,
                                 RunnableBy runnable) {
  const double reference = price.unrestricted ? price.unrestricted->predicted.iteration_time_s : 0;
  std::vector<PriceRow> rows = {
      {"unrestricted best (any runtime)", price.unrestricted},
      {std::string(to_string(runnable)) + "-runnable best (this plan)", runnable_best},
      {"best uniform plan, all GPUs", price.uniform_all_gpus},
      {"best uniform plan, " + price.fastest_device + " alone (" + std::to_string(price.fastest_device_gpus) + " GPUs)",
       price.uniform_fastest_device},
  };
  for (PriceRow& r : rows)
    if (r.plan && reference > 0) r.versus_best = r.plan->predicted.iteration_time_s / reference - 1;
  return rows;
}

std::string format_runtime_price(const RuntimePrice& price, const std::optional<Plan>& runnable_best,
                                 RunnableBy runnable) {
  std::string out = "price of the runtime (predicted iteration time)\n";
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-46s %12s %9s  %s\n", "plan", "iteration s", "vs best", "pipeline");
  out += buf;
  for (const PriceRow& r : price_rows(price, runnable_best, runnable)) {
    if (!r.plan) {
      std::snprintf(buf, sizeof buf, "%-46s %12s %9s  ", r.label.c_str(), "-", "-");
      out += std::string(buf) + "none fits\n";
    } else {
      std::snprintf(buf, sizeof buf, "%-46s %12.4f %+8.1f%%  ", r.label.c_str(), r.plan->predicted.iteration_time_s,
                    100 * r.versus_best);
      out += std::string(buf) + pipeline_summary(*r.plan) + "\n";
    }
  }
  return out;
}

}  // namespace autohaap
