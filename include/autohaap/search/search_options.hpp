// Search options: the one table of what a user sets for a search — its
// name, kind, default, range, help and the settings member it fills — from
// which `autohaap search` adds its flags (src/cli/search_command.cpp), the
// batch manifest reads its `options:` keys (batch/manifest.hpp) and
// validate() checks settings built in code. Every path refuses a value with
// the same InputError value and allowed text; only file and key differ
// (command line + flag, manifest + key path, "" + the name in words).
//
// Names. Each option has one name in words ("time limit"), the key that
// validate() reports. From it:
//   flag          "--" + words joined by '-'  (--time-limit); a switch that
//                 is on by default is turned off by "--no-" + that
//                 (--no-mixed-stages); `short_flag` adds e.g. -k;
//   manifest key  words joined by '_', plus the unit suffix ("_s" for
//                 seconds: time_limit_s), for options that apply to each
//                 batch entry's one-process search (`in_manifest`).
// Defaults are the member initializers of SearchSettings and
// DistributedSettings below; --help shows them.
//
// Adding an option is one edit in this file: a member with its default in
// SearchSettings (every search) or DistributedSettings (MPI and
// checkpoints), and its row in kSearchOptions. The flag, the manifest key,
// --help, validation and the table's unit test follow.
//
// Thread safety: the table is immutable; the functions keep no state.
// Cost: a few comparisons per option.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace autohaap {

// The search's settings: plain values a user chooses. What runs only under
// MPI or with a checkpoint is separate (dist::DistributedSettings).
struct SearchSettings {
  std::string strategy = "autohaap";  // autohaap | exhaustive | reference | uniform | metis
  int threads = 0;                    // 0: all hardware threads
  int top_k = 1;
  double time_limit_s = 0;                    // 0: none; else stop and return the best so far
  // autohaap: stop once the best plan is proven within this relative gap of
  // the optimum ((best - bound) / best <= gap, searcher.hpp); 0: run to the
  // end (the exact top-K).
  double gap = 0;
  std::int64_t exhaustive_limit = 5'000'000;  // candidates the exhaustive strategy accepts
  std::int64_t reference_limit = 200'000;     // skeletons the reference strategy accepts
  // autohaap: skeletons initialization may keep (each ~0.1-3 KB, by stage
  // count); beyond it the list keeps those of least lower bound, the search
  // runs on them, and the least bound dropped is part of the proven gap
  // (PrepareOptions::max_skeletons). 0: no limit.
  std::int64_t max_skeletons = 250'000;
  double progress_interval_s = 0.2;
  // autohaap: a found plan's idle GPUs may join its stages as replica sets
  // of their own device type (search/mixed_stages.hpp); false keeps every
  // stage on one device type.
  bool mixed_stages = true;
};

namespace dist {
// The settings of a distributed search (or one with a checkpoint) beyond
// the search's own.
struct DistributedSettings {
  double exchange_interval_s = 0.1;
  // Ranks also ship the latency-cache entries they add. Off: measured, an
  // analytic entry costs about as much to ship as to recompute, and the
  // exchange took 18-30% of rank time for 4-7 points of hit rate (README,
  // "Distributed search"); on where a stage estimate is expensive.
  bool exchange_cache = false;
  std::string checkpoint_path;        // empty: no checkpoint
  double checkpoint_interval_s = 30;
  int chunks_per_rank = 64;           // granularity of shares and rebalancing
};
}  // namespace dist

// Everything the options set, together.
struct SearchConfig {
  SearchSettings search;
  dist::DistributedSettings distributed;
};

// Names accepted by SearchSettings::strategy.
const std::vector<std::string>& search_strategies();

// The member an option fills.
using SearchOptionMember =
    std::variant<std::string SearchSettings::*, int SearchSettings::*, std::int64_t SearchSettings::*,
                 double SearchSettings::*, bool SearchSettings::*, std::string dist::DistributedSettings::*,
                 bool dist::DistributedSettings::*, double dist::DistributedSettings::*>;

// What a value must be. Numbers: finite, >= min (> min when
// min_excluded) and <= max. Text: one of choices() when given, else
// anything.
struct OptionRange {
  double min = 0;
  bool min_excluded = false;
  const std::vector<std::string>& (*choices)() = nullptr;
  double max = std::numeric_limits<double>::infinity();
};

// The most worker threads a process starts: beyond any machine's cores,
// and oneTBB fails to start tens of thousands of workers (it crashes in
// its allocator at 100,000).
inline constexpr int kMaxThreads = 4096;
// The most plans a search lists: the search proves each of the top K, so
// its work grows with K (100,000 took 0.7 GB and answered a 6 s time limit
// and an interrupt after 24 s, where K = 1 takes 0.2 s), and no one reads
// more. A sweep over more configurations is a batch manifest.
inline constexpr int kMaxTopK = 10000;
// The shortest intervals between checkpoints (each tens of MB on a large
// search) and between MPI exchanges: below them the search would do little
// else.
inline constexpr double kMinCheckpointIntervalS = 0.01;
inline constexpr double kMinExchangeIntervalS = 0.001;

struct SearchOption {
  std::string_view name;        // in words; see the naming rule above
  std::string_view short_flag;  // e.g. "-k"; empty: none
  std::string_view unit;        // manifest key suffix, e.g. "_s"; empty: none
  SearchOptionMember member;
  OptionRange range;
  std::string_view allowed;     // the range in words, as errors say it
  std::string_view help;
  bool in_manifest;             // also a batch manifest `options:` key
};

// The largest --max-skeletons: past any memory (1.7 PB of skeletons), so
// no limit in practice, and its memory guard (twice it) stays far inside
// 64 bits; 2^62 and up had overflowed the guard into an internal error.
inline constexpr double kMaxSkeletonsLimit = 1e12;

// The table, in --help and validation order.
inline constexpr std::array kSearchOptions{
    SearchOption{"strategy", "-s", "", &SearchSettings::strategy, {0, false, &search_strategies},
                 "autohaap, exhaustive, reference, uniform, metis", "autohaap | exhaustive | reference | uniform | metis", true},
    SearchOption{"threads", "-j", "", &SearchSettings::threads, {0, false, nullptr, kMaxThreads}, "0 (all) to 4096",
                 "worker threads per process, or per MPI rank (0: all cores)", true},
    SearchOption{"top", "-k", "", &SearchSettings::top_k, {1, false, nullptr, kMaxTopK}, "an integer from 1 to 10000",
                 "plans to list", true},
    SearchOption{"time limit", "", "_s", &SearchSettings::time_limit_s, {0}, "a number of seconds >= 0 (0: none)",
                 "stop after S seconds with the best plan so far (exit 4)", true},
    SearchOption{"gap", "", "", &SearchSettings::gap, {0, false, nullptr, 1},
                 "a fraction from 0 to 1 (0: run to the end)",
                 "stop once the best plan is proven within G of the optimum, e.g. 0.01 for 1% (exit 0); under "
                 "mpirun which plan within G may vary from run to run",
                 true},
    SearchOption{"mixed stages", "", "", &SearchSettings::mixed_stages, {}, "on or off",
                 "keep every stage on one device type (by default idle GPUs may join a stage as replicas of their "
                 "own type, each with its share of the micro-batch)",
                 true},
    SearchOption{"max skeletons", "", "", &SearchSettings::max_skeletons, {0, false, nullptr, kMaxSkeletonsLimit},
                 "0 (no limit) to 1000000000000",
                 "most skeletons kept after initialization (about 1.7 KB each; 0: no limit); bounds memory: past it, those "
                 "of least lower bound are searched and the rest bound the proven gap", true},
    SearchOption{"checkpoint", "", "", &dist::DistributedSettings::checkpoint_path, {},
                 "a file path (only with strategy autohaap)",
                 "save the search state to FILE at intervals and at the end; an existing checkpoint of the same "
                 "search is resumed",
                 false},
    SearchOption{"checkpoint interval", "", "_s", &dist::DistributedSettings::checkpoint_interval_s,
                 {kMinCheckpointIntervalS}, "a number of seconds >= 0.01", "seconds between checkpoints", false},
    SearchOption{"exchange interval", "", "_s", &dist::DistributedSettings::exchange_interval_s,
                 {kMinExchangeIntervalS}, "a number of seconds >= 0.001",
                 "seconds between exchanges of bounds and cache entries among MPI ranks", false},
    SearchOption{"cache exchange", "", "", &dist::DistributedSettings::exchange_cache, {}, "on or off",
                 "MPI ranks also exchange the latency-cache entries they add, not only bounds (pays where a stage "
                 "estimate costs more to compute than to ship)",
                 false},
};

// The value a member pointer of the table names, within `config`.
template <class T>
T& setting(SearchConfig& config, T SearchSettings::*member) {
  return config.search.*member;
}
template <class T>
T& setting(SearchConfig& config, T dist::DistributedSettings::*member) {
  return config.distributed.*member;
}
template <class T>
const T& setting(const SearchConfig& config, T SearchSettings::*member) {
  return config.search.*member;
}
template <class T>
const T& setting(const SearchConfig& config, T dist::DistributedSettings::*member) {
  return config.distributed.*member;
}

// "--time-limit"; "--no-mixed-stages" for a switch on by default.
std::string flag_name(const SearchOption& option);
// "time_limit_s".
std::string manifest_key(const SearchOption& option);
// The option's value in `config` as a person writes it (5, 0.1, nan).
std::string value_text(const SearchOption& option, const SearchConfig& config);

// Throws InputError("", option.name, value_text, option.allowed) when the
// option's value in `config` is out of its range.
void validate(const SearchOption& option, const SearchConfig& config);
// Every option in table order, then the rules between options (a
// checkpoint only with strategy autohaap: key "checkpoint"; a gap only
// with strategy autohaap: key "gap").
void validate(const SearchConfig& config);
// The options of SearchSettings alone, and the gap rule. run_search, the
// search driver and the CLI call it first.
void validate(const SearchSettings& settings);
// validate(config) with the errors keyed by flag, file "command line".
void validate_flags(const SearchConfig& config);

// A number of seconds as a person writes it (5, 0.1, nan), for messages.
std::string seconds_text(double seconds);

}  // namespace autohaap
