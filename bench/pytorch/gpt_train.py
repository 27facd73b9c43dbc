#!/usr/bin/python3
"""gpt-tiny training throughput in PyTorch, one process: the counterpart of gradsync-model-bench.

forward + backward + AdamW per step on random tokens, fp32, eager, `--threads` threads
(default 1). Prints the step time and tokens per second. Run with Debian's /usr/bin/python3
(python3-torch) and libopenblas0 installed.
"""

import options

ARGS = options.parse(__doc__)  # before torch loads: it exports the thread count

import torch  # noqa: E402

from gpt_model import build, random_batch, timed_steps  # noqa: E402


def main(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build(args)
    opt = model.optimizer()
    tokens, targets = random_batch(args, 1)
    step_seconds = timed_steps(model, opt, tokens, targets, args)
    n = sum(p.numel() for p in model.parameters())
    print(f"pytorch {torch.__version__} gpt2 L{args.layers} H{args.heads} C{args.width} M{args.mlp_width} "
          f"T{args.seq_len} V{args.vocab}, {n / 1e6:.2f}M params, {args.threads} thread(s)")
    print(f"batch {args.batch} x {args.seq_len} tokens, {args.steps} steps after {args.warmup} warmup")
    print(f"step {step_seconds * 1e3:.1f} ms")
    print(f"{args.batch * args.seq_len / step_seconds:.0f} tokens/s")


if __name__ == "__main__":
    main(ARGS)
