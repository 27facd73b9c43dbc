#!/usr/bin/python3
"""Sharded data-parallel training throughput in PyTorch: DistributedDataParallel over Gloo with
`torch.distributed.optim.ZeroRedundancyOptimizer` wrapping AdamW (ZeRO-1: gradients are
all-reduced in full, each rank updates the parameters it owns and broadcasts them), `--ranks`
processes on loopback with `--threads` threads each (default 2 x 1). The counterpart of
`gradsync-bench ddp --set ddp.sharding=optimizer`; `--optimizer adamw` runs plain DDP + AdamW
instead, PyTorch's own baseline.

The model is one of gradsync's presets (`--preset`, default gpt-tiny): the gpt2 flavour from
gpt_model.py, the llama flavour (minimind-26m) from llama_model.py. Each rank trains on its own
batch of `--batch` x seq-len random tokens; the global gradient norm is clipped to 1 (as
examples/jobs/demo.yaml's gradClip). Prints the mean step time over ranks, the total tokens per
second of all ranks and each rank's peak resident memory (VmHWM).
"""
import os
import socket
import sys

import options


def _extra(p):
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--preset", choices=sorted(options.PRESETS), default="gpt-tiny")
    p.add_argument("--optimizer", choices=["zero", "adamw"], default="zero",
                   help="zero: ZeroRedundancyOptimizer(AdamW); adamw: every rank steps the whole AdamW")
    p.add_argument("--clip", type=float, default=1.0, help="global gradient-norm clip (0: none)")
    p.add_argument("--bind-cpus", action="store_true",
                   help="run rank r on its even share of the CPUs, as gradsync's launchers do (torchrun does not)")
    p.set_defaults(seq_len=None, vocab=None)  # the preset's unless given


ARGS = options.parse(__doc__, _extra)
options.apply_preset(ARGS)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from gpt_model import Gpt, random_batch, timed_steps  # noqa: E402
from llama_model import Llama  # noqa: E402


def build(args):
    if args.flavour == "llama":
        return Llama(args.layers, args.heads, args.kv_heads, args.width, args.mlp_width, args.seq_len, args.vocab)
    return Gpt(args.layers, args.heads, args.width, args.mlp_width, args.seq_len, args.vocab)


def make_optimizer(model, args):
    # AdamW as Gpt.optimizer's: decay matrices and embeddings, not biases and norm gains.
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}]
    hyper = {"lr": 1e-4, "betas": (0.9, 0.95), "eps": 1e-8}
    if args.optimizer == "adamw":
        return torch.optim.AdamW(groups, **hyper)
    return ZeroRedundancyOptimizer(groups, optimizer_class=torch.optim.AdamW, **hyper)


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def run(rank, args, port):
    if args.bind_cpus:
        cpus = sorted(os.sched_getaffinity(0))
        share = len(cpus) // args.ranks
        if share > 0:
            os.sched_setaffinity(0, cpus[rank * share:(rank + 1) * share])
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.ranks)
    torch.manual_seed(0)
    model = DistributedDataParallel(build(args))
    opt = make_optimizer(model.module, args)
    tokens, targets = random_batch(args, 1 + rank)
    clip = (lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)) if args.clip > 0 else None
    mean = torch.tensor([timed_steps(model, opt, tokens, targets, args, clip)])
    dist.all_reduce(mean)
    peaks = [torch.zeros(1, dtype=torch.float64) for _ in range(args.ranks)]
    dist.all_gather(peaks, torch.tensor([float(peak_rss_bytes())], dtype=torch.float64))
    step_seconds = mean.item() / args.ranks
    if rank == 0:
        n = sum(p.numel() for p in model.parameters())
        name = "ZeroRedundancyOptimizer(AdamW)" if args.optimizer == "zero" else "AdamW"
        print(f"pytorch {torch.__version__} DDP gloo + {name}, {args.ranks} ranks x {args.threads} thread(s), "
              f"{args.preset} ({args.flavour} L{args.layers} H{args.heads} C{args.width} M{args.mlp_width} "
              f"T{args.seq_len} V{args.vocab}), {n / 1e6:.2f}M params")
        print(f"batch {args.batch} x {args.seq_len} tokens per rank, {args.steps} steps after {args.warmup} warmup")
        print(f"step {step_seconds * 1e3:.1f} ms")
        print(f"{args.ranks * args.batch * args.seq_len / step_seconds:.0f} tokens/s (all ranks)")
        for r, peak in enumerate(peaks):
            print(f"rank {r} peak RSS {peak.item() / 2**20:.1f} MiB")
    dist.destroy_process_group()
    # Leave without tearing DDP down: PyTorch 1.13 can deadlock there (~Reducer joins a Gloo
    # thread that waits for the GIL this thread holds), and a rank that never exits hangs spawn.
    sys.stdout.flush()
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    # Spawned ranks re-import this file and inherit the environment set above.
    mp.spawn(run, args=(ARGS, free_port()), nprocs=ARGS.ranks, join=True)
