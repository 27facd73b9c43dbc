"""gradsync.torch.DistributedSampler: torch's DistributedSampler, with gradsync's epoch order and
exact-once resume.

Every epoch's order is the permutation gradsync's native sampler uses (gradsync/ddp/epoch_order.h):
a pure function of the job seed (training.seed) and the epoch, the epoch's seed from the
coordinator's epoch plan, so every rank and every restart computes the same order. Positions in it
are handed out strided, as torch's sampler does: rank r takes positions c + r, c + r + W, ... from
the epoch's start cursor c (0, or where the checkpoint the job resumed from left it). After each
rank consumed k samples the job consumed exactly the positions [c, c + kW): a checkpoint records
that cursor, and a restart at any world size W' goes on from the next position.

"Each sample once per epoch" means: positions [0, n - (n - c) mod W) of each epoch are trained
exactly once, counting every generation up to its last committed checkpoint; the fewer than W
positions left at the end are skipped, as torch's drop_last=True does (every rank must see as
many batches, or DDP waits for ever), and there are none when W divides what is left. Positions
handed out after the last committed checkpoint are trained again after a restart: that is the
resume, not a repeat.

The sampler moves itself to the next epoch when an epoch's iteration ends: set_epoch is accepted
(a no-op for the epoch it is in) but not needed.
"""
import os
import weakref

import torch
import torch.distributed as dist

from .. import _native
from ._link import in_job, link

_samplers = []


def registered():
    """The live samplers, oldest first."""
    alive = [s() for s in _samplers]
    return [s for s in alive if s is not None]


class DistributedSampler(torch.utils.data.Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=None, drop_last=True):
        super().__init__(dataset)
        if not drop_last:
            raise ValueError("gradsync.torch.DistributedSampler skips an epoch's last (n - c) mod W positions "
                             "(drop_last=True): padding with repeats would train some samples twice")
        self.num_samples_total = len(dataset)
        self.shuffle = shuffle
        self._coordinated = in_job() and seed is None
        if in_job():
            self.rank, self.num_replicas = link().rank, link().world_size
            self.seed = link().job_seed if seed is None else seed
            resume = link().resume
        else:
            self.num_replicas = num_replicas if num_replicas is not None else _world_size()
            self.rank = rank if rank is not None else _rank()
            self.seed = 0 if seed is None else seed
            resume = None
        self.epoch = resume["epoch"] if resume else 0
        self._start = resume["cursor"] if resume else 0
        self._taken = 0
        self._audit = _Audit.open() if in_job() else None
        _samplers.append(weakref.ref(self))

    def set_epoch(self, epoch):
        """Starts `epoch` from its beginning; nothing when the sampler is in it already (a resumed
        epoch goes on from its cursor)."""
        if epoch != self.epoch:
            self.epoch, self._start, self._taken = epoch, 0, 0

    def position(self):
        """(epoch, cursor): the epoch and how many of its positions the job has consumed."""
        return self.epoch, self._start + self._taken * self.num_replicas

    def __len__(self):
        return max(0, self.num_samples_total - self._start) // self.num_replicas

    # Positions fetched at a time: an epoch of any size costs this much memory, not n samples.
    _CHUNK = 1 << 16

    def _mine(self, first, count, world):
        """This rank's samples, at positions first, first + world, ..., a chunk at a time."""
        n = self.num_samples_total
        seed = None
        if self.shuffle:
            seed = link().epoch_seed(self.epoch) if self._coordinated else _native.epoch_seed(self.seed, self.epoch)
        for done in range(0, count, self._CHUNK):
            take = min(self._CHUNK, count - done)
            at = first + done * world
            if seed is None:
                yield from range(at, at + take * world, world)
            else:
                yield from torch.frombuffer(bytearray(_native.epoch_positions(seed, n, at, take, world)),
                                            dtype=torch.int64).tolist()

    def __iter__(self):
        epoch, start, world = self.epoch, self._start, self.num_replicas
        count = len(self)
        self._taken = 0
        for k, index in enumerate(self._mine(start + self.rank, count, world)):
            self._taken = k + 1
            if self._audit is not None:
                self._audit.write(epoch, start + self.rank + k * world, index)
            yield index
        if self.epoch == epoch:
            self.epoch, self._start, self._taken = epoch + 1, 0, 0


class _Audit:
    """One line per sample handed out, "epoch position index", when the worker keeps a sample log
    (--sample_log_dir): DIR/<job>/torch-g<generation>-r<rank>.log."""

    @staticmethod
    def open():
        root = link().sample_log_dir
        if not root:
            return None
        d = os.path.join(root, link().job_id)
        os.makedirs(d, exist_ok=True)
        return _Audit(os.path.join(d, f"torch-g{link().generation}-r{link().rank}.log"))

    def __init__(self, path):
        self._file = open(path, "a", buffering=1)

    def write(self, epoch, position, index):
        self._file.write(f"{epoch} {position} {index}\n")


def _world_size():
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


def _rank():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))
