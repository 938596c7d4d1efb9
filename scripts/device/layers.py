"""Transformer layers in eager PyTorch for the device scripts, written the
way the frameworks they stand for write them (bf16 weights, no fusion
beyond what PyTorch's own kernels do)."""
import torch
import torch.nn.functional as F


def rope_tables(seq, head_dim, dev, theta=500000.0):
    """cos and sin of rotary position angles (Su et al. 2021), bf16."""
    pos = torch.arange(seq, device=dev, dtype=torch.float32)
    freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=dev, dtype=torch.float32) / head_dim))
    ang = torch.outer(pos, freq)
    return ang.cos().to(torch.bfloat16), ang.sin().to(torch.bfloat16)


def rope(t, cos, sin):
    t1, t2 = t[..., ::2], t[..., 1::2]
    return torch.stack((t1 * cos - t2 * sin, t1 * sin + t2 * cos), dim=-1).flatten(-2)


class LlamaLayer(torch.nn.Module):
    def __init__(self, h, ffn, heads, kv):
        super().__init__()
        self.heads, self.kv, self.d = heads, kv, h // heads
        self.n1 = torch.nn.RMSNorm(h)
        self.n2 = torch.nn.RMSNorm(h)
        self.qkv = torch.nn.Linear(h, (heads + 2 * kv) * self.d, bias=False)
        self.o = torch.nn.Linear(h, h, bias=False)
        self.gate_up = torch.nn.Linear(h, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        q, k, v = self.qkv(self.n1(x)).split([self.heads * self.d, self.kv * self.d, self.kv * self.d], -1)
        q = rope(q.view(b, s, self.heads, self.d).transpose(1, 2), cos, sin)
        k = rope(k.view(b, s, self.kv, self.d).transpose(1, 2), cos, sin)
        v = v.view(b, s, self.kv, self.d).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, h))
        g, u = self.gate_up(self.n2(x)).chunk(2, -1)
        return x + self.down(F.silu(g) * u)


class GptLayer(torch.nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.n1 = torch.nn.LayerNorm(h)
        self.n2 = torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, 3 * h)
        self.o = torch.nn.Linear(h, h)
        self.fc1 = torch.nn.Linear(h, 4 * h)
        self.fc2 = torch.nn.Linear(4 * h, h)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, self.d).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + F.dropout(self.o(a.transpose(1, 2).reshape(b, s, h)), 0.1)
        return x + F.dropout(self.fc2(F.gelu(self.fc1(self.n2(x)), approximate="tanh")), 0.1)




def complex_rope_table(seq, head_dim, dev, theta=500000.0):
    """The rotations of complex_rope, computed once and shared by every
    layer (as torchtitan's freqs_cis buffer)."""
    cos, sin = rope_tables(seq, head_dim, dev, theta)
    return torch.complex(cos.float(), sin.float())


def complex_rope(t, rotations):
    """Rotary embedding as torchtitan applies it: on (batch, seq, heads,
    head_dim) tensors, in fp32 complex arithmetic, cast back to the input's
    type (so the rotated tensor keeps the layout the attention kernel's
    output takes, and the backward saves only the shared rotations)."""
    z = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
    return torch.view_as_real(z * rotations[None, :, None, :]).flatten(3).type_as(t)


class TorchtitanLlamaLayer(torch.nn.Module):
    """A Llama layer as torchtitan's model writes it: separate wq, wk, wv,
    wo and w1, w3, w2 projections (so op-level checkpointing counts seven
    products in that call order), rotary embedding in complex fp32 on
    (batch, seq, heads, head_dim) tensors, key/value heads repeated to the
    query heads before the fused attention, SwiGLU as w2(silu(w1 x) * w3 x)."""

    def __init__(self, h, ffn, heads, kv):
        super().__init__()
        self.heads, self.kv, self.d = heads, kv, h // heads
        self.attention_norm = torch.nn.RMSNorm(h)
        self.ffn_norm = torch.nn.RMSNorm(h)
        self.wq = torch.nn.Linear(h, heads * self.d, bias=False)
        self.wk = torch.nn.Linear(h, kv * self.d, bias=False)
        self.wv = torch.nn.Linear(h, kv * self.d, bias=False)
        self.wo = torch.nn.Linear(h, h, bias=False)
        self.w1 = torch.nn.Linear(h, ffn, bias=False)
        self.w3 = torch.nn.Linear(h, ffn, bias=False)
        self.w2 = torch.nn.Linear(ffn, h, bias=False)

    def repeat_kv(self, t):
        b, s, kv, d = t.shape
        rep = self.heads // kv
        return t[:, :, :, None, :].expand(b, s, kv, rep, d).reshape(b, s, kv * rep, d)

    def forward(self, x, rotations):
        b, s, h = x.shape
        n = self.attention_norm(x)
        q = self.wq(n).view(b, s, self.heads, self.d)
        k = self.wk(n).view(b, s, self.kv, self.d)
        v = self.wv(n).view(b, s, self.kv, self.d)
        q, k = complex_rope(q, rotations), complex_rope(k, rotations)
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, h))
        n = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(n)) * self.w3(n))
