// `autohaap device --measured DIR --base DEVICE [--name NAME] [-o FILE]`: a
// device file whose efficiency figures are a GPU's own measurements
// (io/device_measurements.hpp), printed beside the base device's.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/device_measurements.hpp"
#include "autohaap/io/spec_loader.hpp"
#include "commands.hpp"
#include "problem_args.hpp"

namespace autohaap::cli {
namespace {

struct DeviceArgs {
  std::string measured, base, name, out;
};

std::string figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

void print_comparison(const DeviceSpec& base, const DeviceSpec& calibrated, const DeviceMeasurements& m) {
  std::printf("%-34s %10s %10s\n", "training efficiency", base.name.c_str(), calibrated.name.c_str());
  for (const EfficiencyPoint& p : m.gemm) {
    const std::string what = "GEMM of " + figure(p.gemm_gflop) + " GFLOP";
    std::printf("%-34s %10s %10s\n", what.c_str(), figure(gemm_efficiency(base, p.gemm_gflop)).c_str(),
                figure(gemm_efficiency(calibrated, p.gemm_gflop)).c_str());
  }
  auto row = [](const char* what, double a, double b) {
    std::printf("%-34s %10s %10s\n", what, figure(a).c_str(), figure(b).c_str());
  };
  row("FlashAttention-2 forward", base.attention_forward_efficiency, calibrated.attention_forward_efficiency);
  row("FlashAttention-2 backward", base.attention_backward_efficiency, calibrated.attention_backward_efficiency);
  row("flash3 / cuDNN forward", base.flash3_forward_efficiency, calibrated.flash3_forward_efficiency);
  row("flash3 / cuDNN backward", base.flash3_backward_efficiency, calibrated.flash3_backward_efficiency);
  row("memory efficiency", base.memory_efficiency, calibrated.memory_efficiency);
  std::printf("from %d GEMMs%s%s\n", m.gemm_products, m.flash2_forward > 0 || m.flash3_forward > 0 ? ", attention" : "",
              m.memory_efficiency > 0 ? ", streaming kernels" : "");
}

}  // namespace

CLI::App* register_device_command(CLI::App& app, CommandAction& action) {
  auto a = std::make_shared<DeviceArgs>();
  auto* cmd = app.add_subcommand(
      "device", "a device file from a GPU's own measurements (the folder scripts/device/measure.sh writes)");
  cmd->add_option("--measured", a->measured, "folder of gemm.csv [attention.csv elementwise.csv]")->required();
  cmd->add_option("--base", a->base, "catalog device or device file of the GPU measured (peaks, memory, links)")
      ->required();
  cmd->add_option("--name", a->name, "name of the new device (default: BASE-measured)");
  cmd->add_option("-o,--out", a->out, "device YAML file to write");
  action = [a, cmd] {
    if (cmd->count("--name") > 0) check_name("command line", "--name", a->name, true);
    if (!a->out.empty()) {
      // A device file, never one of the measurement tables it is made from.
      const std::string ext = lowercase_extension(a->out);
      if (ext != ".yaml" && ext != ".yml")
        throw InputError("command line", "--out", a->out, "a device file name ending .yaml or .yml");
      check_outputs_apart({{"--out", a->out}}, {{"--base", a->base}});
      // Only a new file or an earlier device file: a cluster, model or
      // plan file named by mistake had been overwritten.
      check_overwrites_only(a->out, "--out", "device");
      check_writable(a->out);
    }
    // The base is named on the command line: a name that is neither a
    // catalog device nor a file is refused as --base's.
    const DeviceSpec base = [&] {
      try {
        return load_device(a->base);
      } catch (const InputError& e) {
        if (!e.file().empty()) throw;
        throw InputError("command line", "--base", e.value(), e.allowed());
      }
    }();
    const DeviceMeasurements measured = read_device_measurements(a->measured, base);
    const DeviceSpec calibrated =
        calibrated_device(base, measured, a->name.empty() ? base.name + "-measured" : a->name);
    print_comparison(base, calibrated, measured);
    if (!a->out.empty()) {
      write_device_file(calibrated, a->out);
      std::cout << "device written to " << a->out << "\n";
    } else {
      std::cout << "no device file written (-o FILE.yaml writes one)\n";
    }
    return int{kExitOk};
  };
  return cmd;
}

}  // namespace autohaap::cli
