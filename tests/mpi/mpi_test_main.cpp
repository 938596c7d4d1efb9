// main() of the distributed-layer tests: starts MPI (an MpiSession, so the
// tests use the session the command uses) and runs every test on every
// rank. Collective tests need every rank to take the same path, so they
// use EXPECT_*, never ASSERT_*. Rank 0 prints the usual report; other ranks
// print only their failures, tagged with their rank.
#include <gtest/gtest.h>

#include <iostream>

#include "dist_test_session.hpp"

namespace autohaap::dist::testing {

MpiSession* g_session = nullptr;

namespace {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cerr << "[rank " << rank_ << "] " << (result.file_name() ? result.file_name() : "?") << ":"
              << result.line_number() << ": " << result.summary() << std::endl;
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace autohaap::dist::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  autohaap::dist::MpiSession session;
  autohaap::dist::testing::g_session = &session;
  if (session.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new autohaap::dist::testing::FailurePrinter(session.rank()));
  }
  return RUN_ALL_TESTS();
}
