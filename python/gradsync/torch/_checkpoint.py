"""Committed checkpoints for a script: each rank saves its part under the job's checkpoint
directory and reports it; the coordinator commits the step once every rank's part is in (writes
MANIFEST.json, keeps checkpoint.keep of them), verifies it before a restart resumes from it, and
hands it to the next generation, which load() reads.

save() is collective: every rank of the generation calls it for the same step. A rank's part is
torch.save of {"state": state, ...} (rank 0's is what a rank without its own reads after a
resize), written to a temporary file, fsynced and renamed, so a part is whole or absent.
"""
import os

import torch

from . import _report, _sampler
from ._link import link


def _sampler_position(sampler):
    if sampler is None:
        samplers = _sampler.registered()
        if len(samplers) > 1:
            raise ValueError("several gradsync samplers are alive: pass the one that orders training as sampler=")
        sampler = samplers[0] if samplers else None
    return sampler.position() if sampler is not None else (0, 0)


def save(state, step, sampler=None):
    """Saves this rank's `state` (anything torch.save takes) as its part of the checkpoint after
    optimizer step `step`, with the sampler's position; returns True on the rank whose report
    completed the checkpoint (the coordinator committed it)."""
    l = link()
    directory = l.checkpoint_dir(int(step))
    os.makedirs(directory, exist_ok=True)
    epoch, cursor = _sampler_position(sampler)
    path = os.path.join(directory, f"rank-{l.rank:05d}.pt")
    payload = {"state": state, "step": int(step), "epoch": epoch, "cursor": cursor, "rank": l.rank,
               "world_size": l.world_size}
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return l.report_checkpoint(step=int(step), epoch=epoch, cursor=cursor, path=path,
                               initial_loss=_report.initial_loss() or 0.0)


def load(map_location="cpu"):
    """The state of the committed checkpoint this generation resumes from (this rank's part, or rank
    0's when the checkpoint has none for this rank), or None when the job starts afresh. The
    sampler goes on from that checkpoint's position by itself."""
    resume = link().resume
    if resume is None:
        return None
    parts = resume["parts"]
    part = parts.get(link().rank, parts[0])
    payload = torch.load(os.path.join(resume["dir"], part), map_location=map_location)
    _report.set_initial_loss(resume["initial_loss"] or None)
    return payload["state"]
