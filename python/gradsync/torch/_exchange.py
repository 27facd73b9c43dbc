"""DistributedDataParallel's gradient buckets all-reduced by gradsync's communicator.

Why a communication hook and not a torch.distributed backend: DDP hands each bucket to the hook as
one flat tensor as soon as its gradients are ready, and takes a Future back; that is exactly the
overlap of communication with backward that gradsync's reducer does natively, with no torch
header or ABI to track (a backend must implement torch's C++ ProcessGroup for each torch version).
DDP's one-time broadcast of parameters and buffers at construction (and of buffers before each
forward, broadcast_buffers=True) stays on the process group the script created. Parameters and
buffers in model._ddp_params_and_buffers_to_ignore are never in a bucket, so the exchange neither
reduces nor broadcasts them.

The sum is gradsync's: on one host through one shared-memory segment, across hosts over Gloo's TCP
transport, with the same order of additions (rank order) on every run, so a run repeats bit for
bit. Each bucket is divided by the world size first, as torch's default allreduce hook does.
"""
import torch

from ._link import in_job, link


class Exchange:
    """A communicator among the job's ranks, met through the coordinator (a gradsync script job
    only), over host memory or, with `device` a CUDA device, over that GPU's memory: NCCL when the
    coordinator placed every rank on a GPU of its own, else Gloo staged through pinned host memory.
    Collectives on a GPU wait for the work queued on that device's current stream."""

    def __init__(self, name="ddp", device=None):
        if not in_job():
            raise RuntimeError("gradsync's exchange needs a gradsync script job (gradsync run -- ...)")
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        if self.device.type == "cuda":
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            self.device = torch.device("cuda", index)
            stream = torch.cuda.current_stream(self.device).cuda_stream
            self._native = link().connect_exchange(name, device=index, stream=stream)
        else:
            self._native = link().connect_exchange(name)
        self.rank = self._native.rank
        self.size = self._native.size
        self.backend = self._native.backend

    def _check(self, tensor):
        if tensor.dtype != torch.float32 or tensor.device != self.device or not tensor.is_contiguous():
            raise TypeError(f"this gradsync exchange takes contiguous float32 tensors on {self.device}, got "
                            f"{tensor.dtype} on {tensor.device}{'' if tensor.is_contiguous() else ', not contiguous'}")

    def all_reduce(self, tensor):
        """Sums `tensor` across ranks, in place."""
        self._check(tensor)
        self._native.all_reduce(tensor.data_ptr(), tensor.numel())
        return tensor

    def all_reduce_future(self, tensor):
        """Sums `tensor` across ranks in place, asynchronously: a torch.futures.Future of it."""
        self._check(tensor)
        future = torch.futures.Future()

        def done(error):
            if error is None:
                future.set_result(tensor)
            else:
                future.set_exception(RuntimeError(f"gradsync all-reduce failed: {error}"))

        self._native.all_reduce_async(tensor.data_ptr(), tensor.numel(), done)
        return future

    def broadcast(self, tensor, root=0):
        self._check(tensor)
        self._native.broadcast(tensor.data_ptr(), tensor.numel(), root)
        return tensor

    def barrier(self):
        self._native.barrier()


def _allreduce_hook(exchange, bucket):
    tensor = bucket.buffer()
    tensor.div_(exchange.size)
    return exchange.all_reduce_future(tensor)


def register_exchange(ddp_model, name="ddp"):
    """Has `ddp_model` (a DistributedDataParallel) all-reduce its gradient buckets through gradsync's
    exchange; returns the Exchange. Without a gradsync job (plain torchrun) it leaves DDP as it is
    and returns None, so one script runs under both."""
    if not in_job():
        return None
    exchange = Exchange(name, device=next(ddp_model.module.parameters()).device)
    ddp_model.register_comm_hook(exchange, _allreduce_hook)
    return exchange
