"""matmul_crosscheck: the same products as gemm_sweep.cu through PyTorch
(torch.matmul, torch._scaled_mm for FP8), with normal and uniform data, to
tell the library's heuristic and the data from the device's ceiling.
Prints CSV: api,dtype,data,m,n,k,ms,tflops."""
from functools import partial

import torch

import cuda_timing

dev = torch.device("cuda")
bench_ms = partial(cuda_timing.bench_ms, target_ms=20.0)  # blocks of ~20 ms


def data(kind, shape, dtype):
    t = torch.randn(shape, device=dev) if kind == "normal" else torch.rand(shape, device=dev) * 2 - 1
    return t.to(dtype)


print("api,dtype,data,m,n,k,ms,tflops")
shapes = [(8192, 8192, 8192), (4096, 4096, 4096), (16384, 16384, 4096), (16384, 4096, 16384), (4096, 16384, 16384)]
for m, n, k in shapes:
    for kind in ("normal", "uniform"):
        for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
            a, b = data(kind, (m, k), dtype), data(kind, (k, n), dtype)
            ms = bench_ms(lambda: a @ b)
            print(f"matmul,{name},{kind},{m},{n},{k},{ms:.4f},{2*m*n*k/ms/1e9:.1f}", flush=True)
        a8 = data(kind, (m, k), torch.float32).to(torch.float8_e4m3fn)
        b8 = data(kind, (n, k), torch.float32).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=dev)
        try:
            ms = bench_ms(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            print(f"scaled_mm,fp8,{kind},{m},{n},{k},{ms:.4f},{2*m*n*k/ms/1e9:.1f}", flush=True)
            ms = bench_ms(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                   use_fast_accum=True))
            print(f"scaled_mm_fast_accum,fp8,{kind},{m},{n},{k},{ms:.4f},{2*m*n*k/ms/1e9:.1f}", flush=True)
        except Exception as ex:
            print("fp8 skipped:", str(ex)[:200])
        torch.backends.cuda.matmul.allow_tf32 = True
        a, b = data(kind, (m, k), torch.float32), data(kind, (k, n), torch.float32)
        ms = bench_ms(lambda: a @ b)
        print(f"matmul,tf32,{kind},{m},{n},{k},{ms:.4f},{2*m*n*k/ms/1e9:.1f}", flush=True)
        del a, b, a8, b8
