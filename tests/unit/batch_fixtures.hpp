// Shared by the batch tests: a fresh folder per test (named after the test
// and the process, so parallel runs from different build trees stay
// apart), and small input files written into it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace autohaap::testing {

class BatchFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("autohaap_" + std::string(info->test_suite_name()) + "_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `text` to dir/name (creating sub-folders) and returns the path.
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = dir_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

// A cluster of one node with one T4: too small for anything but tiny models.
inline constexpr const char* kTinyCluster = R"(name: tiny
groups:
  - device: t4
    nodes: 1
    gpus_per_node: 1
)";

}  // namespace autohaap::testing
