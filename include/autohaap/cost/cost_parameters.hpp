// CostParameters: the few physical constants of the cost model that are not
// device specs — achievable fractions of link bandwidth, overlap of
// communication with compute. Calibrated once against published Megatron-LM
// runs (tests/data/calibration_runs.csv, tests/unit/calibration_test.cpp);
// no per-run factors.
#pragma once

namespace autohaap {

struct CostParameters {
  // Achieved fraction of nominal link bandwidth in a ring collective or a
  // point-to-point transfer (NCCL bus bandwidth over NVLink reaches ~80% of
  // nominal, over InfiniBand ~70-80%).
  double nvlink_efficiency = 0.75;
  double network_efficiency = 0.70;
  // ZeRO-3 prefetching overlaps parameter all-gathers with compute; this is
  // the fraction of the shorter of (compute, communication) that stays
  // exposed (DeepSpeed ZeRO-3 runs of Narayanan et al. 2021, Table 2).
  double zero3_exposed_fraction = 0.30;
  // Fraction of the data-parallel gradient all-reduce hidden behind the
  // backward pass (0: Megatron-LM 2021, which reduces after backward).
  double dp_overlap = 0.0;
  // Kernel launch and framework overhead per layer per pass, seconds.
  double per_layer_overhead_s = 20e-6;
};

}  // namespace autohaap
