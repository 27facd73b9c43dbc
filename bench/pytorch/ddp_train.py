#!/usr/bin/python3
"""gpt-tiny data-parallel training throughput in PyTorch: DistributedDataParallel over Gloo,
`--ranks` processes on loopback with `--threads` threads each (default 2 x 1). The
counterpart of `gradsync-bench ddp`.

Each rank trains on its own batch of `--batch` x seq-len random tokens; DDP all-reduces the
gradients in 25 MiB buckets during backward (its defaults, and ours). Prints the mean step
time over ranks and the total tokens per second of all ranks.
"""
import os
import socket
import sys

import options

def _extra(p):
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--bind-cpus", action="store_true",
                   help="run rank r on its even share of the CPUs, as gradsync's launchers do (torchrun does not)")


ARGS = options.parse(__doc__, _extra)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from gpt_model import build, random_batch, timed_steps  # noqa: E402


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
    opt = model.module.optimizer()
    tokens, targets = random_batch(args, 1 + rank)
    mean = torch.tensor([timed_steps(model, opt, tokens, targets, args)])
    dist.all_reduce(mean)
    step_seconds = mean.item() / args.ranks
    if rank == 0:
        tokens_per_step = args.ranks * args.batch * args.seq_len
        print(f"pytorch {torch.__version__} DDP gloo, {args.ranks} ranks x {args.threads} thread(s), "
              f"gpt2 L{args.layers} H{args.heads} C{args.width} M{args.mlp_width} T{args.seq_len} V{args.vocab}")
        print(f"batch {args.batch} x {args.seq_len} tokens per rank, {args.steps} steps after {args.warmup} warmup")
        print(f"step {step_seconds * 1e3:.1f} ms")
        print(f"{tokens_per_step / step_seconds:.0f} tokens/s (all ranks)")
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
