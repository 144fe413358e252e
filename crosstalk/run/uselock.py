"""Exclusive use of a system or of a results table between crosstalk processes (flock).

The lock file holds who has it (pid, what), so the one refused or waiting can say who to wait for.
The kernel drops a flock when its holder dies, so a killed run never leaves a stale lock.
"""
import contextlib
import fcntl
import json
import os
import time
from pathlib import Path

from crosstalk.errors import CrosstalkError


def _holder(handle, settle=1.0):
    """Who holds the lock. A holder writes its name just after it gets the lock, so an empty file
    is read again for up to ``settle`` seconds before the holder counts as unknown."""
    deadline = time.monotonic() + settle
    while True:
        try:
            handle.seek(0)
            holder = json.loads(handle.read() or "{}")
        except ValueError:
            holder = {}
        if holder or time.monotonic() >= deadline:
            return holder
        time.sleep(0.05)


def _describe(holder):
    return f"{holder.get('what', 'another crosstalk command')} (pid {holder.get('pid', '?')})"


@contextlib.contextmanager
def held(path, what, wait=0.0, on_wait=None):
    """Hold the lock at ``path`` for the block, as ``what`` (e.g. "crosstalk run <id>").

    ``wait=0`` refuses at once if another process holds it; otherwise wait up to ``wait`` seconds
    (``on_wait(holder text)`` is called once, to say why nothing happens). Expiry or refusal is a
    one-line CrosstalkError naming the holder.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        deadline = time.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _describe(_holder(handle))
                if time.monotonic() >= deadline:
                    waited = f" after waiting {wait:g} s" if wait else ""
                    raise CrosstalkError(f"{path}: in use by {holder}{waited}; wait for it to end "
                                         f"or stop it (Ctrl-C in its terminal)") from None
                if on_wait and not told:
                    on_wait(holder)
                    told = True
                time.sleep(0.5)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"pid": os.getpid(), "what": what}))
            handle.flush()
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
