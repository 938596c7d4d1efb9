// Measured-profile CSV files: rows load as latencies in seconds, and a
// latency the cost model could not add up — infinite, NaN, zero, negative,
// or past the documented bound — is an InputError naming the row and column.
#include "autohaap/io/profile_loader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"
#include "plan_fixtures.hpp"  // input_error_of

namespace autohaap {
namespace {

namespace fs = std::filesystem;
using testing_fixtures::input_error_of;

class ProfileLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("autohaap_profile_loader_" + std::to_string(::getpid()) + "_" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& latency) {
    const fs::path p = dir_ / "p.csv";
    std::ofstream(p) << "device,op,tp,micro_batch,seq_len,latency_ms\n"
                     << "a100-40gb,layer,1,2,2048,1.5\n"
                     << "a100-40gb,mlp,1,2,2048," << latency << "\n";
    return p.string();
  }
  fs::path dir_;
};

TEST_F(ProfileLoader, RowsBecomeLatenciesInSeconds) {
  const ProfileTable t = load_profile_csv(write("0.25"));
  EXPECT_DOUBLE_EQ(*t.lookup(ProfileKey{"a100-40gb", "layer", 1, 2, 2048, -1}), 1.5e-3);
  EXPECT_DOUBLE_EQ(*t.lookup(ProfileKey{"a100-40gb", "mlp", 1, 2, 2048, 7}), 0.25e-3);
  // Any decimal form: a sign, no leading digit, an exponent.
  for (const auto& [text, ms] : {std::pair<const char*, double>{"+2", 2}, {".5", 0.5}, {"2.5e-1", 0.25}, {"3E0", 3}})
    EXPECT_DOUBLE_EQ(*load_profile_csv(write(text)).lookup(ProfileKey{"a100-40gb", "mlp", 1, 2, 2048, 7}), ms * 1e-3)
        << text;
}

TEST_F(ProfileLoader, ASpreadsheetsByteOrderMarkAndCrlfLinesRead) {
  // Saved as "CSV UTF-8" with Windows line ends: the same table. A wrong
  // header is shown as written, without the carriage return.
  const fs::path p = dir_ / "excel.csv";
  std::ofstream(p) << "\xEF\xBB\xBF" "device,op,tp,micro_batch,seq_len,latency_ms\r\n"
                   << "a100-40gb,layer,1,2,2048,1.5\r\n";
  EXPECT_DOUBLE_EQ(*load_profile_csv(p.string()).lookup(ProfileKey{"a100-40gb", "layer", 1, 2, 2048, -1}), 1.5e-3);
  std::ofstream(p) << "\xEF\xBB\xBF" "device,op,tp,micro_batch,seq_len,ms\r\n";
  try {
    load_profile_csv(p.string());
    ADD_FAILURE() << "a header without latency_ms was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.value(), "device,op,tp,micro_batch,seq_len,ms");
  }
}

TEST_F(ProfileLoader, LatenciesTheCostModelCannotAddUpAreRefused) {
  // `inf` once loaded and `estimate` wrote Infinity into its JSON; `0x10`
  // loaded as 16 ms and `0x1p1` as 2.
  for (const char* bad : {"inf", "Infinity", "nan", "0", "-1", "1e300", "1.5ms", "0x10", "0x1p1", ".", "1e"}) {
    const std::string path = write(bad);
    try {
      load_profile_csv(path);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.key(), "row 3.latency_ms");
      EXPECT_EQ(e.value(), bad);
      EXPECT_EQ(e.allowed(), "a decimal number of milliseconds above 0 and at most 1000000000");
    }
  }
}

constexpr const char* kHeader = "device,op,tp,micro_batch,seq_len,latency_ms\n";

// The error loading `rows` under the table's header gives (a test failure
// when it loads).
InputError error_loading(const fs::path& file, const std::string& rows) {
  std::ofstream(file) << kHeader << rows;
  return input_error_of([&] { load_profile_csv(file.string()); });
}

TEST_F(ProfileLoader, ASecondRowForOneMeasurementAndAnEmptyTableAreRefused) {
  // A repeated key once loaded with the last row's latency winning.
  const InputError repeated =
      error_loading(dir_ / "twice.csv", "a100-40gb,layer,1,2,2048,1\na100-40gb,layer,1,2,2048,5\n");
  EXPECT_EQ(repeated.key(), "row 3");
  EXPECT_NE(repeated.allowed().find("row 2 already gave this one"), std::string::npos) << repeated.allowed();
  EXPECT_EQ(error_loading(dir_ / "empty.csv", "").key(), "rows");
}

// A whole layer's backward is read beside its forward; alone it had been
// left out while its ratio was printed as a correction.
TEST_F(ProfileLoader, ALayerBackwardNeedsItsForward) {
  const InputError e =
      error_loading(dir_ / "alone.csv", "a100-40gb,layer,1,1,2048,1\na100-40gb,layer_backward,1,2,2048,3\n");
  EXPECT_EQ(e.key(), "row 3.op");
  EXPECT_NE(e.allowed().find("beside the layer row"), std::string::npos) << e.allowed();
  const fs::path paired = dir_ / "paired.csv";
  std::ofstream(paired) << kHeader << "a100-40gb,layer,1,2,2048,1\na100-40gb,layer_backward,1,2,2048,3\n";
  EXPECT_EQ(load_profile_csv(paired.string()).entries().size(), 2u);
}

TEST_F(ProfileLoader, ATableMustTimeTheModelItIsGivenWith) {
  Problem p;
  p.model.name = "m";
  p.model.layers = 12;
  p.model.seq_len = 2048;
  // Layer 99999 of a 12-layer model: once accepted and never read.
  const fs::path far = dir_ / "far.csv";
  std::ofstream(far) << "device,op,tp,micro_batch,seq_len,latency_ms,layer\n"
                     << "a100-40gb,layer,1,1,2048,1,99999\n";
  const InputError e = input_error_of([&] { check_profile_fits(load_profile_csv(far.string()), p, far.string()); });
  EXPECT_EQ(e.key(), "layer");
  EXPECT_EQ(e.value(), "99999");
  // Nothing at the training's 2048 tokens: nothing could be used.
  const fs::path other = dir_ / "other.csv";
  std::ofstream(other) << "device,op,tp,micro_batch,seq_len,latency_ms\n"
                       << "a100-40gb,layer,1,1,7,1\n";
  EXPECT_THROW(check_profile_fits(load_profile_csv(other.string()), p, other.string()), InputError);
  // One row at 2048 is enough; another device's rows are kept.
  std::ofstream(other, std::ios::app) << "v100-32gb,layer,1,1,2048,1\n";
  EXPECT_NO_THROW(check_profile_fits(load_profile_csv(other.string()), p, other.string()));
}

// A row may state the hidden size it measured: one of another model's is
// refused by row (a hidden-768 table had timed a hidden-2048 model, as
// measured, at half the analytic time).
TEST_F(ProfileLoader, ARowOfAnotherHiddenSizeIsRefused) {
  Problem p;
  p.model = catalog_model("gpt3-1.3b");
  p.cluster = catalog_cluster("a100x8");
  const fs::path file = dir_ / "hidden.csv";
  std::ofstream(file) << "device,op,tp,micro_batch,seq_len,latency_ms,hidden\n"
                      << "a100-80gb,layer,1,1,2048,10,2048\n"
                      << "a100-80gb,layer,2,1,2048,6,768\n";
  const InputError e = input_error_of([&] { check_profile_fits(load_profile_csv(file.string()), p, file.string()); });
  EXPECT_EQ(e.key(), "row 3.hidden");
  EXPECT_EQ(e.value(), "768");
  // Without the column, or with this model's, it is read.
  std::ofstream(file) << "device,op,tp,micro_batch,seq_len,latency_ms,layer,hidden\n"
                      << "a100-80gb,layer,1,1,2048,10,-1,2048\n";
  EXPECT_NO_THROW(check_profile_fits(load_profile_csv(file.string()), p, file.string()));
  // A column named twice, or one the reader does not know, is a header error.
  std::ofstream(file) << "device,op,tp,micro_batch,seq_len,latency_ms,hidden,hidden\n";
  EXPECT_THROW(load_profile_csv(file.string()), InputError);
}

// Rows may name the cluster's own devices (a device file's name, as
// `device --measured` writes it), not only catalog devices.
TEST_F(ProfileLoader, RowsNameTheClustersOwnDevices) {
  Problem p;
  p.model = catalog_model("gpt3-1.3b");
  p.cluster = catalog_cluster("a100x8");
  p.cluster.groups[0].device.name = "a100-measured";
  const fs::path file = dir_ / "own.csv";
  std::ofstream(file) << "device,op,tp,micro_batch,seq_len,latency_ms\n"
                      << "a100-measured,layer,1,1,2048,10\n";
  EXPECT_NO_THROW(check_profile_fits(load_profile_csv(file.string()), p, file.string()));
  std::ofstream(file) << "device,op,tp,micro_batch,seq_len,latency_ms\n"
                      << "a100-imagined,layer,1,1,2048,10\n";
  EXPECT_THROW(check_profile_fits(load_profile_csv(file.string()), p, file.string()), InputError);
}

}  // namespace
}  // namespace autohaap
