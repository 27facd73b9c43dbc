#!/usr/bin/python3
"""gpt-tiny DDP training as a torchrun script, for comparing launchers and exchanges: run it under
`torchrun --nproc_per_node 2` (torch's Gloo all-reduce) and under `gradsync run --workers 2 --`
with `--exchange gradsync` (gradsync.torch's exchange: shared memory between the ranks of a host).
Everything else is the same: the model (gpt_model.py), one thread per rank, each rank's own batch
of random tokens, DDP's 25 MiB buckets. Rank 0 prints one JSON line with the mean step time over
ranks and the tokens per second of all ranks.
"""
import json
import os
import sys

import options


def _extra(p):
    p.add_argument("--exchange", choices=["gloo", "gradsync"], default="gloo")


ARGS = options.parse(__doc__, _extra)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from gpt_model import build, random_batch, timed_steps  # noqa: E402


def main(args):
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(build(args))
    if args.exchange == "gradsync":
        import gradsync.torch as gt
        if gt.register_exchange(model) is None:
            sys.exit("--exchange gradsync runs under gradsync run -- ...")
    opt = model.module.optimizer()
    tokens, targets = random_batch(args, 1 + rank)
    mean = torch.tensor([timed_steps(model, opt, tokens, targets, args)])
    dist.all_reduce(mean)
    step_seconds = mean.item() / world
    if rank == 0:
        print(json.dumps({"exchange": args.exchange, "ranks": world, "step_ms": step_seconds * 1e3,
                          "tokens_per_second": world * args.batch * args.seq_len / step_seconds}), flush=True)
    dist.barrier()
    os._exit(0)


if __name__ == "__main__":
    main(ARGS)
