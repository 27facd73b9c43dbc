"""Supervised fine-tuning of a MiniMind-shaped model, as MiniMind's train_full_sft.py does it, on
gradsync: RMSNorm, rotary embeddings kept in freqs_cos/freqs_sin buffers that DDP ignores,
grouped-query attention, SwiGLU; JSONL conversations in a chat template, the loss on the
assistant's tokens only (labels of -100 elsewhere).

    gradsync run --workers 2 -- /usr/bin/python3 examples/torch/minimind_sft.py

What gradsync adds to the plain DDP script (every piece optional, each marked "gradsync:" below):
the exchange for the gradient buckets, the sampler (job seed, exact-once resume at any world
size), committed checkpoints (a restarted job goes on from the last one) and step reports (loss
reduced across ranks in the metrics service, `gradsync watch`, `gradsync report`). Bytes are the
tokens, so no tokenizer download is needed; bring your own model and tokenizer the same way.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

import gradsync.torch as gt

HERE = os.path.dirname(os.path.abspath(__file__))
# Bytes 0..255, then the chat template's special tokens.
PAD, IM_START, IM_END = 256, 257, 258
VOCAB = 259


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def rope_tables(head_dim, length, theta=1e6):
    freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(length).float(), freqs)
    return torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos[:t], sin[:t]), rotate(k, cos[:t], sin[:t])
        repeat = self.heads // self.kv_heads  # grouped-query attention: kv heads shared
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True) if hasattr(F, "scaled_dot_product_attention") \
            else self._attention(q, k, v)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))

    @staticmethod
    def _attention(q, k, v):  # torch 1.13 has no scaled_dot_product_attention
        t = q.shape[-2]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v


class FeedForward(nn.Module):  # SwiGLU
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate, self.up, self.down = (nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False),
                                         nn.Linear(hidden, dim, bias=False))

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(dim), Attention(dim, heads, kv_heads)
        self.ffn_norm, self.ffn = RMSNorm(dim), FeedForward(dim, hidden)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class MiniMind(nn.Module):
    def __init__(self, dim=96, layers=2, heads=4, kv_heads=2, hidden=256, max_len=256):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # tied, as MiniMind ties them
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
        cos, sin = rope_tables(dim // heads, max_len)
        # Derived from the shape alone: every rank computes the same, so DDP need not sync them.
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, self.freqs_cos, self.freqs_sin)
        return self.head(self.norm(x))


class ChatDataset(Dataset):
    """Each conversation in the chat template; labels are -100 except on the assistant's replies
    (and their end-of-turn token)."""

    def __init__(self, path, max_len):
        self.samples = []
        with open(path) as f:
            for line in f:
                tokens, labels = [], []
                for turn in json.loads(line)["conversations"]:
                    head = list(f"{turn['role']}\n".encode())
                    body = list(turn["content"].encode()) + [IM_END]
                    tokens += [IM_START] + head + body
                    train = turn["role"] == "assistant"
                    labels += [-100] * (1 + len(head)) + (body if train else [-100] * len(body))
                tokens, labels = tokens[:max_len], labels[:max_len]
                pad = max_len - len(tokens)
                self.samples.append((torch.tensor(tokens + [PAD] * pad), torch.tensor(labels + [-100] * pad)))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return self.samples[i]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=os.path.join(HERE, "data", "chat.jsonl"))
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--out", default="minimind_sft.pt")
    args = p.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = MiniMind(max_len=args.max_len)
    model._ddp_params_and_buffers_to_ignore = {"freqs_cos", "freqs_sin"}
    ddp = DDP(model)
    gt.register_exchange(ddp)  # gradsync: gradient buckets through gradsync's exchange
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    dataset = ChatDataset(args.data, args.max_len)
    sampler = gt.DistributedSampler(dataset)  # gradsync: the job's order, exact-once resume
    loader = DataLoader(dataset, batch_size=args.batch, sampler=sampler)

    step, start_epoch = 0, 0
    state = gt.load() if gt.in_job() else None  # gradsync: the last committed checkpoint
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, start_epoch = state["step"], state["epoch"]
        if rank == 0:
            print(f"resumed from step {step}", flush=True)
    steps_total = args.epochs * (len(dataset) // (world * args.batch))
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        for tokens, labels in loader:
            started = time.time()
            lr = args.lr * 0.5 * (1 + math.cos(math.pi * step / max(1, steps_total)))
            for group in optimizer.param_groups:
                group["lr"] = lr
            logits = ddp(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), labels[:, 1:].reshape(-1), ignore_index=-100)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            trained = int((labels[:, 1:] != -100).sum())
            # gradsync: this rank's step for Prometheus, gradsync watch and gradsync report.
            gt.report(step, loss=loss.item(), tokens=trained, samples=tokens.shape[0], epoch=epoch, lr=lr,
                      grad_norm=float(grad_norm))
            if rank == 0 and step % 10 == 0:
                print(f"epoch {epoch} step {step}/{steps_total} loss {loss.item():.4f} lr {lr:.2e} "
                      f"{time.time() - started:.3f}s", flush=True)
            if gt.in_job() and step % args.save_every == 0:  # gradsync: a committed checkpoint
                gt.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                         "epoch": sampler.position()[0]}, step)
    if rank == 0:
        torch.save(model.state_dict(), args.out)
        print(f"saved {args.out} after {step} steps", flush=True)
    dist.barrier()
    os._exit(0)


if __name__ == "__main__":
    main()
