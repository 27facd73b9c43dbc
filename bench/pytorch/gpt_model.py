"""The gpt-tiny network of gradsync's `gpt2` flavour, in PyTorch, for throughput comparisons.

Same layout as libs/nn's Transformer (llm.c's GPT-2): learned token and position embeddings,
pre-LayerNorm blocks with a fused qkv projection (biases), causal attention, a tanh-GELU MLP, a
final LayerNorm and an output projection tied to the token embedding. Init is GPT-2's, like ours.
Attention is written out unless `fused_attention` asks for F.scaled_dot_product_attention (the
flash kernels on a GPU; PyTorch 1.13, Debian's, has none).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads, mlp_width, seq_len, fused_attention=False):
        super().__init__()
        self.heads = heads
        self.fused_attention = fused_attention
        self.ln_1 = nn.LayerNorm(width, eps=1e-5)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width, eps=1e-5)
        self.fc = nn.Linear(width, mlp_width)
        self.fc_proj = nn.Linear(mlp_width, width)
        # A plain attribute, not a buffer: DDP would broadcast buffers, and Gloo has no bool.
        self.mask = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool)).view(1, 1, seq_len, seq_len)

    def forward(self, x):
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
        q = q.view(b, t, h, c // h).transpose(1, 2)
        k = k.view(b, t, h, c // h).transpose(1, 2)
        v = v.view(b, t, h, c // h).transpose(1, 2)
        if self.fused_attention:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // h))
            att = att.masked_fill(~self.mask[:, :, :t, :t].to(att.device), float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        x = x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))
        return x


class Gpt(nn.Module):
    def __init__(self, layers=4, heads=4, width=128, mlp_width=512, seq_len=128, vocab=256, fused_attention=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq_len, width)
        self.blocks = nn.ModuleList(
            Block(width, heads, mlp_width, seq_len, fused_attention) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, eps=1e-5)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, std=std)

    def logits(self, tokens):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()  # tied output projection

    def forward(self, tokens, targets):
        logits = self.logits(tokens)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def optimizer(self, lr=1e-4, weight_decay=0.1, **kwargs):
        # Decay matrices and embeddings, not biases and norm gains (as gradsync's AdamW does).
        decay = [p for p in self.parameters() if p.dim() >= 2]
        other = [p for p in self.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": other, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8, **kwargs)


def build(args, fused_attention=False):
    return Gpt(args.layers, args.heads, args.width, args.mlp_width, args.seq_len, args.vocab, fused_attention)


def random_batch(args, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq_len), generator=g)
    targets = torch.randint(0, args.vocab, (args.batch, args.seq_len), generator=g)
    return tokens, targets


def timed_steps(model, opt, tokens, targets, args, before_step=None):
    """Trains args.warmup + args.steps steps on one batch; returns the mean seconds of the timed
    steps. `before_step` (if any) runs between backward and the optimizer step (gradient clipping)."""
    import time
    elapsed = 0.0
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = model(tokens, targets)
        loss.backward()
        if before_step is not None:
            before_step()
        opt.step()
        if step >= args.warmup:
            elapsed += time.perf_counter() - t0
    return elapsed / args.steps
