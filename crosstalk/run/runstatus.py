"""A run's state across its attempts: ``status.json`` in the run directory.

``state`` is ``running``, ``finished`` (ReFrame exited 0), ``failed`` (some case failed) or
``interrupted`` (stopped by a signal or its time limit; ``crosstalk run --resume <run-id>``
continues it). Each
attempt (the first run, then each resume) is listed with its partitions, times and exit status.
"""
import datetime as dt
import json
import os
from pathlib import Path

from crosstalk import userfiles
from crosstalk.errors import InputError

STATES = ("running", "finished", "failed", "interrupted")


def _now():
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def read(run_dir):
    """The run's status; runs older than ``status.json`` are derived from their ``exit_status``
    (``unknown`` without one)."""
    path = Path(run_dir) / "status.json"
    try:
        status = userfiles.load_json(path, "provenance")
        if isinstance(status, dict) and status.get("state") in STATES:
            return status
    except InputError:
        pass
    try:
        code = int(userfiles.read_text(Path(run_dir) / "exit_status", "provenance"))
    except (InputError, ValueError):
        return {"state": "unknown", "attempts": []}
    return {"state": "finished" if code == 0 else "failed", "attempts": []}


def _write(run_dir, status):
    path = Path(run_dir) / "status.json"
    tmp = path.with_name(f".status.json.{os.getpid()}")
    tmp.write_text(json.dumps(status, indent=2) + "\n")
    os.replace(tmp, path)


def begin_attempt(run_dir, partitions):
    """Record a new attempt as running; returns its number (1 for the first run)."""
    status = read(run_dir)
    attempts = list(status.get("attempts", []))
    number = len(attempts) + 1
    attempts.append({"attempt": number, "partitions": list(partitions), "started": _now()})
    _write(run_dir, {"state": "running", "attempts": attempts})
    return number


def end_attempt(run_dir, number, outcome, keep_failed=False):
    """Record how attempt ``number`` ended (a ``crosstalk.run.supervise.Outcome``); the run's state.
    ``keep_failed``: the attempt ran none of the failed cases again (a second stage), so a failed
    run stays failed."""
    status = read(run_dir)
    # the state the run had before this attempt: the previous attempt's (begin_attempt set "running")
    before = [a for a in status["attempts"] if a["attempt"] == number - 1]
    failed_before = bool(before) and before[0].get("state") == "failed"
    exit_status = outcome.exit_status
    state = "interrupted" if outcome.stopped else ("finished" if exit_status == 0 else "failed")
    for attempt in status["attempts"]:
        if attempt["attempt"] == number:
            attempt.update(finished=_now(), exit=exit_status, state=state)
            if outcome.interrupted_by:
                attempt["signal"] = outcome.interrupted_by
            if outcome.timed_out:
                attempt["timed_out"] = True
    if keep_failed and failed_before and state == "finished":
        state, exit_status = "failed", int((Path(run_dir) / "exit_status").read_text())
    _write(run_dir, {"state": state, "attempts": status["attempts"]})
    (Path(run_dir) / "exit_status").write_text(f"{exit_status}\n")
    return state
