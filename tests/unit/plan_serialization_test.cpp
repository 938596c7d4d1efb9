// Plan serialization: the cereal functions the distributed layer uses give
// back the plan exactly in a binary archive, also the sections a plan file
// may leave out, and a load failure names its key path.
#include "autohaap/io/plan_serialization.hpp"

#include <gtest/gtest.h>

#include <cereal/archives/binary.hpp>
#include "../../src/io/rapidjson.hpp"  // cereal's JSON archive, configured as the library configures it
#include <sstream>

#include "autohaap/io/bounded_binary_archive.hpp"
#include "plan_fixtures.hpp"

namespace autohaap {
namespace {

using testing_fixtures::expect_same_plan;
using testing_fixtures::sample_plan;

TEST(PlanSerialization, BinaryRoundTripKeepsEveryField) {
  const Plan plan = sample_plan();
  std::stringstream stream;
  {
    cereal::BinaryOutputArchive out(stream);
    out(plan);
  }
  Plan back;
  cereal::BinaryInputArchive in(stream);
  in(back);
  expect_same_plan(plan, back);
}

TEST(PlanSerialization, BinaryKeepsSectionsAPlanFileWouldOmit) {
  Plan plan = sample_plan();
  plan.search.strategy.clear();  // a file would drop `search` now
  plan.search.ranks = 7;
  std::stringstream stream;
  {
    cereal::BinaryOutputArchive out(stream);
    out(plan);
  }
  Plan back;
  cereal::BinaryInputArchive in(stream);
  in(back);
  EXPECT_EQ(back.search.ranks, 7);
  expect_same_plan(plan, back);
}

TEST(PlanSerialization, PlansNestInsideOtherJsonDocuments) {
  // As a checkpoint would hold them: a list of best plans under a key.
  const std::vector<Plan> plans = {sample_plan(), sample_plan()};
  std::stringstream stream;
  {
    cereal::JSONOutputArchive out(stream);
    out(cereal::make_nvp("best", plans));
  }
  std::vector<Plan> back;
  cereal::JSONInputArchive in(stream);
  in(cereal::make_nvp("best", back));
  ASSERT_EQ(back.size(), 2u);
  expect_same_plan(plans[1], back[1]);
}

TEST(PlanSerialization, TruncatedBinaryIsAnArchiveError) {
  std::stringstream stream;
  {
    cereal::BinaryOutputArchive out(stream);
    out(sample_plan());
  }
  std::stringstream truncated(stream.str().substr(0, stream.str().size() / 2));
  Plan back;
  cereal::BinaryInputArchive in(truncated);
  EXPECT_THROW(in(back), cereal::Exception);
}

TEST(PlanSerialization, ABoolStoredAsAnotherByteIsAnArchiveError) {
  // A checkpoint made to match its checksum once gave a plan whose `fits`
  // held the byte 151: a bool of no value, undefined behaviour when read.
  auto bytes_of = [](bool fits) {
    Plan plan = sample_plan();
    plan.predicted.fits = fits;
    std::ostringstream out;
    {
      cereal::BinaryOutputArchive archive(out);
      archive(plan);
    }
    return out.str();
  };
  const std::string yes = bytes_of(true), no = bytes_of(false);
  ASSERT_EQ(yes.size(), no.size());
  std::size_t at = 0;
  while (at < yes.size() && yes[at] == no[at]) ++at;
  ASSERT_LT(at, yes.size());

  Plan back;
  BoundedBinaryInputArchive good(yes);
  good(back);
  EXPECT_TRUE(back.predicted.fits);
  std::string damaged = yes;
  damaged[at] = static_cast<char>(151);
  try {
    BoundedBinaryInputArchive archive(damaged);
    archive(back);
    ADD_FAILURE() << "accepted";
  } catch (const cereal::Exception& e) {
    EXPECT_EQ(std::string(e.what()), "plan: predicted.fits: expected true or false");
  }
}

TEST(PlanSerialization, FieldErrorsComposeTheirKeyPath) {
  const PlanFieldError inner("tp", std::nullopt, "an integer");
  const PlanFieldError path = inner.under("[2]").under("stages");
  EXPECT_EQ(path.key_path(), "stages[2].tp");
  EXPECT_FALSE(path.value().has_value());
  EXPECT_EQ(path.allowed(), "an integer");
  EXPECT_EQ(std::string(path.what()), "plan: stages[2].tp: expected an integer");
}

TEST(PlanSerialization, RecomputeNamesParse) {
  EXPECT_EQ(parse_recompute("none"), Recompute::none);
  EXPECT_EQ(parse_recompute("selective"), Recompute::selective);
  EXPECT_EQ(parse_recompute("full"), Recompute::full);
  EXPECT_FALSE(parse_recompute("Full").has_value());
}

}  // namespace
}  // namespace autohaap
