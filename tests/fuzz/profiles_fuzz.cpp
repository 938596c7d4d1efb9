// Fuzz target: the profile readers. The input is read as a measured-latency
// CSV (io/profile_loader.hpp), as one Metis profile file
// (io/metis_profile.hpp), the only file of a profile directory, for
// gpt3-125m on mixed-a100-v100 (the problem of tests/data/metis/), and as
// each table of a device-measurement folder (io/device_measurements.hpp),
// read as measured on an H200 and made into a device.
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/device_measurements.hpp"
#include "autohaap/io/metis_profile.hpp"
#include "autohaap/io/profile_loader.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autohaap;
  static const Problem problem = load_problem("gpt3-125m", "mixed-a100-v100", "");
  const std::string bytes = fuzz::bytes_of(data, size);
  const std::string csv = fuzz::write_scratch("profile.csv", bytes);
  fuzz::read_or_refuse([&] { load_profile_csv(csv); });
  const std::string json = fuzz::write_scratch("metis/DeviceType.A100_tp1_bs1.json", bytes);
  fuzz::read_or_refuse([&] { load_metis_profiles(std::filesystem::path(json).parent_path().string(), problem); });
  static const DeviceSpec h200 = catalog_device("h200");
  std::string folder;
  for (const char* table : {"gemm.csv", "attention.csv", "elementwise.csv"})
    folder = std::filesystem::path(fuzz::write_scratch(std::string("measured/") + table, bytes)).parent_path().string();
  fuzz::read_or_refuse([&] { calibrated_device(h200, read_device_measurements(folder, h200), "fuzzed"); });
  return 0;
}
