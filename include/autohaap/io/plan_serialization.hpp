// Plan serialization: cereal save/load functions for Plan and its parts,
// for the distributed layer (binary archives for messages and checkpoints)
// and for plans nested in other cereal documents. They are a visitor of the
// plan schema (io/plan_schema.hpp), so a plan has one schema whatever
// carries it: every key in the schema's order, including the sections and
// keys a plan file may leave out; the file-only keys (each stage's `nodes`,
// the embedded `specs`) are not stored. Plan files are written and read by
// io/plan_io.hpp, from the same schema.
//
// Loading names what failed: a missing key, a value of the wrong type, an
// unknown recompute name, a `layers` list that is not 2 long or a wrong
// format tag throws PlanFieldError carrying the key path ("stages[2].tp").
// Range and cross-field rules (tp >= 1, gpus == tp*dp, ...) are not checked
// here but by check_plan() in io/plan_io.hpp, so binary archives of trusted
// plans pay nothing for them.
//
// Cost: linear in the number of stages. Stateless; safe from any thread.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autohaap/io/plan_schema.hpp"
#include "autohaap/plan.hpp"

namespace autohaap {

// A plan document did not hold what the schema asks for at `key_path`.
// `value` is the offending value where the loader saw it (an unknown
// recompute name); it is empty when the archive could not even read the
// value (missing key, wrong type). Derives from cereal::Exception so code
// that handles corrupt archives generically still catches it.
class PlanFieldError : public cereal::Exception {
 public:
  PlanFieldError(std::string key_path, std::optional<std::string> value, std::string allowed)
      : cereal::Exception(compose(key_path, value, allowed)),
        key_path_(std::move(key_path)), value_(std::move(value)), allowed_(std::move(allowed)) {}

  const std::string& key_path() const { return key_path_; }
  const std::optional<std::string>& value() const { return value_; }
  const std::string& allowed() const { return allowed_; }

  // The same error one level up: `parent` is a key ("stages") or an index
  // ("[2]").
  PlanFieldError under(const std::string& parent) const {
    std::string path = parent;
    if (!key_path_.empty() && key_path_.front() != '[') path += '.';
    path += key_path_;
    return PlanFieldError(path, value_, allowed_);
  }

 private:
  static std::string compose(const std::string& key_path, const std::optional<std::string>& value,
                             const std::string& allowed) {
    std::string m = "plan: " + key_path + ": ";
    m += value ? "got '" + *value + "'; allowed: " : "expected ";
    return m + allowed;
  }
  std::string key_path_;
  std::optional<std::string> value_;
  std::string allowed_;
};

// The most items a plan's list (its stages, a stage's replica sets) may
// hold: a stage holds at least one layer, and a model at most 1024
// (limits::kMaxLayers, which plan_io.cpp asserts is this).
inline constexpr std::size_t kMaxPlanListItems = 1024;

namespace serialization_detail {

// What a value of type T looks like, for "expected ..." messages (plan files
// word their errors the same way).
template <class T>
constexpr const char* expected_kind() {
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  else if constexpr (std::is_enum_v<T>) return plan_schema::EnumNames<T>::kAllowed;
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (std::is_same_v<T, std::vector<int>>) return "a list of integers";
  else if constexpr (std::is_same_v<T, std::vector<double>>) return "a list of numbers";
  else return "a mapping";
}

// "[i]": the key path step of list item i (built only for an error).
inline std::string index_key(std::size_t i) {
  std::string key = "[";
  key += std::to_string(i);
  key += ']';
  return key;
}

// A list of described structs on load: like std::vector's own, but an error
// inside an item names its index.
template <class T>
struct ListIn {
  std::vector<T>& items;
  const char* item_kind;
  template <class Archive>
  void load(Archive& ar) {
    cereal::size_type n = 0;
    ar(cereal::make_size_tag(n));
    // Refused before a single item is built: a file of 400,000 stages
    // would otherwise take gigabytes before the plan's rules refuse it.
    if (n > kMaxPlanListItems)
      throw PlanFieldError("", std::to_string(n) + " items", "at most " + std::to_string(kMaxPlanListItems));
    items.assign(static_cast<std::size_t>(n), T{});
    for (std::size_t i = 0; i < items.size(); ++i) {
      try {
        ar(items[i]);
      } catch (const PlanFieldError& e) {
        throw e.under(index_key(i));
      } catch (const cereal::Exception&) {
        throw PlanFieldError(index_key(i), std::nullopt, item_kind);
      }
    }
  }
};

// The schema visitor for cereal archives, saving or loading. On load, any
// archive failure below a key becomes a PlanFieldError whose path starts
// with that key; the archive's own messages ("NVP not found", "rapidjson
// assertion IsInt()") name neither the key path nor the stage.
template <class Archive>
class CerealVisitor {
 public:
  static constexpr bool kLoading = Archive::is_loading::value;
  explicit CerealVisitor(Archive& ar) : ar_(ar) {}

  void tag(const char* key, const char* text) {
    std::string value = text;
    io(key, value, expected_kind<std::string>());
    if (kLoading && value != text) throw PlanFieldError(key, value, text);
  }

  template <class T>
  void field(const char* key, T& member) {
    if constexpr (std::is_enum_v<std::remove_const_t<T>>) {
      using Names = plan_schema::EnumNames<std::remove_const_t<T>>;
      std::string name = Names::name(member);
      io(key, name, Names::kAllowed);
      if constexpr (kLoading) {
        const auto parsed = Names::parse(name);
        if (!parsed) throw PlanFieldError(key, name, Names::kAllowed);
        member = *parsed;
      }
    } else {
      io(key, member, expected_kind<std::remove_const_t<T>>());
    }
  }

  // Archives hold every key, those added later too.
  template <class T, class U>
  void optional(const char* key, T& member, const U&) { field(key, member); }

  template <class I>
  void range(const char* key, I& begin, I& end) {
    std::vector<int> pair{begin, end};
    io(key, pair, expected_kind<std::vector<int>>());
    if constexpr (kLoading) {
      if (pair.size() != 2) {
        std::string shown = "[";
        for (std::size_t i = 0; i < pair.size(); ++i) shown += (i ? ", " : "") + std::to_string(pair[i]);
        throw PlanFieldError(key, shown + "]", "[first, end): a list of 2 integers");
      }
      begin = pair[0];
      end = pair[1];
    }
  }

  template <class T>
  void list(const char* key, std::vector<T>& items, const char* kind, const char* item_kind) {
    if constexpr (kLoading) {
      ListIn<T> in{items, item_kind};
      io(key, in, kind);
    } else {
      io(key, items, kind);
    }
  }
  template <class T>
  void list(const char* key, const std::vector<T>& items, const char* kind, const char*) {
    io(key, items, kind);
  }

  // Archives hold both: the one-device keys, then the list.
  template <class T, class Keys>
  void either(const char* key, T& items, const char* kind, const char* item_kind, Keys keys) {
    keys();
    list(key, items, kind, item_kind);
  }

  // Archives always hold the section, written or not in a file.
  template <class T, class Written>
  void section(const char* key, T& member, Written) { io(key, member, expected_kind<std::remove_const_t<T>>()); }

  template <class Count>
  void informational(const char*, Count&) {}  // a file's, for its readers
  template <class S>
  void specs(const char*, S&) {}

 private:
  template <class T>
  void io(const char* key, T&& value, const char* kind) {
    if constexpr (kLoading) {
      try {
        ar_(cereal::make_nvp(key, value));
      } catch (const PlanFieldError& e) {
        throw e.under(key);
      } catch (const cereal::Exception&) {
        throw PlanFieldError(key, std::nullopt, kind);
      }
    } else {
      ar_(cereal::make_nvp(key, value));
    }
  }

  Archive& ar_;
};

}  // namespace serialization_detail

// One function per type and direction, all from the schema, so save and
// load keep the same order, which binary archives need.
template <class Archive>
void save(Archive& ar, const ReplicaSet& r) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, r);
}
template <class Archive>
void load(Archive& ar, ReplicaSet& r) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, r);
}
template <class Archive>
void save(Archive& ar, const StagePlan& s) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, s);
}
template <class Archive>
void load(Archive& ar, StagePlan& s) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, s);
}
template <class Archive>
void save(Archive& ar, const PredictedPerformance& p) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, p);
}
template <class Archive>
void load(Archive& ar, PredictedPerformance& p) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, p);
}
template <class Archive>
void save(Archive& ar, const SearchStats& s) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, s);
}
template <class Archive>
void load(Archive& ar, SearchStats& s) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, s);
}
template <class Archive>
void save(Archive& ar, const Plan& p) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, p);
}
template <class Archive>
void load(Archive& ar, Plan& p) {
  serialization_detail::CerealVisitor<Archive> v(ar);
  plan_schema::describe(v, p);
}

}  // namespace autohaap
