// The scalar rules of every reader of user YAML and JSON (io/yaml_value.hpp):
// integers in decimal, YAML 1.2's booleans, numbers not quoted, text in
// UTF-8 — each checked on the rule itself and on the value reader that
// applies it, with the error that names the key.
#include "autohaap/io/yaml_value.hpp"

#include <gtest/gtest.h>

#include <string>

#include "autohaap/error.hpp"
#include "autohaap/io/plan_io.hpp"

namespace autohaap {
namespace {

YamlValue value_of(const std::string& yaml) {
  return YamlValue(parse_yaml("key: " + yaml + "\n", "test.yaml")["key"], "test.yaml", "key");
}

TEST(YamlScalarRules, IntegersAreDecimalWithoutALeadingZero) {
  for (const char* ok : {"0", "8", "+8", "-3", "1048576"}) EXPECT_TRUE(is_decimal_integer(ok)) << ok;
  // yaml-cpp reads 010 as 8 and 0x10 as 16; YAML 1.2 reads 010 as 10.
  for (const char* bad : {"", "+", "-", "010", "00", "0x10", "0o10", "1e3", "8.0", " 8", "8 ", "1_000"})
    EXPECT_FALSE(is_decimal_integer(bad)) << bad;
}

// The command line's numbers (CLI11 reads 0x10 as 16 and 0x1p4 as a
// hexadecimal float).
TEST(YamlScalarRules, NumbersAreDecimal) {
  for (const char* ok : {"0", "10", "+1.5", "-.5", "5.", "1e3", "2.5E-3", "0.25"})
    EXPECT_TRUE(is_decimal_number(ok)) << ok;
  for (const char* bad : {"", ".", "+", "e3", "1e", "1e+", "0x10", "0x1p4", "inf", "nan", "1.5s", " 1", "1 ", "1,5"})
    EXPECT_FALSE(is_decimal_number(bad)) << bad;
}

// A file of more documents than the reader looks at is refused, not read
// as its first (yaml-cpp's LoadAll can loop forever on some streams).
TEST(YamlScalarRules, ManyEmptyDocumentsAreNotAFile) {
  std::string text = "global_batch: 8\n";
  for (int i = 0; i < 10; ++i) text += "---\n";
  EXPECT_THROW(parse_yaml(text + "global_batch: 16\n", "t.yaml"), InputError);
  EXPECT_THROW(parse_yaml(text, "t.yaml"), InputError);
  EXPECT_NO_THROW(parse_yaml("global_batch: 8\n---\n", "t.yaml"));
}

TEST(YamlScalarRules, BooleansAreYaml12s) {
  for (const char* t : {"true", "True", "TRUE"}) EXPECT_EQ(yaml12_bool(t), true) << t;
  for (const char* f : {"false", "False", "FALSE"}) EXPECT_EQ(yaml12_bool(f), false) << f;
  for (const char* other : {"yes", "no", "on", "off", "y", "n", "1", "0", "tRue", ""})
    EXPECT_FALSE(yaml12_bool(other).has_value()) << other;
}

TEST(YamlScalarRules, TextIsWellFormedUtf8) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("r\xC3\xA9seau"));                 // é, two bytes
  EXPECT_TRUE(is_valid_utf8("\xE2\x82\xAC"));                  // €, three bytes
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x9A\x80"));              // U+1F680, four bytes
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));              // U+10FFFF, the last code point
  EXPECT_FALSE(is_valid_utf8("bad\xFF"));                      // never a UTF-8 byte
  EXPECT_FALSE(is_valid_utf8("\x80"));                         // a continuation byte alone
  EXPECT_FALSE(is_valid_utf8("\xC3"));                         // a lead byte cut short
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));                     // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\xAF"));                 // overlong, three bytes
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));                 // a UTF-16 surrogate, U+D800
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));             // U+110000, past the last
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));                     // three-byte form cut short
}

TEST(YamlScalarRules, TheValueReaderAppliesThemNamingTheKey) {
  EXPECT_EQ(value_of("8").as_int(Bound::positive), 8);
  EXPECT_EQ(value_of("+8").as_int(Bound::positive), 8);
  for (const char* bad : {"010", "0x8", "\"8\"", "'8'"}) {
    try {
      value_of(bad).as_int(Bound::positive);
      ADD_FAILURE() << bad << " was read as an integer";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "key");
      EXPECT_EQ(e.allowed(), "a positive integer, written in decimal and not quoted") << bad;
    }
  }
  // A decimal integer too large to hold says so, not that it is no integer.
  for (const char* huge : {"2147483648", "-99999999999999999999"}) {
    try {
      value_of(huge).as_int(Bound::any);
      ADD_FAILURE() << huge << " was read as an integer";
    } catch (const InputError& e) {
      EXPECT_EQ(e.allowed(), "an integer of at most 2147483647 in magnitude (each key's own range is smaller)");
    }
  }
  EXPECT_DOUBLE_EQ(value_of("0.5").as_double(Bound::fraction), 0.5);
  EXPECT_THROW(value_of("\"0.5\"").as_double(Bound::fraction), InputError);
  EXPECT_TRUE(value_of("true").as_bool());
  EXPECT_FALSE(value_of("False").as_bool());
  for (const char* bad : {"yes", "off", "\"true\""}) EXPECT_THROW(value_of(bad).as_bool(), InputError) << bad;
  // A quoted name is a name, whatever it looks like.
  EXPECT_EQ(value_of("\"010\"").as_string(), "010");
  EXPECT_EQ(value_of("yes").as_string(), "yes");
  try {
    value_of("\"r\xFF\"").as_string();
    ADD_FAILURE() << "a name that is not UTF-8 was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.allowed(), "text in UTF-8");
  }
  // A tag that makes a scalar other than text is refused; !!str is text.
  EXPECT_EQ(value_of("!!str 4").as_string(), "4");
  for (const char* tagged : {"!!binary aGVsbG8=", "!!int 4", "!!float 4"}) {
    try {
      value_of(tagged).as_string();
      ADD_FAILURE() << tagged << " was read as text";
    } catch (const InputError& e) {
      EXPECT_EQ(e.allowed().rfind("a string, untagged or tagged !!str (not tag:yaml.org,2002:", 0), 0u) << e.allowed();
    }
  }
}

TEST(YamlScalarRules, PlanFilesKeepThemToo) {
  const std::string head =
      "format: autohaap-plan/1\nmodel: gpt3-1.3b\ncluster: a100x8\nglobal_batch: 512\nmicro_batch_size: 8\n"
      "num_micro_batches: 64\nvpp: 1\nzero: 1\nstages:\n";
  const std::string stage = "  - {device: a100-80gb, group: 0, first_gpu: 0, gpus: 8, cp: 1, dp: 8, ";
  const std::string good = head + stage + "tp: 1, recompute: none, layers: [0, 24]}\n";
  EXPECT_EQ(plan_from_string(good, false, "plan.yaml").stages.front().tp, 1);
  try {
    plan_from_string(head + stage + "tp: 01, recompute: none, layers: [0, 24]}\n", false, "plan.yaml");
    ADD_FAILURE() << "tp: 01 was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "stages[0].tp");
  }
}

TEST(YamlScalarRules, PlanFileNamesSayTheirFormat) {
  for (const char* ok : {"plan.json", "plan.yaml", "plan.yml", "PLAN.JSON", "dir.d/plan.Yaml"})
    EXPECT_NO_THROW(check_plan_file_name(ok, "-o")) << ok;
  for (const char* bad : {"plan.txt", "plan", "plan.jsn", "plan.json.bak", "dir.json/plan"}) {
    try {
      check_plan_file_name(bad, "-o");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "-o");
      EXPECT_EQ(e.allowed(), "a plan file name ending .json, .yaml or .yml");
    }
  }
}

}  // namespace
}  // namespace autohaap
