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

  // --- memory the framework holds besides the model's tensors -------------
  // CUDA context with the kernels of cuBLAS/cuDNN/PyTorch loaded: about
  // 0.5-1 GiB per process on A100/H100 with CUDA 11-12 (PyTorch "CUDA
  // semantics" notes; nvidia-smi of an idle process after the first GEMM).
  double cuda_context_GiB = 0.75;
  // NCCL buffers per communicator this GPU belongs to: NCCL_BUFFSIZE (4 MiB)
  // for each of the Simple/LL128 protocols, per channel and ring neighbour
  // (NCCL environment-variable documentation), with 16-32 channels on
  // NVLink: ~0.4 GiB per communicator.
  double nccl_GiB_per_communicator = 0.4;
  // PyTorch's caching allocator keeps freed blocks for reuse; the memory it
  // reserves exceeds what live tensors use by the fragmentation of the
  // short-lived ones (activations, logits): typically 10-20% of them
  // (PyTorch CUDA memory-management notes; expandable segments exist to cut
  // it). Static buffers (weights, gradient buffer, optimizer states) are
  // allocated once and do not fragment.
  double allocator_fragmentation = 0.15;
};

}  // namespace autohaap
