// The option table: every row has a flag and a manifest key, its default
// passes its own check, and a value out of range is refused by the command
// line's check and the manifest reader alike.
#include "autohaap/search/search_options.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <optional>
#include <set>
#include <type_traits>
#include <variant>

#include "autohaap/batch/manifest.hpp"
#include "autohaap/error.hpp"
#include "autohaap/search/searcher.hpp"
#include "autohaap/search/stop_condition.hpp"
#include "plan_fixtures.hpp"

namespace autohaap {
namespace {

using testing_fixtures::input_error_of;

constexpr const char* kEntries = "models: [gpt3-125m]\nclusters: [a100x8]\n";

// A configuration with `option` just outside its range (below it, or with
// `above` just above its maximum); nullopt when any value is allowed (a
// path, a switch) or, with `above`, when the range has no maximum.
std::optional<SearchConfig> out_of_range(const SearchOption& option, bool above = false) {
  SearchConfig config;
  bool has_range = true;
  std::visit(
      [&](auto member) {
        auto& value = setting(config, member);
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          has_range = option.range.choices != nullptr;
          value = "greedy";
        } else if constexpr (std::is_same_v<T, bool>) {
          has_range = false;
        } else if (above) {
          has_range = std::isfinite(option.range.max);
          if (has_range) value = static_cast<T>(option.range.max + 1);
        } else {
          value = static_cast<T>(option.range.min_excluded ? option.range.min : option.range.min - 1);
        }
      },
      option.member);
  if (!has_range) return std::nullopt;
  return config;
}

// A signal sent to one MPI rank alone stops every rank, and each names it:
// the others learn of it as peer_cancel (the search driver raises it from
// the exchange), which had been reported as a time limit.
TEST(StopCondition, AnotherRanksSignalIsASignalHere) {
  std::atomic<bool> mine{false}, peer{false};
  StopCondition stop{&mine};
  stop.peer_cancel = &peer;
  EXPECT_STREQ(stop.cause(), "");
  EXPECT_STREQ(stop.cause_of_stop(), "time-limit");  // another rank's clock, agreed on
  peer.store(true);
  EXPECT_STREQ(stop.cause(), "signal");
  EXPECT_FALSE(stop.cancelled_here());  // not told on as this rank's own
  mine.store(true);
  EXPECT_TRUE(stop.cancelled_here());
}

TEST(SearchOptions, EveryOptionHasAFlagAndAManifestKey) {
  std::set<std::string> flags, keys;
  for (const SearchOption& option : kSearchOptions) {
    const std::string flag = flag_name(option), key = manifest_key(option);
    EXPECT_EQ(flag.rfind("--", 0), 0u) << flag;
    EXPECT_EQ(flag.find(' '), std::string::npos) << flag;
    EXPECT_EQ(key.find_first_of(" -"), std::string::npos) << key;
    EXPECT_TRUE(flags.insert(flag).second) << flag;
    EXPECT_TRUE(keys.insert(key).second) << key;
    EXPECT_FALSE(option.help.empty()) << option.name;
    EXPECT_FALSE(option.allowed.empty()) << option.name;
  }
  // The names the README documents.
  for (const char* flag : {"--strategy", "--threads", "--top", "--time-limit", "--gap", "--max-skeletons", "--checkpoint",
                           "--checkpoint-interval", "--exchange-interval", "--cache-exchange", "--no-mixed-stages"})
    EXPECT_EQ(flags.count(flag), 1u) << flag;
  for (const char* key : {"strategy", "threads", "top", "time_limit_s", "gap", "max_skeletons", "mixed_stages"})
    EXPECT_EQ(keys.count(key), 1u) << key;
}

TEST(SearchOptions, DefaultsPassTheirOwnChecks) {
  const SearchConfig defaults;
  for (const SearchOption& option : kSearchOptions) EXPECT_NO_THROW(validate(option, defaults)) << option.name;
  EXPECT_NO_THROW(validate(defaults));
  EXPECT_NO_THROW(validate_flags(defaults));
  // A manifest that writes every default reads back the defaults.
  std::string options;
  for (const SearchOption& option : kSearchOptions)
    if (option.in_manifest)
      options += (options.empty() ? "" : ", ") + manifest_key(option) + ": " + value_text(option, defaults);
  const Manifest m = parse_manifest("options: {" + options + "}\n" + kEntries, "m.yaml", "");
  for (const SearchOption& option : kSearchOptions)
    if (option.in_manifest)
      EXPECT_EQ(value_text(option, SearchConfig{m.options, {}}), value_text(option, defaults)) << option.name;
}

TEST(SearchOptions, OutOfRangeIsRefusedAlikeByFlagAndManifestKey) {
  int checked = 0;
  for (const SearchOption& option : kSearchOptions) {
    for (const bool above : {false, true}) {
      const std::optional<SearchConfig> bad = out_of_range(option, above);
      if (!bad) continue;
      ++checked;
      const InputError library = input_error_of([&] { validate(option, *bad); });
      EXPECT_EQ(library.key(), option.name);
      EXPECT_EQ(library.allowed(), option.allowed);
      const InputError flag = input_error_of([&] { validate_flags(*bad); });
      EXPECT_EQ(flag.file(), "command line");
      EXPECT_EQ(flag.key(), flag_name(option));
      EXPECT_EQ(flag.value(), library.value());
      EXPECT_EQ(flag.allowed(), library.allowed());
      if (!option.in_manifest) continue;
      const std::string text = "options: {" + manifest_key(option) + ": " + value_text(option, *bad) + "}\n" + kEntries;
      const InputError key = input_error_of([&] { parse_manifest(text, "m.yaml", ""); });
      EXPECT_EQ(key.file(), "m.yaml");
      EXPECT_EQ(key.key(), "options." + manifest_key(option));
      EXPECT_EQ(key.value(), flag.value());
      EXPECT_EQ(key.allowed(), flag.allowed());
    }
  }
  // Below every numeric range, and above the thread count's (4097 threads).
  EXPECT_GE(checked, 9);
}

TEST(SearchOptions, TheManifestReadsEveryEntryOptionAndHintsAtTypos) {
  const Manifest m = parse_manifest(std::string("options: {max_skeletons: 5000}\n") + kEntries, "m.yaml", "");
  EXPECT_EQ(m.options.max_skeletons, 5000);
  const InputError typo =
      input_error_of([] { parse_manifest(std::string("options: {time_limit: 5}\n") + kEntries, "m.yaml", ""); });
  EXPECT_EQ(typo.key(), "options.time_limit");
  EXPECT_NE(typo.allowed().find("did you mean 'time_limit_s'"), std::string::npos) << typo.what();
  // MPI and checkpoint options are the command line's only.
  EXPECT_THROW(parse_manifest(std::string("options: {exchange_interval_s: 1}\n") + kEntries, "m.yaml", ""),
               InputError);
}

TEST(SearchOptions, ACheckpointNeedsTheAutohaapStrategy) {
  SearchConfig config;
  config.distributed.checkpoint_path = "x.ckpt";
  EXPECT_NO_THROW(validate_flags(config));
  config.search.strategy = "uniform";
  const InputError e = input_error_of([&] { validate_flags(config); });
  EXPECT_EQ(e.key(), "--checkpoint");
  EXPECT_EQ(e.value(), "x.ckpt");
}

TEST(SearchOptions, AGapNeedsTheAutohaapStrategy) {
  SearchConfig config;
  config.search.gap = 0.05;
  EXPECT_NO_THROW(validate_flags(config));
  EXPECT_NO_THROW(validate(config.search));
  // Only the autohaap search proves a bound; a gap of 0 (run to the end)
  // suits every strategy.
  config.search.strategy = "metis";
  const InputError e = input_error_of([&] { validate_flags(config); });
  EXPECT_EQ(e.key(), "--gap");
  EXPECT_EQ(e.value(), "0.05");
  EXPECT_THROW(validate(config.search), InputError);
  config.search.gap = 0;
  EXPECT_NO_THROW(validate_flags(config));
  // The manifest key reads like the flag.
  const Manifest m = parse_manifest(std::string("options: {gap: 0.02}\n") + kEntries, "m.yaml", "");
  EXPECT_EQ(m.options.gap, 0.02);
}

// A gap is a fraction of the best time (search_gap clamps to [0, 1]): one
// above 1 asks for nothing a search can prove, and is refused.
TEST(SearchOptions, AGapIsAFractionOfTheBestTime) {
  SearchConfig config;
  config.search.gap = 1;
  EXPECT_NO_THROW(validate_flags(config));
  config.search.gap = 1.5;
  const InputError e = input_error_of([&] { validate_flags(config); });
  EXPECT_EQ(e.key(), "--gap");
  EXPECT_EQ(e.allowed(), "a fraction from 0 to 1 (0: run to the end)");
}

}  // namespace
}  // namespace autohaap
