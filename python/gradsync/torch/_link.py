"""The rank's link to gradsync (gradsync._native.RankLink), opened once per process."""
import os
import threading

from .. import _native

_lock = threading.Lock()
_link = None


def in_job():
    """True inside a gradsync script job (its worker set GRADSYNC_RUNTIME_DIR)."""
    return bool(os.environ.get("GRADSYNC_RUNTIME_DIR"))


def link():
    """The rank's RankLink; RuntimeError outside a gradsync script job."""
    global _link
    with _lock:
        if _link is None:
            runtime = os.environ.get("GRADSYNC_RUNTIME_DIR")
            if not runtime:
                raise RuntimeError("not running as a gradsync script job (no GRADSYNC_RUNTIME_DIR): "
                                   "start the script with `gradsync run -- ...` or `gradsync submit -- ...`")
            _link = _native.RankLink.open(runtime)
        return _link
