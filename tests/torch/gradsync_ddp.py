"""A DDP script on gradsync.torch, for the tests: the exchange, the sampler, committed checkpoints,
reports, an ignored buffer and an ignored parameter that differ between ranks on purpose.

Each rank writes OUT/final-rank<R>.pt (its model's state_dict) at the end; a resumed run starts
from gradsync.torch.load(). --kill-at S makes rank --kill-rank SIGKILL itself at step S of the
job's first generation, after the checkpoint of step --save-every has been committed.
"""
import argparse
import os
import signal
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

import gradsync.torch as gt


class Scale(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.local_scale = torch.nn.Parameter(torch.tensor([1.0 + rank]))


class Net(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
        # Rank-local on purpose: DDP must neither broadcast nor reduce them. (torch 1.13 names a
        # parameter of the root module ".name" when it checks the ignore list: it lives in a
        # submodule here.)
        self.register_buffer("rank_tag", torch.full((3,), float(rank)))
        self.scale = Scale(rank)

    def forward(self, x):
        return self.body(x) * self.scale.local_scale.detach() + 0 * self.rank_tag.sum()


def data(samples):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(samples, 16, generator=g)
    y = torch.sin(x[:, :4] * 2) + 0.1 * torch.randn(samples, 4, generator=g)
    return TensorDataset(x, y)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=240)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--exchange", choices=["gradsync", "gloo"], default="gradsync")
    p.add_argument("--device", default="cpu", help="cpu, or cuda (the rank's LOCAL_RANK-th visible GPU, or the "
                                                   "only one)")
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--kill-at", type=int, default=0)
    p.add_argument("--kill-rank", type=int, default=1)
    p.add_argument("--hang-at", type=int, default=0,
                   help="at this step of the first generation, rank --kill-rank hangs before its backward: the "
                        "others wait for it in the exchange's all-reduce")
    p.add_argument("--hold-at", type=int, default=0,
                   help="at this step of the first generation, rank --kill-rank writes its worker's pid to "
                        "OUT/worker.pid and waits (for the test to kill the worker)")
    p.add_argument("--dump-grad-bound", action="store_true",
                   help="rank 0 writes sum_r |g_r| / W of the first step's gradients (for the summation bound)")
    args = p.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
    model = Net(rank).to(device)
    model._ddp_params_and_buffers_to_ignore = {"rank_tag", "scale.local_scale"}
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    if args.exchange == "gradsync":
        exchange = gt.register_exchange(ddp)
        print(f"rank {rank}: gradient buckets through gradsync's exchange over {exchange.size} ranks "
              f"({exchange.backend} on {exchange.device})", flush=True)
    params = list(model.body.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr) if args.optimizer == "adamw" else torch.optim.SGD(params, lr=args.lr)
    dataset = data(args.samples)
    sampler = gt.DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch, sampler=sampler)

    step, start_epoch = 0, 0
    state = gt.load() if gt.in_job() else None
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, start_epoch = state["step"], state["epoch"]
        print(f"rank {rank} resumed at step {step}, epoch {start_epoch}, sampler at {sampler.position()}", flush=True)

    restarts = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            if args.dump_grad_bound and step == 0:
                dump_bound(model, params, x, y, world, rank, args.out)
            loss = F.mse_loss(ddp(x), y)
            opt.zero_grad(set_to_none=True)
            if args.hang_at and restarts == 0 and rank == args.kill_rank and step + 1 == args.hang_at:
                print(f"rank {rank} hangs before step {step + 1}'s backward", flush=True)
                while True:
                    time.sleep(0.1)
            loss.backward()
            opt.step()
            # The ignored parameter trains locally: it must stay each rank's own.
            with torch.no_grad():
                model.scale.local_scale.add_(0.001)
            step += 1
            gt.report(step, loss=loss.item(), samples=x.shape[0], epoch=epoch)
            if args.kill_at and restarts == 0 and rank == args.kill_rank and step == args.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if args.hold_at and restarts == 0 and rank == args.kill_rank and step == args.hold_at:
                with open(os.path.join(args.out, "worker.pid.tmp"), "w") as f:
                    f.write(str(os.getppid()))
                os.rename(os.path.join(args.out, "worker.pid.tmp"), os.path.join(args.out, "worker.pid"))
                while True:
                    time.sleep(0.1)
            if gt.in_job() and args.save_every and step % args.save_every == 0:
                gt.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                         "epoch": sampler.position()[0]}, step)
            if args.max_steps and step >= args.max_steps:
                break
        if args.max_steps and step >= args.max_steps:
            break
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, os.path.join(args.out, f"final-rank{rank}.pt"))
    print(f"rank {rank} finished at step {step}", flush=True)
    dist.barrier()
    os._exit(0)


def dump_bound(model, params, x, y, world, rank, out):
    """Writes (rank 0) S = sum_r |g_r| / W for the first batch: each rank's own gradient, before any
    reduction, summed in absolute value across ranks. The test's bound on how far two orders of
    summation can move the weights is lr * 2 (W - 1) u * S + 2 u |w|."""
    local = torch.autograd.grad(F.mse_loss(model(x), y), params)
    sums = [g.abs() / world for g in local]
    for t in sums:
        dist.all_reduce(t)
    if rank == 0:
        torch.save(sums, os.path.join(out, "grad-abs-sum.pt"))


if __name__ == "__main__":
    main()
