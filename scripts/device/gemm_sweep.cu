// gemm_sweep: the achieved throughput of dense matrix products on one GPU,
// through cuBLASLt as training frameworks call it, across the shapes a
// transformer layer runs: per linear layer (in -> out) of a GPT layer at
// hidden h (qkv h->3h, proj h->h, fc1 h->4h, fc2 4h->h) and T tokens, the
// forward product (out x T x in), the input gradient (in x T x out) and the
// weight gradient (out x in x T), and square products for the small end of
// the efficiency curve. Each in BF16, FP16 (FP32 accumulate), TF32, FP32 and
// FP8 E4M3 (BF16 output), the precisions the cost model prices.
//
// Output, one CSV row a product: dtype,role,m,n,k,gflop,ms,tflops — ms the
// median of five timed blocks, each long enough (~10 ms) that launches do
// not count, over inputs rotated through more than four times the L2 so
// small products are not timed out of the cache. Inputs are pseudo-random
// in [-1, 1] (zeros run faster than real data: less switching power).
//
// Build and run (CUDA 12+): nvcc -O2 -arch=sm_90 -o gemm_sweep gemm_sweep.cu
// -lcublasLt && ./gemm_sweep > gemm.csv. Used to record what a device
// reaches (tests/data/device/); not part of the project's build.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                                                  \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// A failed cuBLASLt call skips the product (reported on stderr), it does not
// end the sweep: an unsupported shape for one dtype is a fact to record.
#define TRY_LT(x)                                                                       \
  do {                                                                                  \
    cublasStatus_t s_ = (x);                                                            \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "skip %s %d %d %d: %s = %d\n", dt.name, m, n, k, #x, (int)s_); \
      return false;                                                                     \
    }                                                                                   \
  } while (0)

struct DType {
  const char* name;
  cudaDataType_t ab;       // operands
  cudaDataType_t cd;       // output
  cublasComputeType_t compute;
  int ab_bytes, cd_bytes;
  double guess_tflops;     // to skip products that would take too long
};

const DType kTypes[] = {
    {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 800},
    {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, 800},
    {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 400},
    {"fp32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 50},
    {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, 1500},
};

__device__ float hash_uniform(size_t i) {
  unsigned x = static_cast<unsigned>(i * 2654435761u) ^ static_cast<unsigned>(i >> 32) ^ 0x9e3779b9u;
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return (x & 0xffffff) / 8388608.0f - 1.0f;  // [-1, 1)
}

template <typename T>
__global__ void fill(T* p, size_t n, size_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = T(hash_uniform(i + seed));
}

void fill_random(void* p, cudaDataType_t t, size_t n, size_t seed) {
  const int blocks = 1024, threads = 256;
  switch (t) {
    case CUDA_R_16BF: fill<<<blocks, threads>>>(static_cast<__nv_bfloat16*>(p), n, seed); break;
    case CUDA_R_16F: fill<<<blocks, threads>>>(static_cast<__half*>(p), n, seed); break;
    case CUDA_R_32F: fill<<<blocks, threads>>>(static_cast<float*>(p), n, seed); break;
    case CUDA_R_8F_E4M3: fill<<<blocks, threads>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed); break;
    default: std::fprintf(stderr, "no fill for type %d\n", (int)t); std::exit(1);
  }
  CHECK_CUDA(cudaGetLastError());
}

cublasLtHandle_t g_lt;
void* g_workspace;
constexpr size_t kWorkspaceBytes = 64ull << 20;  // what Transformer Engine gives cuBLASLt on Hopper: 32 MiB+
cudaStream_t g_stream;

// D (m x n) = A^T (m x k) B (k x n), column-major, the "TN" layout that FP8
// requires and that a linear layer's forward is in cuBLAS's terms.
bool time_gemm(const DType& dt, const char* role, int m, int n, int k) {
  const double flop = 2.0 * m * n * k;
  if (flop / (dt.guess_tflops * 1e12) > 0.1) {  // over ~0.1 s a product: skip (fp32 at the top end)
    std::fprintf(stderr, "skip %s %s %d %d %d: too long for the sweep\n", dt.name, role, m, n, k);
    return false;
  }
  const size_t a_elems = (size_t)k * m, b_elems = (size_t)k * n, d_elems = (size_t)m * n;
  const size_t in_bytes = a_elems * dt.ab_bytes + b_elems * dt.ab_bytes;
  const size_t rotate_bytes = 256ull << 20;  // > 4 x the H100/H200 L2 (50-60 MB)
  const int sets = (int)std::min<size_t>(16, std::max<size_t>(1, rotate_bytes / std::max<size_t>(in_bytes, 1)));
  std::vector<void*> as(sets), bs(sets);
  void* d = nullptr;
  for (int i = 0; i < sets; ++i) {
    CHECK_CUDA(cudaMalloc(&as[i], a_elems * dt.ab_bytes));
    CHECK_CUDA(cudaMalloc(&bs[i], b_elems * dt.ab_bytes));
    fill_random(as[i], dt.ab, a_elems, 1000003ull * i);
    fill_random(bs[i], dt.ab, b_elems, 7000001ull * i + 17);
  }
  CHECK_CUDA(cudaMalloc(&d, d_elems * dt.cd_bytes));
  bool ok = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  auto run = [&]() -> bool {
    TRY_LT(cublasLtMatmulDescCreate(&op, dt.compute, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    TRY_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    TRY_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    TRY_LT(cublasLtMatrixLayoutCreate(&la, dt.ab, k, m, k));
    TRY_LT(cublasLtMatrixLayoutCreate(&lb, dt.ab, k, n, k));
    TRY_LT(cublasLtMatrixLayoutCreate(&ld, dt.cd, m, n, m));
    TRY_LT(cublasLtMatmulPreferenceCreate(&pref));
    TRY_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes,
                                                sizeof kWorkspaceBytes));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    TRY_LT(cublasLtMatmulAlgoGetHeuristic(g_lt, op, la, lb, ld, ld, pref, 1, &heuristic, &found));
    if (found == 0) {
      std::fprintf(stderr, "skip %s %s %d %d %d: no algorithm\n", dt.name, role, m, n, k);
      return false;
    }
    const float alpha = 1.0f, beta = 0.0f;
    int next = 0;
    auto launch = [&]() -> cublasStatus_t {
      const int s = next++ % sets;
      return cublasLtMatmul(g_lt, op, &alpha, as[s], la, bs[s], lb, &beta, d, ld, d, ld, &heuristic.algo,
                            g_workspace, kWorkspaceBytes, g_stream);
    };
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    for (int i = 0; i < 3; ++i) TRY_LT(launch());  // warm-up: kernel load, clocks up
    CHECK_CUDA(cudaEventRecord(start, g_stream));
    TRY_LT(launch());
    CHECK_CUDA(cudaEventRecord(stop, g_stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float one_ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&one_ms, start, stop));
    const int reps = std::max(1, std::min(5000, (int)(10.0 / std::max(one_ms, 1e-4f))));
    std::vector<float> per_call;
    for (int block = 0; block < 5; ++block) {
      CHECK_CUDA(cudaEventRecord(start, g_stream));
      for (int r = 0; r < reps; ++r) TRY_LT(launch());
      CHECK_CUDA(cudaEventRecord(stop, g_stream));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      per_call.push_back(ms / reps);
    }
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    std::sort(per_call.begin(), per_call.end());
    const double ms = per_call[per_call.size() / 2];
    std::printf("%s,%s,%d,%d,%d,%.6f,%.6f,%.2f\n", dt.name, role, m, n, k, flop / 1e9, ms, flop / (ms * 1e-3) / 1e12);
    std::fflush(stdout);
    return true;
  };
  ok = run();
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (ld) cublasLtMatrixLayoutDestroy(ld);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (op) cublasLtMatmulDescDestroy(op);
  for (int i = 0; i < sets; ++i) {
    CHECK_CUDA(cudaFree(as[i]));
    CHECK_CUDA(cudaFree(bs[i]));
  }
  CHECK_CUDA(cudaFree(d));
  return ok;
}

int main(int argc, char** argv) {
  // Optional argument: a comma-separated list of dtypes (default: all).
  const std::string only = argc > 1 ? argv[1] : "";
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "device: %s, %d SMs, L2 %d MB, cuBLASLt %zu\n", prop.name, prop.multiProcessorCount,
               prop.l2CacheSize >> 20, cublasLtGetVersion());
  if (cublasLtCreate(&g_lt) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasLtCreate failed\n");
    return 1;
  }
  CHECK_CUDA(cudaStreamCreate(&g_stream));
  CHECK_CUDA(cudaMalloc(&g_workspace, kWorkspaceBytes));
  std::printf("dtype,role,m,n,k,gflop,ms,tflops\n");

  struct Linear { const char* name; int in_mult, out_mult; };  // in / out as multiples of h (fc2: 4h -> h)
  const Linear linears[] = {{"qkv", 1, 3}, {"proj", 1, 1}, {"fc1", 1, 4}, {"fc2", 4, 1}};
  const int hiddens[] = {1024, 2048, 4096, 8192, 16384};
  const int tokens[] = {1024, 4096, 16384};
  const int squares[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  for (const DType& dt : kTypes) {
    if (!only.empty() && ("," + only + ",").find("," + std::string(dt.name) + ",") == std::string::npos) continue;
    for (int s : squares) time_gemm(dt, "square", s, s, s);
    for (int h : hiddens)
      for (int t : tokens)
        for (const Linear& l : linears) {
          const int in = l.in_mult * h, out = l.out_mult * h;
          const std::string base = std::string(l.name) + "_h" + std::to_string(h) + "_t" + std::to_string(t);
          time_gemm(dt, (base + "_fwd").c_str(), out, t, in);
          time_gemm(dt, (base + "_dgrad").c_str(), in, t, out);
          time_gemm(dt, (base + "_wgrad").c_str(), out, in, t);
        }
  }
  CHECK_CUDA(cudaFree(g_workspace));
  cublasLtDestroy(g_lt);
  return 0;
}
