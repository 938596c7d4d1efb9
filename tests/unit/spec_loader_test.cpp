// The spec loader: good files load with their documented defaults, every
// kind of bad input is one InputError naming the key path and the value,
// and every file shipped under configs/ equals its catalog entry.
#include "autohaap/io/spec_loader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <unistd.h>

#include "autohaap/error.hpp"
#include "autohaap/io/catalog.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

// Each test writes its YAML into a fresh folder of its own; the process id
// keeps concurrent runs from different build trees apart.
class SpecLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("autohaap_spec_loader_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  fs::path dir_;
};

// Runs `load` and returns the InputError it must throw.
InputError error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError("", "", "", "");
}

#define EXPECT_INPUT_ERROR(call, expected_key, expected_value)    \
  do {                                                             \
    const InputError e_ = error_of([&] { (void)(call); });         \
    EXPECT_EQ(e_.key(), expected_key) << e_.what();                \
    EXPECT_EQ(e_.value(), expected_value) << e_.what();            \
  } while (0)

const char* kGpt = R"(name: tiny
family: gpt
layers: 4
hidden: 256
heads: 8
vocab: 1000
seq_len: 128
)";

// ------------------------------------------------------------------ models

TEST_F(SpecLoader, GptModelTakesDocumentedDefaults) {
  const ModelSpec m = load_model(write("tiny.yaml", kGpt));
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.family, ModelFamily::gpt);
  EXPECT_EQ(m.layers, 4);
  EXPECT_EQ(m.ffn_hidden, 1024);  // 4 * hidden
  EXPECT_EQ(m.kv_heads, 8);       // = heads
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_FALSE(m.flash_attention);
}

TEST(CheckName, PrintableUtf8IsANameAndWhatReadsAsAnotherIsNot) {
  for (const std::string& ok :
       std::vector<std::string>{"Llama 3 \xe2\x80\x94 70B", "caf\xc3\xa9", "\xf0\x9f\x9a\x80 rocket", std::string(256, 'x')})
    EXPECT_NO_THROW(check_name("f.yaml", "name", ok, false)) << ok;
  const std::pair<std::string, std::string> refused[] = {
      {"a\xe2\x80\xae" "b", "a\\u202eb"},       // right-to-left override: reorders the line
      {"ev\xe2\x80\x8bil", "ev\\u200bil"},   // zero-width space: reads as "evil"
      {"\xef\xbb\xbfname", "\\ufeffname"},   // byte-order mark
      {"x\xc2\x85y", "x\\x85y"},             // C1 control (next line)
      {"bad\xff", "bad\\xff"},                // not UTF-8
      {"over\xc0\xaflong", "over\\xc0"},       // overlong '/'
      {"cut\xe2\x80", "cut\\xe2"},             // a sequence cut short
      {"sur\xed\xa0\x80", "sur\\xed"},        // a UTF-16 surrogate
      {"a\xef\xbf\xbe" "b", "a\\ufffeb"},       // noncharacters: XML 1.0 forbids them (the SVG report)
      {"c\xef\xbf\xbf" "d", "c\\uffffd"},
      {"e\xef\xb7\x90" "f", "e\\ufdd0f"},
      {" lead", " lead"},                    // reads as "lead", and is another name
      {"trail ", "trail "},
  };
  for (const auto& [name, shown] : refused) {
    try {
      check_name("f.yaml", "name", name, false);
      ADD_FAILURE() << shown << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("got '" + shown), std::string::npos) << e.what();
    }
  }
  try {
    check_name("f.yaml", "name", std::string(257, 'x'), false);
    ADD_FAILURE() << "257 bytes accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 256 bytes (this one has 257)"), std::string::npos) << e.what();
  }
}

TEST_F(SpecLoader, ModelNameDefaultsToTheFileStem) {
  const ModelSpec m = load_model(write("my-model.yml", "family: llama\nlayers: 2\nhidden: 64\nffn_hidden: 172\n"
                                                       "heads: 4\nkv_heads: 2\nvocab: 100\nseq_len: 16\n"));
  EXPECT_EQ(m.name, "my-model");
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_TRUE(m.flash_attention);
}

TEST_F(SpecLoader, ModelMissingRequiredKey) {
  EXPECT_INPUT_ERROR(load_model(write("m.yaml", "family: gpt\nlayers: 2\nhidden: 64\nvocab: 10\nseq_len: 8\n")),
                     "heads", "(missing)");
  // Llama's SwiGLU width has no rule of thumb: it must be given.
  EXPECT_INPUT_ERROR(load_model(write("l.yaml", "family: llama\nlayers: 2\nhidden: 64\nheads: 4\nvocab: 10\n"
                                                "seq_len: 8\n")),
                     "ffn_hidden", "(missing)");
  EXPECT_INPUT_ERROR(load_model(write("f.yaml", "layers: 2\n")), "family", "(missing)");
}

TEST_F(SpecLoader, ModelWrongTypes) {
  EXPECT_INPUT_ERROR(load_model(write("a.yaml", "family: gpt\nlayers: abc\n")), "layers", "abc");
  const std::string fractional = std::string(kGpt).replace(std::string(kGpt).find("hidden: 256"), 11, "hidden: 25.6");
  EXPECT_INPUT_ERROR(load_model(write("c.yaml", fractional)), "hidden", "25.6");
  EXPECT_INPUT_ERROR(load_model(write("d.yaml", std::string(kGpt) + "tied_embeddings: maybe\n")), "tied_embeddings",
                     "maybe");
  EXPECT_INPUT_ERROR(load_model(write("e.yaml", "family: bert\nlayers: 2\n")), "family", "bert");
  // A map where a number belongs is shown in flow style.
  EXPECT_INPUT_ERROR(load_model(write("g.yaml", "family: gpt\nlayers: {n: 2}\n")), "layers", "{n: 2}");
}

TEST_F(SpecLoader, ModelNonPositiveSizes) {
  std::string zero = kGpt;
  zero.replace(zero.find("layers: 4"), 9, "layers: 0");
  EXPECT_INPUT_ERROR(load_model(write("z.yaml", zero)), "layers", "0");
  std::string negative = kGpt;
  negative.replace(negative.find("vocab: 1000"), 11, "vocab: -5");
  EXPECT_INPUT_ERROR(load_model(write("n.yaml", negative)), "vocab", "-5");
}

TEST_F(SpecLoader, ModelUnknownKeyIsRejectedWithAHint) {
  const InputError e = error_of([&] { load_model(write("t.yaml", std::string(kGpt) + "ffn_hiden: 1024\n")); });
  EXPECT_EQ(e.key(), "ffn_hiden");
  EXPECT_EQ(e.value(), "ffn_hiden");
  EXPECT_NE(e.allowed().find("did you mean 'ffn_hidden'"), std::string::npos) << e.what();
  EXPECT_NE(e.allowed().find("kv_heads"), std::string::npos);
}

TEST_F(SpecLoader, ModelHeadDivisibility) {
  std::string odd = kGpt;
  odd.replace(odd.find("hidden: 256"), 11, "hidden: 260");
  EXPECT_INPUT_ERROR(load_model(write("h.yaml", odd)), "hidden", "260");
  EXPECT_INPUT_ERROR(load_model(write("k.yaml", std::string(kGpt) + "kv_heads: 3\n")), "kv_heads", "3");
}

TEST_F(SpecLoader, GenericLayerList) {
  const ModelSpec m = load_model(write("net.yaml", R"(family: generic
seq_len: 64
layers:
  - {name: a, params: 100, forward_gflop: 0.5, activation_MB: 1, output_MB: 0.25}
  - {params: 200, forward_gflop: 1.5, activation_MB: 2, output_MB: 0.5}
)"));
  EXPECT_EQ(m.family, ModelFamily::generic);
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.heads, 1);
  ASSERT_EQ(m.generic_layers.size(), 2u);
  EXPECT_EQ(m.generic_layers[0].name, "a");
  EXPECT_EQ(m.generic_layers[1].name, "layer1");
  EXPECT_DOUBLE_EQ(m.generic_layers[1].forward_gflop, 1.5);
}

TEST_F(SpecLoader, GenericLayerListErrors) {
  EXPECT_INPUT_ERROR(load_model(write("a.yaml", "family: generic\nseq_len: 8\nlayers:\n"
                                                "  - {params: 1, forward_gflop: 1, activation_MB: 1, output_MB: 1}\n"
                                                "  - {forward_gflop: 1, activation_MB: 1, output_MB: 1}\n")),
                     "layers[1].params", "(missing)");
  EXPECT_INPUT_ERROR(load_model(write("b.yaml", "family: generic\nseq_len: 8\nlayers:\n"
                                                "  - {params: 1, forward_gflop: -1, activation_MB: 1, output_MB: 1}\n")),
                     "layers[0].forward_gflop", "-1");
  EXPECT_INPUT_ERROR(load_model(write("e.yaml", "family: generic\nseq_len: 8\nlayers:\n"
                                                "  - {params: 1.5, forward_gflop: 1, activation_MB: 1, output_MB: 1}\n")),
                     "layers[0].params", "1.5");
  // A model of no work and no weights (it had trained at 102 million
  // tokens/s, MFU 0).
  EXPECT_INPUT_ERROR(load_model(write("z.yaml", "family: generic\nseq_len: 8\nlayers:\n"
                                                "  - {params: 0, forward_gflop: 0, activation_MB: 0, output_MB: 0}\n")),
                     "layers", "1");
  // A count makes no sense without the layers themselves...
  EXPECT_INPUT_ERROR(load_model(write("c.yaml", "family: generic\nseq_len: 8\nlayers: 4\n")), "layers", "4");
  // ...and a transformer cannot take a layer list.
  EXPECT_INPUT_ERROR(load_model(write("d.yaml", "family: gpt\nlayers: [1, 2]\n")), "layers", "[1, 2]");
  // Transformer-only keys are refused rather than ignored.
  EXPECT_INPUT_ERROR(load_model(write("e.yaml", "family: generic\nseq_len: 8\nheads: 4\nlayers: []\n")), "heads",
                     "heads");
}

TEST_F(SpecLoader, MalformedYamlNamesTheLine) {
  const std::string path = write("bad.yaml", "family: gpt\nlayers: 4\nhidden: [256\n");
  const InputError e = error_of([&] { load_model(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.key().rfind("line ", 0), 0u) << e.key();
  EXPECT_EQ(e.allowed(), "well-formed YAML");
}

// A second document was silently ignored (the file read as its first);
// an empty one after a trailing '---' is still one document, and a
// malformed later document is malformed YAML. The streams on which
// yaml-cpp's LoadAll never returns (a "document" that consumes no token,
// found by a random search over YAML punctuation) end too: past the nine
// documents looked at, a file is refused.
TEST_F(SpecLoader, OneYamlDocumentPerFile) {
  const std::string second = std::string(kGpt) + "---\nlayers: 96\n";
  const InputError two = error_of([&] { load_model(write("two.yaml", second)); });
  EXPECT_EQ(two.key(), "line 9, column 1");
  EXPECT_EQ(two.value(), "a second YAML document");
  EXPECT_EQ(load_model(write("trailing.yaml", std::string(kGpt) + "---\n")).layers, 4);
  EXPECT_EQ(load_model(write("ended.yaml", std::string(kGpt) + "...\n---\n~\n")).layers, 4);
  EXPECT_EQ(error_of([&] { load_model(write("bad.yaml", std::string(kGpt) + "---\n]\n")); }).allowed(),
            "well-formed YAML");
  for (const char* endless : {"&*\n,:&", ",%,,# ", ",,,\">.a%", ",\n~#*"})
    EXPECT_EQ(error_of([&] { load_model(write("endless.yaml", endless)); }).value(), "more than 9 YAML documents")
        << endless;
}

// A binary file given where YAML is expected: the message stays one line,
// names the file, escapes what is not printable and cuts a long value
// (the InputError keeps the value whole for code that reads it).
TEST_F(SpecLoader, BinaryInputIsQuotedOnOneLine) {
  std::string binary = "\x7f" "ELF\x02\x01\x01";
  for (int i = 0; i < 600; ++i) binary += static_cast<char>(i % 32);
  const std::string path = write("device.yaml", binary);
  const InputError e = error_of([&] { load_device(path); });
  const std::string what = e.what();
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_EQ(what.rfind(path, 0), 0u) << what;
  for (const char c : what) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << what;
  const InputError long_value("f.yaml", "name", std::string(1000, 'x') + "\n", "a short name");
  EXPECT_NE(std::string(long_value.what()).find("... (1001 bytes)"), std::string::npos);
  EXPECT_EQ(long_value.value().size(), 1001u);
  EXPECT_NE(std::string(InputError("f.yaml", "name", "a\tb\x01", "").what()).find("got 'a\\tb\\x01'"),
            std::string::npos);
  // What is allowed may quote the input (a plan's own model name): escaped
  // alike, and cut past 2000 bytes.
  const InputError quoted("p.json", "model", "m", "'evil\x1b]0;x\x07\nerror: FAKE' (the plan's model)");
  EXPECT_NE(std::string(quoted.what()).find("allowed: 'evil\\x1b]0;x\\x07\\nerror: FAKE'"), std::string::npos)
      << quoted.what();
  const InputError long_allowed("p.json", "model", "m", std::string(100000, 'y'));
  EXPECT_LT(std::string(long_allowed.what()).size(), 2200u);
}

TEST_F(SpecLoader, DuplicateKeyIsRejected) {
  EXPECT_INPUT_ERROR(load_training(write("t.yaml", "global_batch: 8\nglobal_batch: 16\n")), "global_batch",
                     "global_batch");
}

TEST_F(SpecLoader, StringsWithANulAreRefused) {
  // A name with a NUL ("\0" in a quoted scalar) ends up in the plan the
  // search writes, whose JSON would not read back.
  const std::string model = "name: \"ti\\0ny\"\nfamily: gpt\nlayers: 4\nhidden: 256\nheads: 8\nvocab: 1000\n";
  EXPECT_INPUT_ERROR(load_model(write("m.yaml", model)), "name", std::string("ti\0ny", 5));
  EXPECT_INPUT_ERROR(load_training(write("t.yaml", "global_batch: 8\nprecision: \"bf16\\0\"\n")), "precision",
                     std::string("bf16\0", 5));
}

TEST_F(SpecLoader, EmptyFileIsNotAMap) {
  EXPECT_INPUT_ERROR(load_training(write("empty.yaml", "")), "", "null");
}

TEST_F(SpecLoader, UnknownCatalogNamesAndMissingFiles) {
  const InputError e = error_of([] { load_model("gpt3-175"); });
  EXPECT_EQ(e.key(), "model");
  EXPECT_EQ(e.value(), "gpt3-175");
  EXPECT_NE(e.allowed().find("llama3-405b"), std::string::npos);
  EXPECT_INPUT_ERROR(load_cluster("nowhere"), "cluster", "nowhere");
  EXPECT_INPUT_ERROR(load_device("b200"), "device", "b200");
  EXPECT_INPUT_ERROR(load_training("huge"), "training", "huge");

  const std::string missing = (dir_ / "absent.yaml").string();
  const InputError m = error_of([&] { load_model(missing); });
  EXPECT_EQ(m.file(), missing);
  EXPECT_EQ(m.value(), "no such file");
  // A folder where a file was meant is said so.
  EXPECT_EQ(error_of([&] { load_model(dir_.string()); }).value(), "a directory");
}

TEST_F(SpecLoader, FileReferencesVersusCatalogNames) {
  EXPECT_FALSE(is_file_reference("llama3-8b"));
  EXPECT_TRUE(is_file_reference("configs/models/llama3-8b.yaml"));
  EXPECT_TRUE(is_file_reference("mine.yml"));
  // A bare name that exists as a file is read as the file.
  const std::string bare = write("llama-like", kGpt);
  EXPECT_TRUE(is_file_reference(bare));
  EXPECT_EQ(load_model("gpt3-2.7b").layers, 32);
}

// ----------------------------------------------------------------- devices

const char* kDevice = R"(name: x1
architecture: ampere
memory_GiB: 24
peak_tflops: 100
peak_fp32_tflops: 20
hbm_GBps: 900
pcie_GBps: 32
)";

TEST_F(SpecLoader, DeviceDefaultsAndCurve) {
  const DeviceSpec d = load_device(write("x1.yaml", kDevice));
  EXPECT_EQ(d.name, "x1");
  EXPECT_TRUE(d.has_bf16);
  EXPECT_EQ(d.nvlink_GBps, 0);
  EXPECT_DOUBLE_EQ(d.memory_efficiency, kDefaultMemoryEfficiency);
  EXPECT_DOUBLE_EQ(d.nic_GBps, DeviceSpec{}.nic_GBps);
  // The curve of its architecture at its own peak.
  const auto curve = architecture_gemm_curve(Architecture::ampere, 100);
  ASSERT_EQ(d.gemm_efficiency.size(), curve.size());
  EXPECT_DOUBLE_EQ(d.gemm_efficiency[0].gemm_gflop, curve[0].gemm_gflop);
  EXPECT_DOUBLE_EQ(d.attention_forward_efficiency, catalog_device("a100-80gb").attention_forward_efficiency);

  const DeviceSpec c =
      load_device(write("x2.yaml", std::string(kDevice) + "gemm_efficiency: [[1, 0.5], [100, 0.9]]\nhas_bf16: false\n"));
  ASSERT_EQ(c.gemm_efficiency.size(), 2u);
  EXPECT_DOUBLE_EQ(c.gemm_efficiency[1].gemm_gflop, 100);
  EXPECT_DOUBLE_EQ(c.gemm_efficiency[1].efficiency, 0.9);
  EXPECT_FALSE(c.has_bf16);
}

TEST_F(SpecLoader, DeviceFromBaseOverridesOnlyWhatIsGiven) {
  const DeviceSpec d = load_device(write("a100-96.yaml", "base: a100-80gb\nmemory_GiB: 96\n"));
  const DeviceSpec base = catalog_device("a100-80gb");
  EXPECT_EQ(d.name, "a100-96");
  EXPECT_DOUBLE_EQ(d.memory_GiB, 96);
  EXPECT_DOUBLE_EQ(d.peak_tflops, base.peak_tflops);
  EXPECT_DOUBLE_EQ(d.nvlink_GBps, base.nvlink_GBps);
  EXPECT_INPUT_ERROR(load_device(write("b.yaml", "base: a100\n")), "base", "a100");
  // A changed peak moves the derived curve with it; a new architecture
  // brings its own figures.
  const DeviceSpec fast = load_device(write("fast.yaml", "base: a100-80gb\npeak_tflops: 624\n"));
  EXPECT_DOUBLE_EQ(fast.gemm_efficiency[0].gemm_gflop, 2 * base.gemm_efficiency[0].gemm_gflop);
  const DeviceSpec hop = load_device(write("hop.yaml", "base: a100-80gb\narchitecture: hopper\n"));
  EXPECT_EQ(hop.architecture, Architecture::hopper);
  EXPECT_LT(hop.gemm_efficiency.back().efficiency, base.gemm_efficiency.back().efficiency);
}

TEST_F(SpecLoader, YamlFilesPastTheSizeLimitAreRefusedUnread) {
  // A list of four million micro-batch sizes: 8 MiB of text, gigabytes as
  // a YAML tree. Refused by its size, before it is parsed.
  std::string list = "global_batch: 512\nmicro_batch_sizes: [1";
  while (list.size() <= kMaxYamlFileBytes) list += ",1";
  list += "]\n";
  const std::string path = write("huge.yaml", list);
  EXPECT_INPUT_ERROR(load_training(path), "", std::to_string(list.size()) + " bytes");
  EXPECT_INPUT_ERROR(validate_file(path), "", std::to_string(list.size()) + " bytes");
}

TEST_F(SpecLoader, DeviceErrors) {
  EXPECT_INPUT_ERROR(load_device(write("a.yaml", "architecture: volta\nmemory_GiB: 24\npeak_tflops: 100\n"
                                                 "peak_fp32_tflops: 20\npcie_GBps: 32\n")),
                     "hbm_GBps", "(missing)");
  EXPECT_INPUT_ERROR(load_device(write("b.yaml", std::string(kDevice) + "memory_efficiency: 1.2\n")),
                     "memory_efficiency", "1.2");
  EXPECT_INPUT_ERROR(load_device(write("c.yaml", std::string(kDevice) + "gemm_efficiency: [[1, 0.5], [1, 0.6]]\n")),
                     "gemm_efficiency[1][0]", "1");
  EXPECT_INPUT_ERROR(load_device(write("d.yaml", std::string(kDevice) + "gemm_efficiency: [[1, 0.5], [10, 0]]\n")),
                     "gemm_efficiency[1][1]", "0");
  EXPECT_INPUT_ERROR(load_device(write("e.yaml", std::string(kDevice) + "gemm_efficiency: [[1, 0.5, 3]]\n")),
                     "gemm_efficiency[0]", "[1, 0.5, 3]");
  EXPECT_INPUT_ERROR(load_device(write("f.yaml", std::string(kDevice) + "nvlink_GBps: -1\n")), "nvlink_GBps", "-1");
  EXPECT_INPUT_ERROR(load_device(write("h.yaml", "memory_GiB: 24\npeak_tflops: 100\npeak_fp32_tflops: 20\n"
                                                 "hbm_GBps: 900\npcie_GBps: 32\n")),
                     "architecture", "(missing)");
  EXPECT_INPUT_ERROR(load_device(write("i.yaml", "base: t4\narchitecture: pascal\n")), "architecture", "pascal");
  EXPECT_INPUT_ERROR(load_device(write("j.yaml", std::string(kDevice) + "attention_forward_efficiency: 0\n")),
                     "attention_forward_efficiency", "0");
  EXPECT_INPUT_ERROR(load_device(write("g.yaml", std::string(kDevice) + "peak_tflop: 1\n")), "peak_tflop",
                     "peak_tflop");
  // Efficiencies under 1% of the peak: a typo or a broken timing. At 1e-300
  // every time was infinite and the plan's figures NaN, with exit 0.
  EXPECT_INPUT_ERROR(load_device(write("k.yaml", std::string(kDevice) + "gemm_efficiency: [[1, 5e-324]]\n")),
                     "gemm_efficiency[0][1]", "4.94065645841e-324");
  EXPECT_INPUT_ERROR(load_device(write("l.yaml", std::string(kDevice) + "memory_efficiency: 0.009\n")),
                     "memory_efficiency", "0.009");
  EXPECT_NO_THROW(load_device(write("m.yaml", std::string(kDevice) + "memory_efficiency: 0.01\n")));
  // Either side of the range, one message: what an efficiency may be.
  auto allowed = [&](const std::string& name, const std::string& line) {
    try {
      load_device(write(name, std::string(kDevice) + line));
    } catch (const InputError& e) {
      return e.allowed();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(allowed("n.yaml", "memory_efficiency: 1.5\n"), allowed("o.yaml", "memory_efficiency: 0.001\n"));
  EXPECT_EQ(allowed("p.yaml", "attention_backward_efficiency: 1.5\n"), allowed("o.yaml", "memory_efficiency: 0.001\n"));
}

// ---------------------------------------------------------------- clusters

TEST_F(SpecLoader, ClusterDefaultsOverridesAndRelativeDeviceFiles) {
  write("site/devices/x1.yaml", kDevice);
  const ClusterSpec c = load_cluster(write("site/two.yaml", R"(name: two
inter_group_GBps: 50
groups:
  - device: h100-sxm
    nodes: 2
    gpus_per_node: 8
  - device: devices/x1.yaml
    name: custom
    nodes: 3
    gpus_per_node: 4
    inter_node_GBps: 12.5
    intra_node_latency_us: 7
)"));
  EXPECT_EQ(c.name, "two");
  EXPECT_DOUBLE_EQ(c.inter_group_GBps, 50);
  EXPECT_DOUBLE_EQ(c.inter_group_latency_us, kDefaultInterGroupLatencyUs);
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].name, "h100-sxm");
  EXPECT_DOUBLE_EQ(c.groups[0].intra_node_GBps, 450);
  EXPECT_DOUBLE_EQ(c.groups[0].inter_node_GBps, 50);  // the H100's 8 x 400 Gb/s NICs
  EXPECT_EQ(c.groups[1].name, "custom");
  EXPECT_EQ(c.groups[1].device.name, "x1");
  EXPECT_DOUBLE_EQ(c.groups[1].intra_node_GBps, 32);  // no NVLink: PCIe
  EXPECT_DOUBLE_EQ(c.groups[1].intra_node_latency_us, 7);
  EXPECT_DOUBLE_EQ(c.groups[1].inter_node_GBps, 12.5);
  EXPECT_EQ(c.total_gpus(), 28);
}

TEST_F(SpecLoader, ClusterNicsAsBought) {
  // One group of 4 nodes of 8 A100s, with these keys besides.
  const auto group = [&](const std::string& name, const std::string& keys) {
    return write(name, "groups:\n  - {device: a100-80gb, nodes: 4, gpus_per_node: 8" + keys + "}\n");
  };
  // 4 NICs of 200 Gb/s shared by 8 GPUs: 4 x 25 GB/s / 8 = 12.5 GB/s each.
  const ClusterSpec c = load_cluster(group("nics.yaml", ", nics_per_node: 4, nic_Gbps: 200"));
  EXPECT_DOUBLE_EQ(c.groups[0].inter_node_GBps, 12.5);
  EXPECT_EQ(c.groups[0].nics_per_node, 4);
  EXPECT_INPUT_ERROR(load_cluster(group("both.yaml", ", nics_per_node: 4, nic_Gbps: 200, inter_node_GBps: 10")),
                     "groups[0].inter_node_GBps", "10");
  EXPECT_INPUT_ERROR(load_cluster(group("half.yaml", ", nic_Gbps: 200")), "groups[0].nics_per_node", "(missing)");
  // The count alone, beside a per-GPU share: how many NICs carry it.
  const ClusterSpec counted = load_cluster(group("count.yaml", ", inter_node_GBps: 6.25, nics_per_node: 4"));
  EXPECT_EQ(counted.groups[0].nics(), 4);
  EXPECT_DOUBLE_EQ(counted.groups[0].inter_node_GBps, 6.25);
  EXPECT_EQ(load_cluster(group("unstated.yaml", "")).groups[0].nics(), 8);  // one per GPU
  // The count with no rate beside it would change nothing: refused.
  EXPECT_INPUT_ERROR(load_cluster(group("countonly.yaml", ", nics_per_node: 1")), "groups[0].nics_per_node", "1");
  EXPECT_INPUT_ERROR(load_cluster(group("nonics.yaml", ", nics_per_node: 0")), "groups[0].nics_per_node", "0");
  EXPECT_INPUT_ERROR(load_cluster(group("manynics.yaml", ", nics_per_node: 5000")), "groups[0].nics_per_node",
                     "5000");
}

TEST_F(SpecLoader, ClusterMeasuredBusBandwidth) {
  // What nccl-tests' all_reduce_perf measured across whole nodes: kept as
  // given, and no more than the node's NICs together (4 x 200 Gb/s = 100 GB/s).
  const ClusterSpec c = load_cluster(write("busbw.yaml", R"(groups:
  - {device: a100-80gb, nodes: 4, gpus_per_node: 8, nics_per_node: 4, nic_Gbps: 200, inter_node_busbw_GBps: 40.5}
)"));
  EXPECT_DOUBLE_EQ(c.groups[0].inter_node_busbw_GBps, 40.5);
  EXPECT_DOUBLE_EQ(load_cluster(write("none.yaml", R"(groups:
  - {device: a100-80gb, nodes: 4, gpus_per_node: 8}
)")).groups[0].inter_node_busbw_GBps,
                   0);  // not measured
  EXPECT_INPUT_ERROR(load_cluster(write("fast.yaml", R"(groups:
  - {device: a100-80gb, nodes: 4, gpus_per_node: 8, nics_per_node: 4, nic_Gbps: 200, inter_node_busbw_GBps: 120}
)")),
                     "groups[0].inter_node_busbw_GBps", "120");
  EXPECT_INPUT_ERROR(load_cluster(write("zero.yaml", R"(groups:
  - {device: a100-80gb, nodes: 4, gpus_per_node: 8, inter_node_busbw_GBps: 0}
)")),
                     "groups[0].inter_node_busbw_GBps", "0");
}

TEST_F(SpecLoader, ClusterWithInlineDevice) {
  const ClusterSpec c = load_cluster(write("inline.yaml", R"(groups:
  - device: {name: mini, base: t4, memory_GiB: 8}
    nodes: 1
    gpus_per_node: 2
)"));
  EXPECT_EQ(c.name, "inline");
  EXPECT_EQ(c.groups[0].device.name, "mini");
  EXPECT_DOUBLE_EQ(c.groups[0].device.memory_GiB, 8);
  EXPECT_DOUBLE_EQ(c.groups[0].device.peak_tflops, 65);
}

TEST_F(SpecLoader, ClusterErrorsNameTheGroup) {
  const char* head = "name: c\ngroups:\n  - {device: a100-80gb, nodes: 1, gpus_per_node: 8}\n";
  EXPECT_INPUT_ERROR(load_cluster(write("a.yaml", std::string(head) + "  - {device: v100-32gb, nodes: -2, "
                                                                       "gpus_per_node: 8}\n")),
                     "groups[1].nodes", "-2");
  EXPECT_INPUT_ERROR(load_cluster(write("b.yaml", std::string(head) + "  - {device: a100-90gb, nodes: 1, "
                                                                       "gpus_per_node: 8}\n")),
                     "groups[1].device", "a100-90gb");
  EXPECT_INPUT_ERROR(load_cluster(write("c.yaml", std::string(head) + "  - {device: v100-32gb, nodes: 1}\n")),
                     "groups[1].gpus_per_node", "(missing)");
  EXPECT_INPUT_ERROR(load_cluster(write("d.yaml", std::string(head) + "  - {device: v100-32gb, nodes: 1, "
                                                                       "gpus_per_node: eight}\n")),
                     "groups[1].gpus_per_node", "eight");
  EXPECT_INPUT_ERROR(load_cluster(write("e.yaml", std::string(head) + "  - {device: a100-80gb, nodes: 1, "
                                                                       "gpus_per_node: 8}\n")),
                     "groups[1].name", "a100-80gb");
  EXPECT_INPUT_ERROR(load_cluster(write("f.yaml", std::string(head) + "  - {device: t4, nodes: 1, "
                                                                       "gpus_per_node: 8, intra_GBps: 5}\n")),
                     "groups[1].intra_GBps", "intra_GBps");
  EXPECT_INPUT_ERROR(load_cluster(write("g.yaml", "name: c\ngroups: []\n")), "groups", "[]");
  EXPECT_INPUT_ERROR(load_cluster(write("h.yaml", "name: c\ngroups:\n  - {device: gone.yaml, nodes: 1, "
                                                  "gpus_per_node: 1}\n")),
                     "groups[0].device", "gone.yaml");
}

TEST_F(SpecLoader, RangesKeepEveryComputationFiniteAndNameTheKeyWritten) {
  // Each once passed validation and then crashed the search, wrapped an
  // integer, or blamed a key the file did not have.
  auto gpt = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string text = kGpt;
    text.replace(text.find(from), from.size(), to);
    return load_model(write(name, text));
  };
  // 4·hidden, the default GPT MLP width, once wrapped and was blamed on
  // ffn_hidden ('-294967296'), a key not in the file.
  const InputError hidden = error_of([&] { gpt("a.yaml", "hidden: 256", "hidden: 1000000000"); });
  EXPECT_EQ(hidden.key(), "hidden");
  EXPECT_EQ(hidden.value(), "1000000000");
  EXPECT_EQ(hidden.allowed(), "an integer from 1 to 1048576");
  EXPECT_INPUT_ERROR(gpt("b.yaml", "layers: 4", "layers: 2147483647"), "layers", "2147483647");
  EXPECT_INPUT_ERROR(gpt("c.yaml", "vocab: 1000", "vocab: 100000000"), "vocab", "100000000");
  EXPECT_INPUT_ERROR(load_model(write("d.yaml", "family: generic\nseq_len: 8\nlayers:\n"
                                                "  - {params: 1e300, forward_gflop: 1, activation_MB: 1, output_MB: 1}\n")),
                     "layers[0].params", "1e+300");

  const std::string group = "  - {device: a100-40gb, nodes: 1, gpus_per_node: 8";
  auto cluster = [&](const std::string& name, const std::string& extra, const std::string& top = "") {
    return load_cluster(write(name, top + "groups:\n" + group + extra + "}\n"));
  };
  // 1e-308 GB/s once gave infinite times and a crash in the split search.
  const InputError bandwidth = error_of([&] { cluster("e.yaml", ", intra_node_GBps: 1e-308"); });
  EXPECT_EQ(bandwidth.key(), "groups[0].intra_node_GBps");
  EXPECT_EQ(bandwidth.value(), "1e-308");
  EXPECT_EQ(bandwidth.allowed(), "a number from 0.001 to 1000000");
  EXPECT_INPUT_ERROR(cluster("f.yaml", ", inter_node_GBps: 1e300"), "groups[0].inter_node_GBps", "1e+300");
  EXPECT_INPUT_ERROR(cluster("g.yaml", ", inter_node_latency_us: 1e300"), "groups[0].inter_node_latency_us", "1e+300");
  EXPECT_INPUT_ERROR(cluster("h.yaml", "", "inter_group_GBps: 1e-9\n"), "inter_group_GBps", "1e-09");
  // The NIC share per GPU is derived: the key written is named.
  EXPECT_INPUT_ERROR(cluster("i.yaml", ", nics_per_node: 1, nic_Gbps: 0.001"), "groups[0].nic_Gbps", "0.001");
  // A device written inline is named by its path inside the cluster.
  EXPECT_INPUT_ERROR(load_cluster(write("j.yaml", "groups:\n  - {device: {name: x, base: t4, nvlink_GBps: 1e-300}, "
                                                  "nodes: 1, gpus_per_node: 8}\n")),
                     "groups[0].device.nvlink_GBps", "1e-300");
  // nodes x gpus_per_node once wrapped, and the search found "no usable GPUs".
  const InputError nodes = error_of([&] {
    load_cluster(write("k.yaml", "groups:\n  - {device: a100-40gb, nodes: 2147483647, gpus_per_node: 8}\n"));
  });
  EXPECT_EQ(nodes.key(), "groups[0].nodes");
  EXPECT_EQ(nodes.allowed(), "an integer from 1 to 524288 (at most 4194304 GPUs in the whole cluster; 8 per node)");
  // The whole cluster counts: the group that goes past the limit is named.
  const InputError total = error_of([&] {
    load_cluster(write("l.yaml", "groups:\n  - {device: a100-40gb, nodes: 524288, gpus_per_node: 8}\n"
                                 "  - {device: t4, nodes: 1, gpus_per_node: 1}\n"));
  });
  EXPECT_EQ(total.key(), "groups[1].nodes");
  EXPECT_NE(total.allowed().find("no more nodes"), std::string::npos) << total.what();

  EXPECT_INPUT_ERROR(load_training(write("m.yaml", "global_batch: 1000000000\n")), "global_batch", "1000000000");
  EXPECT_INPUT_ERROR(load_training(write("n.yaml", "global_batch: 8\nmicro_batch_sizes: [1, 100000000]\n")),
                     "micro_batch_sizes[1]", "100000000");
  EXPECT_INPUT_ERROR(load_training(write("o.yaml", "global_batch: 8\nheadroom_GiB: 1e300\n")), "headroom_GiB", "1e+300");
}

TEST_F(SpecLoader, ErrorsInsideAReferencedDeviceFileNameThatFile) {
  const std::string device = write("broken.yaml", "architecture: ampere\nmemory_GiB: lots\n");
  const InputError e = error_of([&] {
    load_cluster(write("c.yaml", "groups:\n  - {device: broken.yaml, nodes: 1, gpus_per_node: 1}\n"));
  });
  EXPECT_EQ(e.file(), device);
  EXPECT_EQ(e.key(), "memory_GiB");
  EXPECT_EQ(e.value(), "lots");
}

// ---------------------------------------------------------------- training

TEST_F(SpecLoader, TrainingDefaultsAndNormalizedLists) {
  const TrainingSpec t = load_training(write("t.yaml", "global_batch: 64\nmicro_batch_sizes: [4, 1, 2]\n"
                                                       "recompute: [full, none]\nprecision: fp16\nzero: 3\n"));
  EXPECT_EQ(t.global_batch, 64);
  EXPECT_EQ(t.seq_len, 0);
  EXPECT_EQ(t.precision, Precision::fp16);
  EXPECT_EQ(t.zero, 3);
  EXPECT_EQ(t.micro_batch_sizes, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(t.recompute_modes, (std::vector<Recompute>{Recompute::none, Recompute::full}));
  EXPECT_EQ(t.optimizer, Optimizer::adam);
  EXPECT_TRUE(t.sequence_parallel);
  // fp16 training reduces its gradients in fp16 unless told otherwise.
  EXPECT_EQ(grad_precision(t), Precision::fp16);
  EXPECT_EQ(pipeline_p2p(t), PipelineP2P::scatter_gather);
  EXPECT_EQ(t.runtime, Runtime::megatron);
  EXPECT_FALSE(t.overlap_grad_reduce);

  const TrainingSpec ds = load_training(write("ds.yaml", "global_batch: 64\ngrad_reduce_dtype: bf16\n"
                                                         "pipeline_p2p: full\noverlap_grad_reduce: true\n"));
  EXPECT_EQ(grad_precision(ds), Precision::bf16);
  EXPECT_EQ(pipeline_p2p(ds), PipelineP2P::full);
  // DeepSpeed's pipeline engine partitions its sends over the tp group as
  // Megatron-LM does; whole tensors only when asked.
  EXPECT_EQ(pipeline_p2p(load_training(write("d2.yaml", "global_batch: 8\nruntime: deepspeed\n"))),
            PipelineP2P::scatter_gather);
  EXPECT_EQ(pipeline_p2p(load_training(write("d3.yaml", "global_batch: 8\nruntime: deepspeed\n"
                                                         "pipeline_p2p: full\n"))),
            PipelineP2P::full);
  // The attention kernel: FlashAttention-3/cuDNN under Megatron (Transformer
  // Engine) where the device has it, FlashAttention-2 elsewhere; a named one
  // is kept, flash3 falling back to flash2 on a device without it.
  const DeviceSpec h100 = catalog_device("h100-sxm"), a100 = catalog_device("a100-80gb");
  EXPECT_EQ(attention_kernel_on(h100, TrainingSpec{}), AttentionKernel::flash3);
  EXPECT_EQ(attention_kernel_on(a100, TrainingSpec{}), AttentionKernel::flash2);
  const TrainingSpec fsdp = load_training(write("k1.yaml", "global_batch: 8\nruntime: fsdp\n"));
  EXPECT_EQ(attention_kernel_on(h100, fsdp), AttentionKernel::flash2);
  const TrainingSpec triton = load_training(write("k2.yaml", "global_batch: 8\nattention_kernel: triton\n"));
  EXPECT_EQ(attention_kernel_on(h100, triton), AttentionKernel::triton);
  EXPECT_DOUBLE_EQ(attention_efficiency(a100, triton, true), a100.attention_backward_efficiency / kFlash2OverTriton);
  const TrainingSpec fa3 = load_training(write("k3.yaml", "global_batch: 8\nruntime: fsdp\nattention_kernel: flash3\n"));
  EXPECT_EQ(attention_kernel_on(a100, fa3), AttentionKernel::flash2);
  EXPECT_DOUBLE_EQ(attention_efficiency(h100, fa3, false), h100.flash3_forward_efficiency);
  EXPECT_TRUE(ds.overlap_grad_reduce);

  const TrainingSpec d = load_training("");
  EXPECT_EQ(grad_precision(d), Precision::fp32);  // bf16 training: fp32 gradient buffer
  EXPECT_EQ(d.global_batch, TrainingSpec{}.global_batch);
  EXPECT_EQ(d.micro_batch_sizes, TrainingSpec{}.micro_batch_sizes);
}

TEST_F(SpecLoader, TrainingErrors) {
  EXPECT_INPUT_ERROR(load_training(write("a.yaml", "seq_len: 2048\n")), "global_batch", "(missing)");
  EXPECT_INPUT_ERROR(load_training(write("b.yaml", "global_batch: 8\nprecision: fp4\n")), "precision", "fp4");
  EXPECT_INPUT_ERROR(load_training(write("c.yaml", "global_batch: 8\nzero: 4\n")), "zero", "4");
  EXPECT_INPUT_ERROR(load_training(write("d.yaml", "global_batch: 8\nmicro_batch_sizes: [2, 0]\n")),
                     "micro_batch_sizes[1]", "0");
  EXPECT_INPUT_ERROR(load_training(write("e.yaml", "global_batch: 8\nmicro_batch_sizes: [2, 2]\n")),
                     "micro_batch_sizes[1]", "2");
  EXPECT_INPUT_ERROR(load_training(write("f.yaml", "global_batch: 8\nmicro_batch_sizes: 4\n")), "micro_batch_sizes",
                     "4");
  EXPECT_INPUT_ERROR(load_training(write("g.yaml", "global_batch: 8\nrecompute: [none, partial]\n")), "recompute[1]",
                     "partial");
  EXPECT_INPUT_ERROR(load_training(write("h.yaml", "global_batch: 8\noptimizer: lamb\n")), "optimizer", "lamb");
  EXPECT_EQ(load_training(write("h8.yaml", "global_batch: 8\noptimizer: adam8bit\n")).optimizer, Optimizer::adam8bit);
  EXPECT_INPUT_ERROR(load_training(write("i.yaml", "global_batch: 8\nheadroom_GiB: -1\n")), "headroom_GiB", "-1");
  EXPECT_INPUT_ERROR(load_training(write("j.yaml", "global_batch: 0\n")), "global_batch", "0");
  EXPECT_INPUT_ERROR(load_training(write("k.yaml", "global_batch: 8\nattention_kernel: flash4\n")), "attention_kernel",
                     "flash4");
  EXPECT_INPUT_ERROR(load_training(write("l.yaml", "global_batch: 8\npipeline_p2p: broadcast\n")), "pipeline_p2p",
                     "broadcast");
  EXPECT_INPUT_ERROR(load_training(write("m.yaml", "global_batch: 8\ngrad_reduce_dtype: fp64\n")),
                     "grad_reduce_dtype", "fp64");
  EXPECT_INPUT_ERROR(load_training(write("n.yaml", "global_batch: 8\nruntime: jax\n")), "runtime", "jax");
  EXPECT_INPUT_ERROR(load_training(write("k.yaml", "global_batch: 8\nmicrobatch: [1]\n")), "microbatch",
                     "microbatch");
}

// ------------------------------------------------------- problem, validate

TEST_F(SpecLoader, ProblemFromMixedReferences) {
  const Problem p =
      load_problem("gpt3-1.3b", write("c.yaml", "groups:\n  - {device: l4, nodes: 2, gpus_per_node: 4}\n"), "");
  EXPECT_EQ(p.model.name, "gpt3-1.3b");
  EXPECT_EQ(p.cluster.total_gpus(), 8);
  EXPECT_EQ(p.training.global_batch, TrainingSpec{}.global_batch);
  EXPECT_EQ(p.seq_len(), 2048);
  EXPECT_TRUE(p.profiles.empty());
}

TEST_F(SpecLoader, ValidateDetectsTheKind) {
  EXPECT_EQ(validate_file(write("m.yaml", kGpt)), "model");
  EXPECT_EQ(validate_file(write("d.yaml", kDevice)), "device");
  EXPECT_EQ(validate_file(write("c.yaml", "groups:\n  - {device: t4, nodes: 1, gpus_per_node: 1}\n")), "cluster");
  EXPECT_EQ(validate_file(write("t.yaml", "global_batch: 16\n")), "training");
  EXPECT_EQ(validate_file(write("p.yaml", "format: autohaap-plan/1\nstages: []\n")), "plan");
  EXPECT_INPUT_ERROR(validate_file(write("q.yaml", "format: autohaap-plan/9\n")), "format", "autohaap-plan/9");
  EXPECT_INPUT_ERROR(validate_file(write("r.yaml", "colour: blue\nsize: 3\n")), "", "colour, size");
  // Detection does not excuse errors in the detected kind.
  EXPECT_INPUT_ERROR(validate_file(write("s.yaml", "global_batch: 16\nzero: 7\n")), "zero", "7");
}

// ---------------------------------------------------------- shipped configs

void expect_same_device(const DeviceSpec& a, const DeviceSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_DOUBLE_EQ(a.memory_GiB, b.memory_GiB);
  EXPECT_DOUBLE_EQ(a.peak_tflops, b.peak_tflops);
  EXPECT_DOUBLE_EQ(a.peak_fp32_tflops, b.peak_fp32_tflops);
  EXPECT_DOUBLE_EQ(a.peak_tf32_tflops, b.peak_tf32_tflops);
  EXPECT_DOUBLE_EQ(a.peak_fp8_tflops, b.peak_fp8_tflops);
  EXPECT_EQ(a.has_bf16, b.has_bf16);
  EXPECT_DOUBLE_EQ(a.hbm_GBps, b.hbm_GBps);
  EXPECT_DOUBLE_EQ(a.memory_efficiency, b.memory_efficiency);
  EXPECT_DOUBLE_EQ(a.nvlink_GBps, b.nvlink_GBps);
  EXPECT_DOUBLE_EQ(a.pcie_GBps, b.pcie_GBps);
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_DOUBLE_EQ(a.nic_GBps, b.nic_GBps);
  EXPECT_DOUBLE_EQ(a.attention_forward_efficiency, b.attention_forward_efficiency);
  EXPECT_DOUBLE_EQ(a.attention_backward_efficiency, b.attention_backward_efficiency);
  ASSERT_EQ(a.gemm_efficiency.size(), b.gemm_efficiency.size());
  for (std::size_t i = 0; i < a.gemm_efficiency.size(); ++i) {
    EXPECT_DOUBLE_EQ(a.gemm_efficiency[i].gemm_gflop, b.gemm_efficiency[i].gemm_gflop);
    EXPECT_DOUBLE_EQ(a.gemm_efficiency[i].efficiency, b.gemm_efficiency[i].efficiency);
  }
}

void expect_same_model(const ModelSpec& a, const ModelSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.ffn_hidden, b.ffn_hidden);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.flash_attention, b.flash_attention);
  EXPECT_EQ(a.dropout, b.dropout);
  ASSERT_EQ(a.generic_layers.size(), b.generic_layers.size());
  for (std::size_t i = 0; i < a.generic_layers.size(); ++i) {
    EXPECT_EQ(a.generic_layers[i].name, b.generic_layers[i].name);
    EXPECT_DOUBLE_EQ(a.generic_layers[i].params, b.generic_layers[i].params);
    EXPECT_DOUBLE_EQ(a.generic_layers[i].forward_gflop, b.generic_layers[i].forward_gflop);
    EXPECT_DOUBLE_EQ(a.generic_layers[i].activation_MB, b.generic_layers[i].activation_MB);
    EXPECT_DOUBLE_EQ(a.generic_layers[i].output_MB, b.generic_layers[i].output_MB);
  }
}

void expect_same_cluster(const ClusterSpec& a, const ClusterSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_DOUBLE_EQ(a.inter_group_GBps, b.inter_group_GBps);
  EXPECT_DOUBLE_EQ(a.inter_group_latency_us, b.inter_group_latency_us);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (std::size_t i = 0; i < a.groups.size(); ++i) {
    const NodeGroup &x = a.groups[i], &y = b.groups[i];
    EXPECT_EQ(x.name, y.name);
    expect_same_device(x.device, y.device);
    EXPECT_EQ(x.nodes, y.nodes);
    EXPECT_EQ(x.gpus_per_node, y.gpus_per_node);
    EXPECT_DOUBLE_EQ(x.intra_node_GBps, y.intra_node_GBps);
    EXPECT_DOUBLE_EQ(x.intra_node_latency_us, y.intra_node_latency_us);
    EXPECT_DOUBLE_EQ(x.inter_node_GBps, y.inter_node_GBps);
    EXPECT_DOUBLE_EQ(x.inter_node_latency_us, y.inter_node_latency_us);
  }
}

void expect_same_training(const TrainingSpec& a, const TrainingSpec& b) {
  EXPECT_EQ(a.global_batch, b.global_batch);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.precision, b.precision);
  EXPECT_EQ(a.optimizer, b.optimizer);
  EXPECT_EQ(a.zero, b.zero);
  EXPECT_EQ(a.micro_batch_sizes, b.micro_batch_sizes);
  EXPECT_EQ(a.recompute_modes, b.recompute_modes);
  EXPECT_DOUBLE_EQ(a.headroom_GiB, b.headroom_GiB);
  EXPECT_EQ(a.sequence_parallel, b.sequence_parallel);
  EXPECT_EQ(a.overlap_grad_reduce, b.overlap_grad_reduce);
  EXPECT_EQ(a.runtime, b.runtime);
}

// The YAML files of one configs/ folder, by stem.
std::set<std::string> config_stems(const std::string& folder) {
  std::set<std::string> stems;
  for (const auto& entry : fs::directory_iterator(fs::path(AUTOHAAP_SOURCE_DIR) / "configs" / folder))
    if (entry.path().extension() == ".yaml") stems.insert(entry.path().stem().string());
  return stems;
}

std::string config_path(const std::string& folder, const std::string& stem) {
  return (fs::path(AUTOHAAP_SOURCE_DIR) / "configs" / folder / (stem + ".yaml")).string();
}

TEST(Configs, EveryFileValidatesAsItsFolderSays) {
  for (const auto& [folder, kind] : std::vector<std::pair<std::string, std::string>>{
           {"models", "model"}, {"devices", "device"}, {"clusters", "cluster"}, {"training", "training"}})
    for (const auto& stem : config_stems(folder)) {
      SCOPED_TRACE(folder + "/" + stem);
      EXPECT_EQ(validate_file(config_path(folder, stem)), kind);
    }
}

TEST(Configs, FilesEqualTheirCatalogEntries) {
  for (const auto& stem : config_stems("devices")) {
    SCOPED_TRACE(stem);
    ASSERT_TRUE(is_catalog_device(stem));
    expect_same_device(load_device(config_path("devices", stem)), catalog_device(stem));
  }
  for (const auto& stem : config_stems("models")) {
    SCOPED_TRACE(stem);
    ASSERT_TRUE(is_catalog_model(stem));
    expect_same_model(load_model(config_path("models", stem)), catalog_model(stem));
  }
  for (const auto& stem : config_stems("clusters")) {
    SCOPED_TRACE(stem);
    ASSERT_TRUE(is_catalog_cluster(stem));
    expect_same_cluster(load_cluster(config_path("clusters", stem)), catalog_cluster(stem));
  }
  for (const auto& stem : config_stems("training")) {
    SCOPED_TRACE(stem);
    ASSERT_TRUE(is_catalog_training(stem));
    expect_same_training(load_training(config_path("training", stem)), catalog_training(stem));
  }
}

TEST(Configs, EveryCatalogEntryShipsAsAFile) {
  auto missing = [](const std::vector<std::string>& names, const std::set<std::string>& stems) {
    std::vector<std::string> out;
    for (const auto& n : names)
      if (!stems.count(n) && n != "default") out.push_back(n);
    return out;
  };
  EXPECT_EQ(missing(catalog_device_names(), config_stems("devices")), std::vector<std::string>{});
  EXPECT_EQ(missing(catalog_model_names(), config_stems("models")), std::vector<std::string>{});
  EXPECT_EQ(missing(catalog_cluster_names(), config_stems("clusters")), std::vector<std::string>{});
  EXPECT_TRUE(config_stems("training").count("default"));
  EXPECT_EQ(missing(catalog_training_names(), config_stems("training")), std::vector<std::string>{});
}

}  // namespace
}  // namespace autohaap
