"""gradsync's `llama` flavour in PyTorch, written from the architecture (MiniMind's and Llama's).

Token embedding; per block x += o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n)))
with n = RMSNorm(x), then x += down_proj(silu(gate_proj(m)) * up_proj(m)) with m = RMSNorm(x);
a final RMSNorm and an output projection tied to the embedding. No biases. Attention is causal,
scaled by 1/sqrt(head_dim), with grouped-query heads: query head h reads key/value head
h // (heads / kv_heads). Rotary positions pair element i of a head with element i + head_dim/2
("rotate half") at frequency theta^(-2i / head_dim); the cos/sin tables are computed in double
and rounded to float, as gradsync's are. Module names follow Hugging Face's LlamaForCausalLM
(model.embed_tokens, model.layers.N.self_attn.q_proj, ...), so its state_dict keys are the keys
of that class's safetensors files.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RmsNorm(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq_len, head_dim, theta):
    freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * freq[None, :]
    return angles.cos().float(), angles.sin().float()


def rotate(x, cos, sin):
    """x [b, heads, t, d]; cos, sin [t, d/2]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Attention(nn.Module):
    def __init__(self, width, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.q_proj = nn.Linear(width, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, width, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        d = self.head_dim
        q = self.q_proj(x).view(b, t, self.heads, d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        q, k = rotate(q, cos[:t], sin[:t]), rotate(k, cos[:t], sin[:t])
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        return self.o_proj((att @ v).transpose(1, 2).reshape(b, t, self.heads * d))


class Mlp(nn.Module):
    def __init__(self, width, mlp_width):
        super().__init__()
        self.gate_proj = nn.Linear(width, mlp_width, bias=False)
        self.up_proj = nn.Linear(width, mlp_width, bias=False)
        self.down_proj = nn.Linear(mlp_width, width, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, width, heads, kv_heads, mlp_width, eps):
        super().__init__()
        self.input_layernorm = RmsNorm(width, eps)
        self.self_attn = Attention(width, heads, kv_heads)
        self.post_attention_layernorm = RmsNorm(width, eps)
        self.mlp = Mlp(width, mlp_width)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, layers, heads, kv_heads, width, mlp_width, vocab, eps):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(Block(width, heads, kv_heads, mlp_width, eps) for _ in range(layers))
        self.norm = RmsNorm(width, eps)


class Llama(nn.Module):
    def __init__(self, layers=8, heads=8, kv_heads=2, width=512, mlp_width=1408, seq_len=512, vocab=256,
                 rope_theta=1e6, eps=1e-5):
        super().__init__()
        self.model = Body(layers, heads, kv_heads, width, mlp_width, vocab, eps)
        self.cos, self.sin = rope_tables(seq_len, width // heads, rope_theta)

    def logits(self, tokens):
        x = self.model.embed_tokens(tokens)
        for block in self.model.layers:
            x = block(x, self.cos, self.sin)
        return self.model.norm(x) @ self.model.embed_tokens.weight.t()  # tied output projection

    def forward(self, tokens, targets):
        logits = self.logits(tokens)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
