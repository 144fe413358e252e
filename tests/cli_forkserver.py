"""A ``crosstalk`` command in a child of one process that imported its heavy libraries once.

``crosstalk compare`` spends about 1.6 of its 2.7 s importing pandas and scipy.stats, a spec check
or an inventory render most of its 0.28 s starting Python and importing PyYAML and jsonschema (a
result file's reader: pyarrow), and the bad-input corpus runs over a hundred of them. Each still
runs in a process of its own: a child forked from a forkserver that preloaded those libraries, in a
session of its own, with the case's environment, working directory, stdin from /dev/null and stdout
and stderr to files, calling the console script's function (``crosstalk.cli:main``) with the case's
argv. What it shares with the others is the interpreter's start and those imports, which read no
variable of the environment and write no file; crosstalk itself is imported in the child. Unlike
the installed script, the child ends without running atexit handlers and starts with the test
process's sys.path. A process the command leaves running is killed with its session and reported by
``wait``.
"""
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time

PRELOAD = ["pandas", "scipy.stats", "yaml", "jsonschema", "pyarrow.parquet"]
_context = []
#: multiprocessing reaps finished children in ``start`` and reads a child's exit status once:
#: threads that start and wait at once take turns, or one would read another's status as 255
_turn = threading.Lock()


def context():
    if not _context:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        _context.append(ctx)
    return _context[0]


def _command(argv, env, cwd, stdout, stderr):
    os.setsid()                        # as subprocess's start_new_session
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None            # TMPDIR is the case's
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, path in ((1, stdout), (2, stderr)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    sys.argv = list(argv)
    from crosstalk.cli import main
    sys.exit(main(list(argv[1:])))


def start(argv, env, cwd, stdout, stderr):
    """The started child (a multiprocessing Process), for ``wait``."""
    with _turn:
        proc = context().Process(target=_command, args=(list(argv), dict(env), str(cwd), str(stdout), str(stderr)))
        proc.start()
    return proc


def wait(proc, limit):
    """``(exit status, note)``: the status as subprocess gives it (negative for a signal), after at
    most ``limit`` seconds; the child's session is killed then, and also if the command left a
    process running in it, which the note says."""
    deadline = time.monotonic() + limit
    while True:
        with _turn:
            code = proc.exitcode
        if code is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    try:
        os.killpg(proc.pid, signal.SIGKILL)     # its session's group: whatever is still in it
        left = True
    except ProcessLookupError:
        left = False
    if code is None:
        proc.join()
        return proc.exitcode, f"\n(test: killed after the time limit of {limit} s)"
    return code, "\n(test: a process the command started was still running)" if left else ""


def run(argv, env, cwd, work, limit):
    """``(exit status, stdout, stderr)`` of ``argv`` run forked, its output kept in ``work``'s
    files ``stdout`` and ``stderr``; ``wait``'s note, if any, ends stderr."""
    stdout, stderr = work / "stdout", work / "stderr"
    status, note = wait(start(argv, env, cwd, stdout, stderr), limit)
    return status, stdout.read_text(errors="replace"), stderr.read_text(errors="replace") + note
