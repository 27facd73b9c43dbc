"""Step reports: to the metrics service (reduced across ranks there, for Prometheus, `gradsync
watch` and `gradsync report`) and to the rank's worker (its heartbeat's step and, from rank 0, the
job's progress)."""
import time

from ._link import in_job, link

_state = {"initial_loss": None, "last_time": None, "last_step": None, "epoch": 0}


def initial_loss():
    return _state["initial_loss"]


def set_initial_loss(value):
    if _state["initial_loss"] is None and value is not None:
        _state["initial_loss"] = float(value)


def report(step, loss=None, tokens=0, samples=0, epoch=None, lr=0.0, grad_norm=0.0):
    """Reports optimizer step `step` of this rank: its loss, and the tokens and samples it trained on
    in that step. The step time is measured between reports. Does nothing outside a gradsync job."""
    if not in_job():
        return
    now = time.monotonic()
    seconds = 0.0
    if _state["last_time"] is not None and _state["last_step"] is not None and step > _state["last_step"]:
        seconds = (now - _state["last_time"]) / (step - _state["last_step"])
    _state["last_time"], _state["last_step"] = now, step
    if epoch is not None:
        _state["epoch"] = int(epoch)
    loss = float(loss) if loss is not None else 0.0
    set_initial_loss(loss)
    link().report_step(step=int(step), epoch=_state["epoch"], loss=loss, samples=int(samples), tokens=int(tokens),
                       step_seconds=seconds, lr=float(lr), grad_norm=float(grad_norm),
                       initial_loss=_state["initial_loss"] or 0.0)
