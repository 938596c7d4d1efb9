// Fuzz target: the batch manifest reader (batch/manifest.hpp). The input is
// a manifest read from the project's jobs/ folder, so the references of the
// manifests there (../configs/...) resolve as they do in a real batch.
#include "autohaap/batch/manifest.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autohaap;
  fuzz::read_or_refuse(
      [&] { parse_manifest(fuzz::bytes_of(data, size), "manifest.yaml", AUTOHAAP_FUZZ_JOBS_DIR); });
  return 0;
}
