#!/usr/bin/python3
"""Writes gpt2_golden.json: the losses, gradient norms and final parameters of a few AdamW steps
of a tiny gpt2-flavour transformer, computed by PyTorch in float64 (bench/pytorch/gpt_model.py,
the same network written independently), together with how far an fp32 implementation may land
from them, derived from the arithmetic below. tests/nn/golden_test.cc (CPU) and
tests/nn_cuda/cuda_golden_test.cc (GPU) compare gradsync's fp32 runs with both.

Inputs. Both sides build them from the same formulas, so no weights or data files are shared:
  parameter p (registration order, the same in both models), element i:
    norm gains     1 + 0.1 sin(0.7 i + p)
    biases         0.02 sin(0.3 i + p)
    everything else 0.05 sin(0.37 i + 1.1 p)
  token of sequence b, position t at step s:   (7 b + 13 t + 5 s + (b t) mod 11) mod V
  target: the token of position t + 1 (the last position's: (7 b + 13 (t + 1) + 5 s) mod V)
Initial values are computed in double and rounded to float32 once; everything after runs in
float64, whose rounding (2^-53) is negligible next to float32's.

Bounds. u = 2^-24 is float32's unit roundoff.
 1. Rounding of a sum. A sum of n products computed in float32, in any order (recursive, blocked,
    pairwise, with or without FMA: whatever kernel OpenBLAS or a GPU picks), is off by at most
    gamma_n = n u / (1 - n u) times the sum of the magnitudes of its terms in the worst case, and
    by exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1 times it with probability at least
    1 - 2 n exp(-lambda^2 (1 - u)^2 / 2) when the roundings are independent and of mean zero
    (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019; sum_error). Along the network a value's
    error also carries the errors of its inputs, so a gradient element is held to that bound with
    n = K, where K counts the sums on the longest chain of dependent sums that leads to it
    (chain_length: forward, backward and the batch sum of the weight gradient), times A, the
    element's last sum evaluated on magnitudes (|dY|^T |X| for a weight, sum |dY| for a bias,
    sum |dY x_hat| for a norm gain; magnitude_scales). lambda is chosen so that every element of
    every step holds at once with probability 1 - FAILURE (lambda = 8.5; the bound is then 3e-5 A,
    against the worst case's K u A = 2.3e-4 A). The loss (a mean of log-sum-exp
    minus the target's logit) is held to the same bound with K_f, the forward's chain, times
    (loss + max |logit|).
 2. Clipping. The gradient norm moves by g . e / |g| for element errors e, which by rule 4's
    Hoeffding argument stays within lambda ||g o E||_2 / |g| (E the elements' bounds); when the
    norm exceeds the clip, the clip scale carries that relative error into every element.
 3. AdamW's normalisation. With m and v the bias-corrected moments, an element moves by
    lr m / (sqrt(v) + eps). By Cauchy-Schwarz |m| <= C_t sqrt(v) with
    C_t^2 = sum_s a_s^2 / b_s (a_s, b_s the moments' weights of step s), whatever the gradients:
    C_8 = 1.01 for betas (0.9, 0.95). Gradient errors e_s bound m's error by sum a_s e_s and v's by
    sum b_s (2 |g_s| e_s + e_s^2); the update's error is the largest change of m / (sqrt(v) + eps)
    over those corners, and never more than |m / sqrt(v)| + C_t (both updates are within C_t).
    So an element whose gradient is well above its rounding moves as the reference does to
    within a small relative error, and one whose second moment is near zero (the key bias: adding
    a constant to a query's scores changes no softmax, so its gradient is zero in exact arithmetic
    and rounding noise in float32) may move by up to about lr per step, whatever its rounding.
    Parameter errors add up over the steps, shrunk by weight decay (1 - lr wd).
 4. Later steps. Parameters off by d change the loss by g . d to first order and the gradient
    norm by (H g / |g|) . d (H the Hessian, from one Hessian-vector product). The elements' errors
    come from independent roundings with no preferred sign, so by Hoeffding's inequality such a
    sum exceeds lambda ||(g o d)||_2 with probability at most 2 exp(-lambda^2 / 2): lambda = 5.9
    keeps the chance that any of the run's 16 such sums does under FAILURE (HOEFFDING). The first-order terms neglect the curvature's feedback of d into later
    gradients (second order in d for the elements that matter: those with a large gradient move
    by a small relative error of lr).
The bounds are written next to the values; the tests take them as they are.

Why lr 1e-3 and eps 1e-5. AdamW's first step moves every element by lr times the sign of its
gradient, so an element whose gradient is within rounding of zero moves by +-lr in either
implementation, and at lr 1e-2 (a fifth of a weight's size) the parameters those flips move
change the next gradients more than rounding does: the bounds above then grow past the values
they bound by the fifth step (loss bounds of 0.03 at step 7, weights' of 1e-2). At lr 1e-3 the
steps stay where first order holds, and eps 1e-5 (3% of the first step's clipped gradients, the
key bias among them, lie below it) turns the update of a gradient lost in rounding into g / eps
instead of its sign:
loss bounds of 1e-4 to 5e-4, weights' of 1e-5 (median) to 1e-4, while an error in the forward,
the backward or AdamW moves these figures by far more.

Run with Debian's /usr/bin/python3 (python3-torch) from the repository root:
  /usr/bin/python3 tests/nn/golden/make_gpt2_golden.py > tests/nn/golden/gpt2_golden.json
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "pytorch"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gpt_model import Gpt  # noqa: E402

CONFIG = dict(layers=2, heads=2, width=64, mlp_width=128, seq_len=16, vocab=64)  # head dim 32: the CUDA kernels run it too
BATCH, STEPS = 4, 8
LR, WEIGHT_DECAY, BETAS, EPS, CLIP = 1e-3, 0.1, (0.9, 0.95), 1e-5, 1.0
SAMPLE_EVERY = 97  # final parameters kept: every 97th element of the flat buffer
U = 2.0 ** -24  # float32's unit roundoff
FAILURE = 1e-6  # the chance that any bound below is exceeded by rounding that follows the model
GELU_OPS = 8  # the rounded operations of a tanh GELU (cube, two multiply-adds, tanh, product)


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


# Rule 4's factor: Hoeffding's inequality for the few sums over elements (two per step).
HOEFFDING = math.sqrt(2 * math.log(2 * 2 * STEPS / FAILURE))


def sum_error(n, count):
    """Rule 1's relative error of a chain of n dependent float32 sums, for `count` such values in
    each of STEPS steps: Higham and Mary's probabilistic bound (SIAM J. Sci. Comput. 41(5), 2019)
    exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1, which holds for one value with probability at
    least 1 - 2 n exp(-lambda^2 (1 - u)^2 / 2) when the roundings are independent and of mean
    zero; lambda is chosen so that it holds for all of them at once with 1 - FAILURE."""
    lam = math.sqrt(2 * math.log(2 * n * count * STEPS / FAILURE)) / (1 - U)
    return math.expm1(lam * math.sqrt(n) * U + n * U * U / (1 - U))


def chain_length():
    """(forward, whole): the number of terms summed along the longest chain of dependent sums of
    the forward pass, and of the forward, the backward and the weight gradient's batch sum."""
    w, m, t, v = CONFIG["width"], CONFIG["mlp_width"], CONFIG["seq_len"], CONFIG["vocab"]
    d = w // CONFIG["heads"]
    # A block: LayerNorm (mean and variance: 2w), qkv (w), scores (d), softmax (t), weights x
    # values (t), projection (w), residual (1), LayerNorm (2w), fc (w), GELU, fc_proj (m),
    # residual (1).
    block = 2 * w + w + d + t + t + w + 1 + 2 * w + w + GELU_OPS + m + 1
    # The head: final LayerNorm (2w), logits (w), log-sum-exp (v), the mean over the batch.
    head = 2 * w + w + v + BATCH * t
    forward = 1 + CONFIG["layers"] * block + head  # 1: token plus position embedding
    # Backward sums run over the transposed dimensions of the same products (3w for qkv, m for
    # fc, ...), one more for the LayerNorm's mean of the gradient: bounded by the forward's
    # lengths plus the widest transposed sum per product; the weight gradient sums the batch.
    backward = CONFIG["layers"] * (block + 2 * w + m) + head
    return forward, forward + backward + BATCH * t


def magnitude_scales(model, tokens, targets):
    """Per parameter (same shapes), the last sum of its gradient evaluated on magnitudes: A in the
    docstring's rule 1. Runs one forward and backward with hooks; returns (loss, max |logit|, A)."""
    saved = {}
    hooks = []

    def keep(module, inputs, output):
        output.retain_grad()
        saved[module] = (inputs[0], output)

    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.LayerNorm)):
            hooks.append(module.register_forward_hook(keep))
    first = {}

    def keep_input(module, inputs):
        inputs[0].retain_grad()
        first["x0"] = inputs[0]

    hooks.append(model.blocks[0].register_forward_pre_hook(keep_input))
    model.zero_grad()
    loss = model(tokens, targets)
    loss.backward()
    for h in hooks:
        h.remove()

    scales = {}
    with torch.no_grad():
        for module, (x, y) in saved.items():
            dy = y.grad.reshape(-1, y.shape[-1]).abs()
            x = x.reshape(-1, x.shape[-1])
            if isinstance(module, torch.nn.Linear):
                scales[module.weight] = dy.t() @ x.abs()
                scales[module.bias] = dy.sum(0)
            else:
                x_hat = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + module.eps)
                scales[module.weight] = (dy * x_hat.abs()).sum(0)
                scales[module.bias] = dy.sum(0)
        xf = saved[model.ln_f][1].reshape(-1, CONFIG["width"])
        logits = xf @ model.wte.weight.t()
        n = logits.shape[0]
        dlogits = (F.softmax(logits, -1) - F.one_hot(targets.reshape(-1), CONFIG["vocab"]).double()).abs() / n
        dx0 = first["x0"].grad.abs()
        wte = dlogits.t() @ xf.abs()
        wte.index_add_(0, tokens.reshape(-1), dx0.reshape(-1, CONFIG["width"]))
        scales[model.wte.weight] = wte
        scales[model.wpe.weight] = dx0.sum(0)
    params = list(model.parameters())
    assert all(p in scales for p in params), "a parameter without a magnitude scale"
    return float(loss), float(logits.abs().max()), [scales[p] for p in params]


def curvature_of_norm(model, tokens, targets):
    """H g / |g|: how the gradient norm moves with the parameters (rule 4), one Hessian-vector
    product, flattened."""
    model.zero_grad()
    grads = torch.autograd.grad(model(tokens, targets), list(model.parameters()), create_graph=True)
    flat = torch.cat([g.reshape(-1) for g in grads])
    norm = flat.norm()
    hg = torch.autograd.grad(norm, list(model.parameters()))
    return torch.cat([h.reshape(-1) for h in hg]).detach()


class AdamWBound:
    """Rule 3: per element, how far float32 AdamW may land from float64's, step by step."""

    def __init__(self, numel, decays):
        self.decays = decays  # per element: the weight decay that applies
        self.grads = []  # reference gradients (after clipping), one per step
        self.errors = []  # their error bounds
        self.param_error = torch.zeros(numel, dtype=torch.float64)

    def step(self, grad, error, params):
        self.grads.append(grad)
        self.errors.append(error)
        t = len(self.grads)
        b1, b2 = BETAS
        a = [(1 - b1) * b1 ** (t - 1 - s) / (1 - b1 ** t) for s in range(t)]
        b = [(1 - b2) * b2 ** (t - 1 - s) / (1 - b2 ** t) for s in range(t)]
        c = math.sqrt(sum(x * x / y for x, y in zip(a, b)))
        m = sum(x * g for x, g in zip(a, self.grads))
        v = sum(y * g * g for y, g in zip(b, self.grads))
        dm = sum(x * e for x, e in zip(a, self.errors))
        dv = sum(y * (2 * g.abs() * e + e * e) for y, g, e in zip(b, self.grads, self.errors))
        update = m / (v.sqrt() + EPS)
        worst = torch.zeros_like(update)
        for sm in (-1, 1):
            for sv in (-1, 1):
                corner = (m + sm * dm) / ((v + sv * dv).clamp(min=0).sqrt() + EPS)
                worst = torch.maximum(worst, (corner - update).abs())
        worst = torch.minimum(worst, update.abs() + c)
        # The update's own float32 rounding (a division, a root, two products) is a few u of |p|.
        self.param_error = self.param_error * (1 - LR * self.decays) + LR * worst + 4 * U * params.abs()
        return c


def main():
    torch.manual_seed(0)
    model = Gpt(**CONFIG).double()
    with torch.no_grad():
        for p, (name, param) in enumerate(model.named_parameters()):
            flat = torch.tensor([init_value(name, p, i) for i in range(param.numel())], dtype=torch.float32)
            param.copy_(flat.to(torch.float64).view_as(param))
    decay = [q for q in model.parameters() if q.dim() >= 2]
    other = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": other, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS, eps=EPS)
    decays = torch.cat([torch.full((q.numel(),), WEIGHT_DECAY if q.dim() >= 2 else 0.0, dtype=torch.float64)
                        for q in model.parameters()])
    forward_chain, chain = chain_length()
    adamw = AdamWBound(decays.numel(), decays)
    losses, norms, loss_bounds, norm_bounds, moment_caps = [], [], [], [], []
    for step in range(STEPS):
        tokens, targets = batch(step)
        flat_params = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
        # Rule 4 at this step's parameters, which carry the errors of the steps before.
        hg = curvature_of_norm(model, tokens, targets)
        loss, max_logit, scales = magnitude_scales(model, tokens, targets)
        grad = torch.cat([q.grad.reshape(-1) for q in model.parameters()]).detach()
        rounding = sum_error(chain, grad.numel()) * torch.cat([s.reshape(-1) for s in scales])
        norm = float(grad.norm())
        d = adamw.param_error
        loss_bounds.append(sum_error(forward_chain, 1) * (loss + max_logit) + HOEFFDING * float((grad * d).norm()))
        norm_bounds.append(HOEFFDING * (float((grad * rounding).norm()) / norm + float((hg * d).norm())))
        # Rule 2: clipping scales the gradient and its error alike, and adds the norm's error.
        scale = min(1.0, CLIP / (norm + 1e-6))
        error = scale * rounding + (scale * grad.abs() * norm_bounds[-1] / norm if norm > CLIP else 0)
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        losses.append(loss)
        norms.append(norm)
        opt.step()
        moment_caps.append(adamw.step(scale * grad, error, flat_params))
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    out = {
        "generator": f"tests/nn/golden/make_gpt2_golden.py, pytorch {torch.__version__}, float64",
        "config": CONFIG, "batch": BATCH, "steps": STEPS, "lr": LR, "weightDecay": WEIGHT_DECAY,
        "betas": list(BETAS), "eps": EPS, "gradClip": CLIP,
        "unitRoundoff": U, "chainLength": chain, "forwardChainLength": forward_chain, "failureProbability": FAILURE,
        "momentRatioCaps": moment_caps,
        "losses": losses, "lossBounds": loss_bounds,
        "gradNorms": norms, "gradNormBounds": norm_bounds,
        "paramCount": flat.numel(), "sampleEvery": SAMPLE_EVERY,
        "finalParamSamples": [float(x) for x in flat[::SAMPLE_EVERY]],
        "finalParamBounds": [float(x) for x in adamw.param_error[::SAMPLE_EVERY]],
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
