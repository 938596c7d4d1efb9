#include "autohaap/plan_status.hpp"

#include <gtest/gtest.h>

#include <string>

namespace autohaap {
namespace {

// The README's exit-code table and the summary labels scripts grep.
TEST(PlanStatus, ExitCodesAndLabelsAreTheDocumentedOnes) {
  struct Row {
    PlanStatus status;
    int exit;
    std::string label;
  };
  for (const Row& row : {Row{PlanStatus::found, 0, "found"}, Row{PlanStatus::estimated, 0, "estimated"},
                         Row{PlanStatus::infeasible, 3, "infeasible"},
                         Row{PlanStatus::does_not_fit, 3, "does-not-fit"},
                         Row{PlanStatus::gap_reached, 0, "gap-reached"},
                         Row{PlanStatus::stopped_with_plan, 4, "time-limit-best-so-far"},
                         Row{PlanStatus::stopped_no_plan, 4, "interrupted-no-plan"},
                         Row{PlanStatus::failed, 1, "failed"}}) {
    SCOPED_TRACE(row.label);
    EXPECT_EQ(exit_code(row.status), row.exit);
    EXPECT_EQ(summary_label(row.status), row.label);
  }
}

TEST(PlanStatus, SearchStatusFollowsPlanAndStop) {
  EXPECT_EQ(search_status(true, false), PlanStatus::found);
  EXPECT_EQ(search_status(false, false), PlanStatus::infeasible);
  EXPECT_EQ(search_status(true, true), PlanStatus::stopped_with_plan);
  EXPECT_EQ(search_status(false, true), PlanStatus::stopped_no_plan);
  // Reaching --gap is the answer asked for; without a plan it is a stop.
  EXPECT_EQ(search_status(true, true, true), PlanStatus::gap_reached);
  EXPECT_EQ(search_status(false, true, true), PlanStatus::stopped_no_plan);
  EXPECT_TRUE(has_plan(PlanStatus::gap_reached));
  EXPECT_FALSE(stopped_early(PlanStatus::gap_reached));
  EXPECT_TRUE(has_plan(PlanStatus::stopped_with_plan));
  EXPECT_FALSE(has_plan(PlanStatus::stopped_no_plan));
  EXPECT_FALSE(has_plan(PlanStatus::infeasible));
  EXPECT_TRUE(stopped_early(PlanStatus::stopped_no_plan));
  EXPECT_FALSE(stopped_early(PlanStatus::found));
}

}  // namespace
}  // namespace autohaap
