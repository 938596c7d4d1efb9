"""op_sweep: the forward of each operation of Llama 3 8B's layer as
torchtitan writes it (layers.TorchtitanLlamaLayer), timed alone on its own
inputs, to see which of them a recompute policy replays and what each
costs. Writes op_times.csv into the folder given as the first argument:
op, whether torchtitan's op-level policy replays it (its output is neither
a kept product's nor the attention kernel's), micro-batch, milliseconds.

The sum of the replayed ops over the sum of all is the share of a forward
that op-level checkpointing adds to the backward, from the parts; the
whole-layer figure is in training_memory.csv (memory_sweep.py).
"""
import sys

import torch
import torch.nn.functional as F

from csv_out import write_csv
from cuda_timing import bench_ms
from layers import TorchtitanLlamaLayer, complex_rope, complex_rope_table

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
dev = torch.device("cuda")
rows = []
seq, h, ffn, heads, kv = 8192, 4096, 14336, 32, 8
layer = TorchtitanLlamaLayer(h, ffn, heads, kv).to(dev, torch.bfloat16)
rotations = complex_rope_table(seq, h // heads, dev)
with torch.no_grad():
    for b in (1, 2):
        x = torch.randn(b, seq, h, device=dev, dtype=torch.bfloat16)
        n = layer.attention_norm(x)
        q = layer.wq(n).view(b, seq, heads, h // heads)
        k = layer.wk(n).view(b, seq, kv, h // heads)
        v = layer.wv(n).view(b, seq, kv, h // heads)
        qr, kr = complex_rope(q, rotations), complex_rope(k, rotations)
        kk, vv = layer.repeat_kv(kr), layer.repeat_kv(v)
        a = F.scaled_dot_product_attention(qr.transpose(1, 2), kk.transpose(1, 2), vv.transpose(1, 2), is_causal=True)
        a2 = a.transpose(1, 2).reshape(b, seq, h)
        o = layer.wo(a2)
        g, u = layer.w1(n), layer.w3(n)
        sg = F.silu(g)
        p = sg * u
        ops = [
            ("attention_norm", True, lambda: layer.attention_norm(x)),
            ("wq", False, lambda: layer.wq(n)),
            ("wk", True, lambda: layer.wk(n)),
            ("wv", False, lambda: layer.wv(n)),
            ("rope_q", True, lambda: complex_rope(q, rotations)),
            ("rope_k", True, lambda: complex_rope(k, rotations)),
            ("repeat_kv", True, lambda: (layer.repeat_kv(kr), layer.repeat_kv(v))),
            ("attention", False, lambda: F.scaled_dot_product_attention(
                qr.transpose(1, 2), kk.transpose(1, 2), vv.transpose(1, 2), is_causal=True)),
            ("wo", True, lambda: layer.wo(a2)),
            ("residual_add", True, lambda: x + o),
            ("ffn_norm", True, lambda: layer.ffn_norm(x)),
            ("w1", False, lambda: layer.w1(n)),
            ("w3", True, lambda: layer.w3(n)),
            ("silu", True, lambda: F.silu(g)),
            ("mul", True, lambda: sg * u),
            ("w2", False, lambda: layer.w2(p)),
            ("residual_add_2", True, lambda: x + o),
        ]
        for name, replayed, fn in ops:
            rows.append([name, int(replayed), b, round(bench_ms(fn), 4)])
        whole = bench_ms(lambda: layer(x, rotations))
        rows.append(["whole_layer", -1, b, round(whole, 4)])
        total = sum(r[3] for r in rows if r[2] == b and r[1] >= 0)
        replay = sum(r[3] for r in rows if r[2] == b and r[1] == 1)
        print(f"b={b}: ops {total:.3f} ms, whole layer {whole:.3f} ms, replayed {replay:.3f} ms = {replay / total:.2f}")
write_csv(out_dir, "op_times.csv", ["op", "op_level_replays", "micro_batch", "forward_ms"], rows)
print("torch", torch.__version__, "device", torch.cuda.get_device_name())
