// Shared by the distributed-layer tests: real problems, a real latency
// cache, and byte-wise comparison of cereal-serializable values.
#pragma once

#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>
#include <string>

#include "autohaap/io/plan_serialization.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "autohaap/search/searcher.hpp"

namespace autohaap::dist::testing {

inline std::string config(const std::string& relative) { return std::string(AUTOHAAP_SOURCE_DIR) + "/" + relative; }

inline Problem problem(const std::string& model, const std::string& cluster_file) {
  return load_problem(model, config("configs/clusters/" + cluster_file), "");
}

// The cereal binary encoding: equal bytes mean equal values, every bit.
template <class T>
std::string cereal_bytes(const T& value) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(value);
  }
  return out.str();
}

// Plans without their `search` statistics, which differ from run to run.
inline std::vector<Plan> without_stats(std::vector<Plan> plans) {
  for (Plan& p : plans) p.search = SearchStats{};
  return plans;
}

// A latency cache filled by a real search (layer and stage entries).
inline CacheDelta real_cache_entries() {
  LatencyCache cache;
  SearchOptions options;
  options.threads = 1;
  options.cache = &cache;
  run_search(problem("gpt3-1.3b", "mixed-a100-v100.yaml"), options);
  return cache.snapshot();
}

}  // namespace autohaap::dist::testing
