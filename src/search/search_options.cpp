#include "autohaap/search/search_options.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "autohaap/error.hpp"

namespace autohaap {
namespace {

template <class Struct, class T>
constexpr bool is_search_setting(T Struct::*) {
  return std::is_same_v<Struct, SearchSettings>;
}

std::string joined(std::string_view words, char by) {
  std::string out(words);
  std::replace(out.begin(), out.end(), ' ', by);
  return out;
}

bool in_range(const OptionRange& range, double value) {
  return std::isfinite(value) && (range.min_excluded ? value > range.min : value >= range.min) && value <= range.max;
}

bool in_range(const OptionRange& range, const std::string& value) {
  if (!range.choices) return true;
  const auto& names = range.choices();
  return std::find(names.begin(), names.end(), value) != names.end();
}

}  // namespace

const std::vector<std::string>& search_strategies() {
  static const std::vector<std::string> names = {"autohaap", "exhaustive", "reference", "uniform", "metis"};
  return names;
}

std::string seconds_text(double seconds) {
  // As the user wrote it (5, 0.1, nan), not std::to_string's 5.000000.
  std::ostringstream text;
  text << seconds;
  return text.str();
}

std::string flag_name(const SearchOption& option) {
  const bool on_by_default = std::visit(
      [](auto member) {
        if constexpr (std::is_same_v<decltype(member), bool dist::DistributedSettings::*>)
          return dist::DistributedSettings{}.*member;
        else if constexpr (std::is_same_v<decltype(member), bool SearchSettings::*>)
          return SearchSettings{}.*member;
        else
          return false;
      },
      option.member);
  std::string flag = on_by_default ? "--no-" : "--";
  flag += joined(option.name, '-');
  return flag;
}

std::string manifest_key(const SearchOption& option) { return joined(option.name, '_') + std::string(option.unit); }

std::string value_text(const SearchOption& option, const SearchConfig& config) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& value = setting(config, member);
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) return value;
        else if constexpr (std::is_same_v<T, bool>) return value ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) return seconds_text(value);
        else return std::to_string(value);
      },
      option.member);
}

void validate(const SearchOption& option, const SearchConfig& config) {
  const bool ok = std::visit(
      [&](auto member) {
        const auto& value = setting(config, member);
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) return in_range(option.range, value);
        else if constexpr (std::is_same_v<T, bool>) return true;
        else return in_range(option.range, static_cast<double>(value));
      },
      option.member);
  if (!ok) throw InputError("", std::string(option.name), value_text(option, config), std::string(option.allowed));
}

namespace {
// Only the autohaap strategy proves a bound (the exhaustive one proves the
// optimum only at its end, the baselines none), so only it can stop on a gap.
void validate_gap_rule(const SearchSettings& settings) {
  if (settings.gap > 0 && settings.strategy != "autohaap")
    throw InputError("", "gap", seconds_text(settings.gap),
                     "0 unless strategy is autohaap (only its search proves a bound on the optimum)");
  // A setting the baselines have no use for is refused, not ignored.
  if (settings.max_skeletons != SearchSettings{}.max_skeletons && settings.strategy != "autohaap")
    throw InputError("", "max skeletons", std::to_string(settings.max_skeletons),
                     "the default unless strategy is autohaap (only its initialization keeps a skeleton list)");
}
}  // namespace

void validate(const SearchConfig& config) {
  for (const SearchOption& option : kSearchOptions) validate(option, config);
  validate_gap_rule(config.search);
  if (!config.distributed.checkpoint_path.empty() && config.search.strategy != "autohaap")
    throw InputError("", "checkpoint", config.distributed.checkpoint_path,
                     "only with strategy autohaap (the baselines are not resumable)");
  if (config.distributed.checkpoint_path.empty() &&
      config.distributed.checkpoint_interval_s != dist::DistributedSettings{}.checkpoint_interval_s)
    throw InputError("", "checkpoint interval", seconds_text(config.distributed.checkpoint_interval_s),
                     "the default unless a checkpoint is written (--checkpoint FILE)");
}

void validate(const SearchSettings& settings) {
  const SearchConfig config{settings, {}};
  for (const SearchOption& option : kSearchOptions)
    if (std::visit([](auto member) { return is_search_setting(member); }, option.member)) validate(option, config);
  validate_gap_rule(settings);
}

void validate_flags(const SearchConfig& config) {
  try {
    validate(config);
  } catch (const InputError& e) {
    const auto* option = std::find_if(kSearchOptions.begin(), kSearchOptions.end(),
                                      [&](const SearchOption& o) { return o.name == e.key(); });
    std::string flag = "--";
    flag += joined(e.key(), '-');
    if (option != kSearchOptions.end()) flag = flag_name(*option);
    throw InputError("command line", flag, e.value(), e.allowed());
  }
}

}  // namespace autohaap
