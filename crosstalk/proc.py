"""External commands with a time limit: ``run`` is how crosstalk starts a program and waits for it.

The command runs in a process group of its own, so that when the limit expires (or on Ctrl-C)
the whole group ends, not only its first process (ansible-inventory's or snakemake's children
would otherwise live on). Expiry is a :class:`CrosstalkError` of one line naming the command.
"""
import os
import shlex
import signal
import subprocess

from crosstalk.errors import CrosstalkError

#: Seconds a command gets to exit after SIGTERM/SIGINT before its group is killed.
GRACE = 5


def describe(argv):
    """``argv`` as a shell-quoted command line (for messages)."""
    return shlex.join(str(a) for a in argv) if isinstance(argv, (list, tuple)) else str(argv)


def timed_out(what, timeout):
    """The one-line error for a command that ran out of time (``what``: argv or a name)."""
    return CrosstalkError(f"`{describe(what)}` did not finish within {timeout:g} s")


def _end_group(proc, sig):
    """Send ``sig`` to the command's group; after GRACE seconds, SIGKILL it."""
    try:
        os.killpg(proc.pid, sig)
        proc.wait(GRACE)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:     # the leader is not reaped: the group id is still ours
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run(argv, timeout, what=None, *, input=None, capture_output=False, check=False, **kw):
    """``subprocess.run(argv, ...)`` that gives up after ``timeout`` seconds.

    On expiry the command's process group is terminated and ``CrosstalkError("`<what>` did not
    finish within N s")`` raised (``what`` defaults to the command line). ``check=True`` raises
    ``CrosstalkError`` naming the command and its exit status. Other keywords go to Popen.
    """
    if capture_output:
        kw.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    with subprocess.Popen(argv, process_group=0, **kw) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_group(proc, signal.SIGTERM)
            raise timed_out(what or argv, timeout) from None
        except BaseException:          # Ctrl-C: the terminal signals our group only
            _end_group(proc, signal.SIGINT)
            raise
    if check and proc.returncode:
        raise CrosstalkError(f"`{describe(what or argv)}` failed with exit status {proc.returncode}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
