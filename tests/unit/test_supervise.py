"""The stop logic of ``crosstalk run`` on real child processes (no ReFrame): a first signal asks
the session to stop, a second (or the grace period) kills it, and so does its time limit; the
use lock refuses or queues a second user. Signals are sent to this process, as a terminal would."""
import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from crosstalk.errors import CrosstalkError
from crosstalk.run import uselock
from crosstalk.run.session import _session_factor, parse_duration
from crosstalk.run.supervise import supervise

#: A stand-in for ReFrame: exits 1 on SIGTERM (like its abort path), or ignores SIGTERM.
CHILD = """
import signal, sys, time
if sys.argv[1] == "graceful":
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
else:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
"""


def _start(mode):
    def start():
        child = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE,
                                 text=True, process_group=0)
        assert child.stdout.readline() == "ready\n"
        return child
    return start


def _signal_later(*delays, sig=signal.SIGINT):
    def send():
        for delay in delays:
            time.sleep(delay)
            os.kill(os.getpid(), sig)
    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_one_signal_stops_the_session_gracefully():
    cleaned, out = [], io.StringIO()
    _signal_later(0.5)
    outcome = supervise(_start("graceful"), cleaned.append, out=out)
    assert outcome.interrupted_by == signal.SIGINT and not outcome.forced
    assert outcome.returncode == 1 and outcome.exit_status == 130
    assert cleaned == [outcome] and "SIGINT received" in out.getvalue()


def test_a_second_signal_forces():
    cleaned, out = [], io.StringIO()
    _signal_later(0.5, 0.5, sig=signal.SIGTERM)
    started = time.monotonic()
    outcome = supervise(_start("stubborn"), cleaned.append, out=out)
    assert outcome.forced and outcome.returncode == -signal.SIGKILL
    assert outcome.exit_status == 128 + signal.SIGTERM and cleaned == [outcome]
    assert time.monotonic() - started < 30      # not the child's 60 s sleep
    assert "second signal: force-stopping" in out.getvalue()


def test_a_session_that_ignores_the_stop_is_killed_after_the_grace_period():
    _signal_later(0.5)
    outcome = supervise(_start("stubborn"), lambda o: None, grace=1, out=io.StringIO())
    assert outcome.forced and outcome.interrupted_by == signal.SIGINT


def test_the_time_limit_stops_the_session():
    cleaned = []
    outcome = supervise(_start("graceful"), cleaned.append, limit=1, out=io.StringIO())
    assert outcome.timed_out and not outcome.interrupted_by and outcome.exit_status == 124
    assert cleaned == [outcome]


def test_signal_handlers_are_restored():
    before = signal.getsignal(signal.SIGINT)
    supervise(_start("graceful"), lambda o: None, limit=0.5, out=io.StringIO())
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize("args, factor", [([], 1), (["--repeat", "3"], 3), (["--reruns=2"], 3),
                                          (["--max-retries", "1", "--repeat=2"], 4), (["-n", "x"], 1)])
def test_session_factor(args, factor):
    assert _session_factor(args) == factor


def test_parse_duration():
    assert [parse_duration(t) for t in ("30s", "5m", "2h")] == [30, 300, 7200]


@contextlib.contextmanager
def lock_holder(code):
    """Another process running ``code``, once it has printed its first line (it holds the lock)."""
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip()
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_held_lock_refuses_a_second_user_naming_the_first(tmp_path):
    path = tmp_path / "x.lock"
    code = (f"from crosstalk.run import uselock; import time\n"
            f"with uselock.held({str(path)!r}, 'crosstalk run R1'):\n"
            f"    print('held', flush=True); time.sleep(30)\n")
    with lock_holder(code) as holder:
        with pytest.raises(CrosstalkError, match=rf"in use by crosstalk run R1 \(pid {holder.pid}\)"):
            with uselock.held(path, "crosstalk run R2"):
                pass
        waited = []
        with pytest.raises(CrosstalkError, match="after waiting 1 s"):
            with uselock.held(path, "crosstalk report", wait=1, on_wait=waited.append):
                pass
        assert waited == [f"crosstalk run R1 (pid {holder.pid})"]
    with uselock.held(path, "crosstalk run R3"):      # a dead holder leaves no stale lock
        pass


def test_a_holder_that_has_not_written_its_name_yet_is_still_named(tmp_path):
    """The gap between flock and writing the name (a report lost its holder's name in CI)."""
    path = tmp_path / "x.lock"
    code = (f"import fcntl, json, os, time\n"
            f"h = open({str(path)!r}, 'a+'); fcntl.flock(h, fcntl.LOCK_EX)\n"
            f"print('locked', flush=True); time.sleep(0.4)\n"
            f"h.write(json.dumps({{'pid': os.getpid(), 'what': 'crosstalk report'}})); h.flush()\n"
            f"time.sleep(30)\n")
    with lock_holder(code) as holder:
        with pytest.raises(CrosstalkError, match=rf"in use by crosstalk report \(pid {holder.pid}\)"):
            with uselock.held(path, "crosstalk report"):
                pass
