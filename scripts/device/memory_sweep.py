"""memory_sweep: what training holds on one GPU, measured with PyTorch's
caching allocator, to check the cost model's activation, loss and optimizer
accounting against a real run. Writes into the folder given as the first
argument:

- training_memory.csv  stacks of 1, 2 and 4 layers (Llama 3 8B's layer as
  torchtitan writes it, and a GPT layer of hidden 4096 with dropout) under
  no recompute, full recompute (torch.utils.checkpoint per layer) and
  torchtitan's op-level selective policy: bytes the forward leaves held,
  the forward's and the backward's peaks over what was allocated before
  the forward (the input and the weights), the allocator's reserved peak,
  and, for two layers, the forward's and forward + backward's
  milliseconds. The per-layer figure is the slope between stack depths,
  so the stack's ends (input, output, gradients of the weights) cancel.
- loss_memory.csv  the last stage's head: final RMSNorm, the output
  projection to Llama 3's 128,256-token vocabulary and PyTorch's
  cross-entropy on the fp32 upcast of the bf16 logits, as torchtitan calls
  it: held after the forward, forward and backward peaks.
- optimizer_memory.csv  one AdamW step (PyTorch's foreach and for-loop
  implementations) over fp32 weights: allocated before the step and the
  step's peak over it (the transient the step needs beyond its states).

Raw bytes only; tests/unit/device_measurement_test.cpp compares them with
the cost model's accounting.
"""
import sys
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from csv_out import write_csv
from cuda_timing import bench_ms
from layers import GptLayer, TorchtitanLlamaLayer, complex_rope_table, rope_tables

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
dev = torch.device("cuda")
MiB = 2**20


def write(name, header, rows):
    write_csv(out_dir, name, header, rows)


# torchtitan's op-level policy: keep the outputs of the matrix products
# (all but every second one, counted per layer in call order) and of the
# fused attention kernels; replay everything else.
_save = {torch.ops.aten.mm.default,
         torch.ops.aten._scaled_dot_product_flash_attention.default,
         torch.ops.aten._scaled_dot_product_efficient_attention.default,
         torch.ops.aten._scaled_dot_product_cudnn_attention.default,
         torch.ops.aten.max.default}


def op_level_context():
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        keep = func in _save and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def run_stack(layers, x, position, mode):
    for layer in layers:
        if mode == "none":
            x = layer(x, *position)
        elif mode == "full":
            x = checkpoint(layer, x, *position, use_reentrant=False, preserve_rng_state=False)
        else:
            x = checkpoint(layer, x, *position, use_reentrant=False, preserve_rng_state=False,
                           context_fn=op_level_context)
    return x


def measure(fn_forward, grad_like):
    """(held after forward, forward peak, backward peak) in MiB over what was
    allocated before the forward, and the reserved peak."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn_forward()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - base
    fwd_peak = torch.cuda.max_memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    out.backward(grad_like(out))
    torch.cuda.synchronize()
    bwd_peak = torch.cuda.max_memory_allocated() - base
    reserved = torch.cuda.max_memory_reserved()
    del out
    return held / MiB, fwd_peak / MiB, bwd_peak / MiB, reserved / MiB


# ---------------------------------------------------------------- layers
rows = []
# Each layer with the position tables its forward takes after the input.
cases = [("llama3-8b", lambda: TorchtitanLlamaLayer(4096, 14336, 32, 8), 4096, 8192, (1, 2),
          lambda seq: (complex_rope_table(seq, 128, dev),)),
         ("gpt-h4096", lambda: GptLayer(4096, 32), 4096, 2048, (1, 4), lambda seq: rope_tables(seq, 128, dev))]
for name, make, h, seq, micro_batches, tables in cases:
    position = tables(seq)
    for depth in (1, 2, 4):
        layers = torch.nn.ModuleList([make() for _ in range(depth)]).to(dev, torch.bfloat16)
        for mb in micro_batches:
            for mode in ("none", "op_level", "full"):
                try:
                    x = torch.randn(mb, seq, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
                    held, fwd, bwd, res = measure(lambda: run_stack(layers, x, position, mode),
                                                  lambda o: torch.ones_like(o))
                    for p in layers.parameters():
                        p.grad = None
                    ms = fwd_ms = float("nan")
                    if depth == 2:
                        fwd_ms = bench_ms(lambda: run_stack(layers, x, position, mode), target_ms=20, blocks=3)
                        g = torch.ones(mb, seq, h, device=dev, dtype=torch.bfloat16)
                        params = [x] + list(layers.parameters())
                        ms = bench_ms(lambda: torch.autograd.grad(run_stack(layers, x, position, mode), params, g),
                                      target_ms=20, blocks=3)
                        del g, params
                    rows.append([name, depth, mb, seq, mode, round(held, 1), round(fwd, 1), round(bwd, 1),
                                 round(res, 1), round(fwd_ms, 3), round(ms, 3)])
                    print(rows[-1])
                    sys.stdout.flush()
                    del x
                except torch.cuda.OutOfMemoryError as e:
                    print(name, depth, mb, mode, "out of memory:", e)
                    torch.cuda.empty_cache()
        del layers
        torch.cuda.empty_cache()
write("training_memory.csv", ["layer", "layers", "micro_batch", "seq", "recompute", "held_MiB",
                              "forward_peak_MiB", "backward_peak_MiB", "reserved_peak_MiB", "forward_ms",
                              "forward_backward_ms"],
      rows)

# ---------------------------------------------------------------- loss
loss_rows = []
vocab, h = 128256, 4096
norm = torch.nn.RMSNorm(h).to(dev, torch.bfloat16)
head = torch.nn.Linear(h, vocab, bias=False).to(dev, torch.bfloat16)
for mb, seq in ((1, 8192), (2, 8192), (1, 4096)):
    x = torch.randn(mb, seq, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, vocab, (mb * seq,), device=dev)

    def forward():
        logits = head(norm(x))
        return F.cross_entropy(logits.flatten(0, 1).float(), labels)

    held, fwd, bwd, res = measure(forward, lambda o: torch.ones_like(o))
    for p in list(norm.parameters()) + list(head.parameters()):
        p.grad = None
    loss_rows.append([mb, seq, vocab, h, round(held, 1), round(fwd, 1), round(bwd, 1), round(res, 1)])
    print(loss_rows[-1])
    del x, labels
    torch.cuda.empty_cache()
write("loss_memory.csv", ["micro_batch", "seq", "vocab", "hidden", "held_MiB", "forward_peak_MiB",
                          "backward_peak_MiB", "reserved_peak_MiB"], loss_rows)
del norm, head
torch.cuda.empty_cache()

# ---------------------------------------------------------------- optimizer
opt_rows = []
for foreach in (True, False):
    model = torch.nn.ModuleList([TorchtitanLlamaLayer(4096, 14336, 32, 8) for _ in range(2)]).to(dev, torch.float32)
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    largest = max(p.numel() for p in params)
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=foreach, fused=False)
    opt.step()  # creates the states
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    opt.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    opt_rows.append(["foreach" if foreach else "for_loop", n, largest, round(before / MiB, 1), round(peak / MiB, 1)])
    print(opt_rows[-1])
    del model, params, opt
    torch.cuda.empty_cache()
write("optimizer_memory.csv", ["implementation", "params", "largest_tensor", "allocated_before_MiB",
                               "step_peak_over_MiB"], opt_rows)
print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name())
