// Fuzz target: the YAML spec loader (io/spec_loader.hpp). The input is a
// model, device, cluster or training file (or a plan, told apart by its
// keys): validate_file reads it as the CLI's `validate` does, with every
// range check of its kind. A cluster's device files resolve against the
// input's folder, which holds only the input.
#include "autohaap/io/spec_loader.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autohaap;
  const std::string path = fuzz::write_scratch("spec/input.yaml", fuzz::bytes_of(data, size));
  fuzz::read_or_refuse([&] { validate_file(path); });
  return 0;
}
