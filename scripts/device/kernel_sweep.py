"""kernel_sweep: what one GPU reaches outside plain matrix products, through
PyTorch as training frameworks run it. Writes four CSV files into the folder
given as the first argument:

- attention.csv  fused attention (torch's scaled_dot_product_attention) per
  backend (flash: FlashAttention-2; cudnn: cuDNN's fused attention, the
  kernel Transformer Engine picks on Hopper; efficient: the memory-efficient
  kernel), head dim 64/128, causal or not, 1k-16k tokens a sequence, 16k
  tokens a batch: forward and backward milliseconds.
- elementwise.csv  streaming kernels (copy, add, GeLU, LayerNorm, RMSNorm,
  softmax, dropout) over 1 GiB tensors: bytes each must move (inputs read
  once, outputs written once) and milliseconds.
- memory.csv  device memory in use beyond PyTorch's reserved pool after the
  CUDA context, cuBLAS, cuDNN attention and NCCL load, in MiB.
- layer.csv  whole transformer layers in eager PyTorch (Llama 3 8B's and a
  GPT layer of hidden 4096), forward and backward milliseconds.

Times are medians of five blocks of ~10 ms after warm-up, with CUDA events.
Raw times only: the project's tests derive efficiencies from them with the
cost model's own FLOP counts (tests/unit/device_measurement_test.cpp).
"""
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from csv_out import write_csv
from cuda_timing import bench_ms
from layers import GptLayer, LlamaLayer, rope_tables

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
dev = torch.device("cuda")


def write(name, header, rows):
    write_csv(out_dir, name, header, rows)


def used_mib():
    free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20


def smi_used_mib():
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=30)
        return float(q.stdout.split()[0])
    except Exception:
        return float("nan")


# ---------------------------------------------------------------- memory
memory_rows = []
baseline = smi_used_mib()  # before this process touches the GPU
torch.cuda.init()
torch.empty(1, device=dev)
memory_rows.append(["context", round(used_mib() - baseline - torch.cuda.memory_reserved() / 2**20, 1)])
a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
(a @ a).sum().item()
memory_rows.append(["context+cublas", round(used_mib() - baseline - torch.cuda.memory_reserved() / 2**20, 1)])
q = torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    try:
        F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    except RuntimeError as e:
        print("cudnn attention unavailable:", e)
torch.cuda.synchronize()
memory_rows.append(["context+cublas+cudnn", round(used_mib() - baseline - torch.cuda.memory_reserved() / 2**20, 1)])
try:
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29512")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    t = torch.ones(1 << 20, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    memory_rows.append(["context+cublas+cudnn+nccl_1rank",
                        round(used_mib() - baseline - torch.cuda.memory_reserved() / 2**20, 1)])
    dist.destroy_process_group()
except Exception as e:  # one GPU: NCCL may refuse; the row is then absent
    print("nccl:", e)
del a, q
torch.cuda.empty_cache()
write("memory.csv", ["what", "MiB_beyond_reserved"], memory_rows)

# ---------------------------------------------------------------- attention
attention_rows = []
backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
tokens = 16384
hidden = 4096
for name, backend in backends:
    for head_dim in (64, 128):
        for causal in (True, False):
            for seq in (1024, 2048, 4096, 8192, 16384):
                if not causal and head_dim == 64:
                    continue
                heads = hidden // head_dim
                batch = tokens // seq
                shape = (batch, heads, seq, head_dim)
                qq = torch.randn(shape, device=dev, dtype=torch.bfloat16, requires_grad=True)
                kk = torch.randn(shape, device=dev, dtype=torch.bfloat16, requires_grad=True)
                vv = torch.randn(shape, device=dev, dtype=torch.bfloat16, requires_grad=True)
                try:
                    with sdpa_kernel([backend]):
                        out = F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal)
                        grad = torch.randn_like(out)
                        fwd = bench_ms(lambda: F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal))

                        def fwd_bwd():
                            o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal)
                            torch.autograd.grad(o, (qq, kk, vv), grad)
                        both = bench_ms(fwd_bwd)
                    attention_rows.append([name, batch, heads, heads, seq, head_dim, int(causal),
                                           round(fwd, 5), round(both - fwd, 5)])
                except RuntimeError as e:
                    print(f"skip {name} {shape} causal={causal}: {str(e)[:120]}")
                del qq, kk, vv
# Grouped-query attention as Llama 3 runs it (8 key/value heads).
for name, backend in backends:
    batch, heads, kv, seq, head_dim = 2, 32, 8, 8192, 128
    qq = torch.randn(batch, heads, seq, head_dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
    kk = torch.randn(batch, kv, seq, head_dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
    vv = torch.randn(batch, kv, seq, head_dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
    try:
        with sdpa_kernel([backend]):
            out = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, enable_gqa=True)
            grad = torch.randn_like(out)
            fwd = bench_ms(lambda: F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, enable_gqa=True))

            def fwd_bwd():
                o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, enable_gqa=True)
                torch.autograd.grad(o, (qq, kk, vv), grad)
            both = bench_ms(fwd_bwd)
        attention_rows.append([name, batch, heads, kv, seq, head_dim, 1, round(fwd, 5), round(both - fwd, 5)])
    except RuntimeError as e:
        print(f"skip {name} gqa: {str(e)[:120]}")
write("attention.csv", ["backend", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "forward_ms",
                        "backward_ms"], attention_rows)

# ---------------------------------------------------------------- elementwise
elementwise_rows = []
n = 1 << 29  # 1 GiB of bf16
x = torch.randn(n, device=dev, dtype=torch.bfloat16)
y = torch.randn(n, device=dev, dtype=torch.bfloat16)
o = torch.empty_like(x)
rows2d = x.view(-1, 4096)
w = torch.ones(4096, device=dev, dtype=torch.bfloat16)
b = torch.zeros(4096, device=dev, dtype=torch.bfloat16)
e = 2  # bytes an element
cases = [
    ("copy", 2 * n * e, lambda: o.copy_(x)),
    ("add", 3 * n * e, lambda: torch.add(x, y, out=o)),
    ("gelu", 2 * n * e, lambda: F.gelu(x, approximate="tanh")),
    ("layer_norm", 2 * n * e, lambda: F.layer_norm(rows2d, (4096,), w, b)),
    ("rms_norm", 2 * n * e, lambda: F.rms_norm(rows2d, (4096,), w)),
    ("softmax", 2 * n * e, lambda: torch.softmax(rows2d, dim=-1)),
    ("dropout", 2 * n * e + n, lambda: F.dropout(x, 0.1, training=True)),  # output + a byte-mask
]
for name, nbytes, fn in cases:
    ms = bench_ms(fn)
    elementwise_rows.append([name, nbytes, round(ms, 5)])
del x, y, o, rows2d
torch.cuda.empty_cache()
write("elementwise.csv", ["kernel", "bytes", "ms"], elementwise_rows)


# ---------------------------------------------------------------- layers
layer_rows = []
layer_cases = [("llama3-8b", LlamaLayer(4096, 14336, 32, 8), 4096, 8192, 32, (1, 2)),
               ("gpt-h4096", GptLayer(4096, 32), 4096, 2048, 32, (1, 4, 8))]
for name, layer, h, seq, heads, micro_batches in layer_cases:
    layer = layer.to(dev, torch.bfloat16)
    cos, sin = rope_tables(seq, h // heads, dev)
    for mb in micro_batches:
        x = torch.randn(mb, seq, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
        grad = torch.randn(mb, seq, h, device=dev, dtype=torch.bfloat16)
        params = [x] + list(layer.parameters())
        fwd = bench_ms(lambda: layer(x, cos, sin))
        both = bench_ms(lambda: torch.autograd.grad(layer(x, cos, sin), params, grad))
        layer_rows.append([name, mb, seq, round(fwd, 4), round(both - fwd, 4)])
        del x, grad
    del layer
    torch.cuda.empty_cache()
write("layer.csv", ["layer", "micro_batch", "seq", "forward_ms", "backward_ms"], layer_rows)

print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "device", torch.cuda.get_device_name())
