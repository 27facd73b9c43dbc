#!/usr/bin/python3
"""Writes gpt2_golden.json: the losses, gradient norms and final parameters of a few AdamW steps
of a tiny gpt2-flavour transformer, computed by PyTorch (bench/pytorch/gpt_model.py, the same
network written independently), which tests/nn/golden_test.cc compares gradsync's CPU model with.

Both sides build the inputs from the same formulas, so no weights or data files are shared:
  parameter p (registration order, the same in both models), element i:
    norm gains     1 + 0.1 sin(0.7 i + p)
    biases         0.02 sin(0.3 i + p)
    everything else 0.05 sin(0.37 i + 1.1 p)
  token of sequence b, position t at step s:   (7 b + 13 t + 5 s + (b t) mod 11) mod V
  target: the token of position t + 1 (the last position's: (7 b + 13 (t + 1) + 5 s) mod V)
Values are computed in double and rounded to float32 once.

Run with Debian's /usr/bin/python3 (python3-torch) from the repository root:
  /usr/bin/python3 tests/nn/golden/make_gpt2_golden.py > tests/nn/golden/gpt2_golden.json
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "pytorch"))

import torch  # noqa: E402

from gpt_model import Gpt  # noqa: E402

CONFIG = dict(layers=2, heads=2, width=64, mlp_width=128, seq_len=16, vocab=64)  # head dim 32: the CUDA kernels run it too
BATCH, STEPS = 4, 8
LR, WEIGHT_DECAY, BETAS, EPS, CLIP = 1e-2, 0.1, (0.9, 0.95), 1e-8, 1.0
SAMPLE_EVERY = 97  # final parameters kept: every 97th element of the flat buffer


def init_value(name, p, i):
    if name.endswith("bias"):
        return 0.02 * math.sin(0.3 * i + p)
    if ".ln_" in name or name.startswith("ln_f"):
        return 1.0 + 0.1 * math.sin(0.7 * i + p)
    return 0.05 * math.sin(0.37 * i + 1.1 * p)


def token(b, t, s, v):
    return (7 * b + 13 * t + 5 * s + (b * t) % 11) % v


def batch(step):
    v, T = CONFIG["vocab"], CONFIG["seq_len"]
    tokens = [[token(b, t, step, v) for t in range(T)] for b in range(BATCH)]
    targets = [[token(b, t + 1, step, v) if t + 1 < T else (7 * b + 13 * (t + 1) + 5 * step) % v
                for t in range(T)] for b in range(BATCH)]
    return torch.tensor(tokens), torch.tensor(targets)


def main():
    torch.manual_seed(0)
    model = Gpt(**CONFIG).double()
    with torch.no_grad():
        for p, (name, param) in enumerate(model.named_parameters()):
            flat = torch.tensor([init_value(name, p, i) for i in range(param.numel())], dtype=torch.float32)
            param.copy_(flat.to(torch.float64).view_as(param))
    model = model.float()
    decay = [q for q in model.parameters() if q.dim() >= 2]
    other = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": other, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS, eps=EPS)
    losses, norms = [], []
    for step in range(STEPS):
        tokens, targets = batch(step)
        opt.zero_grad()
        loss = model(tokens, targets)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        losses.append(float(loss))
        opt.step()
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    out = {
        "generator": f"tests/nn/golden/make_gpt2_golden.py, pytorch {torch.__version__}",
        "config": CONFIG, "batch": BATCH, "steps": STEPS, "lr": LR, "weightDecay": WEIGHT_DECAY,
        "betas": list(BETAS), "eps": EPS, "gradClip": CLIP,
        "losses": losses, "gradNorms": norms,
        "paramCount": flat.numel(), "sampleEvery": SAMPLE_EVERY,
        "finalParamSamples": [float(x) for x in flat[::SAMPLE_EVERY]],
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
