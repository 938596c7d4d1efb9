#include "autohaap/io/plan_fingerprints.hpp"

#include <yaml-cpp/yaml.h>

#include <exception>

#include "autohaap/io/atomic_file.hpp"

namespace autohaap {

std::map<std::string, std::string> recorded_spec_fingerprints(const std::string& plan_file) {
  std::map<std::string, std::string> out;
  try {
    // JSON plans are YAML flow mappings: one reader for both.
    const YAML::Node root = YAML::Load(read_file(plan_file));
    if (!root.IsMap() || !root["specs"] || !root["specs"].IsMap()) return out;
    const YAML::Node recorded = root["specs"]["fingerprints"];
    if (!recorded || !recorded.IsMap()) return out;
    for (const char* spec : {"model", "cluster", "training"})
      if (recorded[spec] && recorded[spec].IsScalar()) out[spec] = recorded[spec].Scalar();
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

}  // namespace autohaap
