// Fuzz target: the plan reader (io/plan_io.hpp). The input is read as a
// JSON plan and as a YAML plan. A plan that is accepted must also pass or
// be refused by check_plan_against (with the catalog model and cluster it
// names, when it names them), and must read back from both the JSON and the
// YAML the tool writes for it: a plan written is a plan readable.
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace autohaap;

void read_back(const Plan& plan, const std::string& text, bool is_json) {
  try {
    plan_from_string(text, is_json, "written");
  } catch (const std::exception& e) {
    fuzz::finding(std::string("an accepted plan, written as ") + (is_json ? "JSON" : "YAML") +
                  ", does not read back: " + e.what() + "\n" + text);
  }
}

void check(const std::string& text, bool is_json) {
  fuzz::read_or_refuse([&] {
    const Plan plan = plan_from_string(text, is_json, is_json ? "input.json" : "input.yaml");
    read_back(plan, plan_to_json(plan), true);
    read_back(plan, plan_to_yaml(plan), false);
    if (is_catalog_model(plan.model) && is_catalog_cluster(plan.cluster)) {
      const ModelSpec model = catalog_model(plan.model);
      check_plan_against(plan, model, catalog_cluster(plan.cluster), model.seq_len, "input");
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::bytes_of(data, size);
  check(text, true);
  check(text, false);
  return 0;
}
