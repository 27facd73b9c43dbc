"""gradsync for PyTorch scripts: the parameter exchange, the sampler, checkpoints and reports.

    import gradsync.torch as gt

    ddp = DistributedDataParallel(model)
    gt.register_exchange(ddp)                      # gradient buckets through gradsync's communicator
    sampler = gt.DistributedSampler(dataset)       # epoch order from the job seed, exact-once resume
    state = gt.load()                              # the last committed checkpoint's state, or None
    ...
    gt.report(step, loss=loss.item(), tokens=n)    # step reports: Prometheus, gradsync watch, report
    gt.save({"model": model.state_dict(), ...}, step)   # this rank's part; committed when all are in

Inside a gradsync script job the rank's link to gradsync comes from GRADSYNC_RUNTIME_DIR, which its
worker sets; outside one (plain torchrun), the sampler and the exchange still work from torchrun's
environment, report() does nothing, and save()/load() raise.
"""
from ._checkpoint import load, save
from ._exchange import Exchange, register_exchange
from ._link import in_job, link
from ._report import report
from ._sampler import DistributedSampler

__all__ = ["DistributedSampler", "Exchange", "in_job", "link", "load", "register_exchange", "report", "save"]
