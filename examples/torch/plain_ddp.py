"""A plain torchrun script: DistributedDataParallel over Gloo, a DistributedSampler with set_epoch,
the loss all-reduced for its log, rank 0's final weights saved. It knows nothing of gradsync:

    torchrun --nproc_per_node 2 plain_ddp.py --out final.pt
    gradsync run --workers 2 -- python3 plain_ddp.py --out final.pt

end with the same weights, bit for bit (same seed, same Gloo, one thread per rank).
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def synthetic_regression(samples, inputs, outputs, seed):
    """A fixed random teacher's targets for fixed random inputs: the same on every rank."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, inputs, generator=g)
    teacher = torch.randn(inputs, outputs, generator=g) / inputs**0.5
    y = torch.tanh(x @ teacher) + 0.05 * torch.randn(samples, outputs, generator=g)
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16, help="samples per rank per step")
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="plain_ddp_final.pt", help="where rank 0 saves the final state_dict")
    args = parser.parse_args()

    # torchrun sets OMP_NUM_THREADS=1 for several processes; saying so here gives the same bits
    # under any launcher.
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    data = synthetic_regression(args.samples, 32, 8, seed=1234)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))
    ddp = DDP(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=0.01)

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.mse_loss(ddp(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            logged = loss.detach().clone()
            dist.all_reduce(logged)
            if rank == 0 and step % 20 == 0:
                print(f"epoch {epoch} step {step} loss {logged.item() / world:.6f}", flush=True)

    dist.barrier()
    if rank == 0:
        torch.save(model.state_dict(), args.out)
        print(f"saved {args.out} after {step} steps", flush=True)
    dist.barrier()
    # torch 1.13's Gloo threads can deadlock at interpreter teardown; every rank has finished.
    os._exit(0)


if __name__ == "__main__":
    main()
