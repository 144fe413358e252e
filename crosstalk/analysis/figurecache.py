"""Draw a scope's figures in one process, redrawing only those whose rows or drawing code changed.

Every figure reads the rows of one experiment (the spec that lists it; a figure that also reads a
run's raw output finds the run by the rows' run ids). A figure's key is a hash of those rows (of
the scope's systems) and of the code and paper tables that draw it; a figure is a function of its
rows alone, so scopes whose rows are the same share one drawing. Drawings are kept in a store
shared by the scopes (``<store>/<figure>/<key>.*``); each scope records the key it shows in
``<figures>/.cache/<figure>.key``. Snakemake removes a job's outputs before it runs, so kept
drawings are copied out rather than left in place.

Scopes drawn at the same time (Snakemake runs the overview's and a system's figure jobs side by
side) split the work: a figure another job is drawing is left for later, then waited for and
copied, never drawn twice.
"""
import fcntl
import hashlib
import os
import shutil
import time
from pathlib import Path

import pandas as pd

from crosstalk import REPO_ROOT
from crosstalk.analysis.report import figure_experiments
from crosstalk.codedeps import code_files

SUFFIXES = ("png", "svg", "caption.txt")
#: A stored drawing no scope shows is removed once it is this old (seconds): a drawing that a
#: job running beside this one has just made, and not yet recorded as shown, stays.
UNUSED_GRACE_S = 600


def drawing_inputs():
    """What draws a figure besides its rows: the figures package and every module it imports
    (crosstalk.codedeps), and the papers' tables."""
    papers = REPO_ROOT / "results" / "papers"
    return code_files("crosstalk.figures") + sorted(p for p in papers.rglob("*") if p.is_file())


def _drawing_code_digest():
    digest = hashlib.sha256()
    for path in drawing_inputs():
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def figure_rows(perf, experiment, systems):
    rows = perf[perf.experiment == experiment]
    if systems:
        rows = rows[rows.system.isin(systems)]
    return rows


def rows_key(rows, code_digest):
    digest = hashlib.sha256(code_digest.encode())
    digest.update(",".join(map(str, rows.columns)).encode())
    digest.update(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes())
    return digest.hexdigest()


class _Entry:
    """One stored drawing: its three files and ``.done``, written last (a drawing interrupted
    half-way is not one)."""

    def __init__(self, store, fig, key):
        self.dir, self.fig, self.key = Path(store) / fig, fig, key

    def path(self, suffix):
        return self.dir / f"{self.key}.{suffix}"

    @property
    def done(self):
        return self.path("done").exists()

    def draw(self, rows, systems):
        from crosstalk.figures import draw  # matplotlib only in the process that draws
        self.path("done").unlink(missing_ok=True)
        caption = draw(self.fig, rows, systems, self.path("png"), self.path("svg"))
        self.path("caption.txt").write_text(caption + "\n")
        self.path("done").touch()

    def copy_to(self, out_dir):
        for suffix in SUFFIXES:
            shutil.copyfile(self.path(suffix), out_dir / f"{self.fig}.{suffix}")
        os.utime(self.path("done"))     # in use: not pruned


def _lock(entry, wait):
    """The entry's lock file, locked (``wait``: until the job holding it lets go), or None."""
    entry.dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(entry.path("lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def draw_scope(perf, systems, out_dir, fig_ids, progress=None, store=None, peers=()):
    """Write ``<fig>.png/.svg/.caption.txt`` in ``out_dir`` for every id; returns the ids this
    call drew. ``store``: the drawings shared with other scopes (default ``<out_dir>/.cache``);
    ``peers``: the other scopes' figure directories, whose drawings are kept."""
    out_dir = Path(out_dir)
    shown = out_dir / ".cache"
    shown.mkdir(parents=True, exist_ok=True)
    store = Path(store) if store else shown
    experiments, code = figure_experiments(), _drawing_code_digest()
    entries = [_Entry(store, fig, rows_key(figure_rows(perf, experiments[fig], systems), code))
               for fig in fig_ids]
    redrawn = []

    def finish(entry, drew):
        entry.copy_to(out_dir)
        (shown / f"{entry.fig}.key").write_text(entry.key)
        if progress:
            progress(entry.fig, drew)

    def settle(entry, wait):
        """Show ``entry``, drawing it unless it is stored; False: another job is drawing it."""
        fd = None if entry.done else _lock(entry, wait)
        if fd is None and not entry.done:
            return False
        try:
            drew = not entry.done
            if drew:
                entry.draw(figure_rows(perf, experiments[entry.fig], systems), systems)
                redrawn.append(entry.fig)
            finish(entry, drew)
        finally:
            if fd is not None:
                os.close(fd)
        return True

    later = [entry for entry in entries if not settle(entry, wait=False)]
    for entry in later:
        settle(entry, wait=True)
    _prune(store, fig_ids, [out_dir, *map(Path, peers)])
    return redrawn


def _prune(store, fig_ids, scopes):
    """Remove stored drawings that no scope shows (after UNUSED_GRACE_S), and the files an older
    crosstalk kept beside the keys."""
    for scope in scopes:
        for old in (scope / ".cache").glob("*.*"):
            if old.is_file() and old.suffix != ".key":
                old.unlink(missing_ok=True)
    for fig in fig_ids:
        live = {(scope / ".cache" / f"{fig}.key").read_text() for scope in scopes
                if (scope / ".cache" / f"{fig}.key").is_file()}
        for done in (store / fig).glob("*.done"):
            key = done.name.removesuffix(".done")
            if key in live or time.time() - done.stat().st_mtime < UNUSED_GRACE_S:
                continue
            for suffix in (*SUFFIXES, "done", "lock"):
                (store / fig / f"{key}.{suffix}").unlink(missing_ok=True)
