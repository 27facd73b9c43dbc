#!/usr/bin/env python3
"""GPT-2 training throughput in PyTorch on one GPU: the counterpart of
`gradsync-model-bench --device cuda`.

The same network as gradsync's gpt2 flavour (gpt_model.py) with fused causal attention
(scaled_dot_product_attention), bf16 autocast with fp32 weights and optimizer state (or fp32 with
--precision fp32, TF32 off, as gradsync's fp32), fused AdamW, and `torch.compile` unless
--eager. Random tokens; forward + backward + clipping + AdamW per step. Prints the step time,
tokens per second, and model FLOPs utilisation against the bf16 (fp32) matmul rate measured on
the card the same way gradsync-model-bench does (the best of 8192^3 products), with FLOPs per
token 6N + 12 L C T.

  python3 bench/pytorch/gpt_train_gpu.py --layers 12 --heads 12 --width 768 --mlp-width 3072 \\
      --seq-len 1024 --vocab 50257 --batch 16
"""
import time

import options


def extra(parser):
    parser.add_argument("--eager", action="store_true", help="no torch.compile")
    parser.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")


ARGS = options.parse(__doc__, extra)

import torch  # noqa: E402

from gpt_model import build, random_batch  # noqa: E402


def matmul_peak(dtype, n=8192, reps=10):
    a = torch.zeros(n, n, device="cuda", dtype=dtype)
    b = torch.zeros(n, n, device="cuda", dtype=dtype)
    best = 0.0
    for r in range(reps + 2):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b.t()
        stop.record()
        stop.synchronize()
        if r >= 2:
            best = max(best, 2.0 * n ** 3 / (start.elapsed_time(stop) * 1e-3))
    return best


def main(args):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    bf16 = args.precision == "bf16"
    model = build(args, fused_attention=True).cuda()
    opt = model.optimizer(fused=True)
    step_fn = model if args.eager else torch.compile(model)
    tokens, targets = (t.cuda() for t in random_batch(args, 1))
    elapsed = 0.0
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = step_fn(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        torch.cuda.synchronize()
        if step >= args.warmup:
            elapsed += time.perf_counter() - t0
    step_seconds = elapsed / args.steps
    n = sum(p.numel() for p in model.parameters())
    flops_per_token = 6 * n + 12 * args.layers * args.width * args.seq_len
    tokens_per_second = args.batch * args.seq_len / step_seconds
    peak = matmul_peak(torch.bfloat16 if bf16 else torch.float32)
    print(f"pytorch {torch.__version__} gpt2 L{args.layers} H{args.heads} C{args.width} M{args.mlp_width} "
          f"T{args.seq_len} V{args.vocab}, {n / 1e6:.1f}M params on {torch.cuda.get_device_name()}, "
          f"{args.precision}, {'eager' if args.eager else 'torch.compile'}")
    print(f"batch {args.batch * args.seq_len} tokens, {args.steps} steps after {args.warmup} warmup")
    print(f"step {step_seconds * 1e3:.2f} ms")
    achieved = tokens_per_second * flops_per_token
    print(f"{tokens_per_second:.0f} tokens/s, {achieved / 1e12:.1f} TFLOP/s")
    print(f"measured {args.precision} matmul peak {peak / 1e12:.1f} TFLOP/s: MFU {100 * achieved / peak:.1f}%")


if __name__ == "__main__":
    main(ARGS)
