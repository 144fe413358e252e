"""Draw the report's figures in one job, redrawing only those whose rows or drawing code changed.

Every figure reads the rows of one experiment (the spec that lists it; a figure that also reads a
run's raw output finds the run by the rows' run ids). A figure's key is a hash of those rows (of
the selected systems) and of the code and paper tables that draw it. Drawings are kept in a store
(``<store>/<figure>/<key>.*``), so a report of other systems and then of the first ones again
draws nothing twice; ``<figures>/.cache/<figure>.key`` records the key shown. Snakemake removes a
job's outputs before it runs, so kept drawings are copied out rather than left in place.

The figures of a report are drawn once, for every system at once (each its own series): the
overview and each system's page show the same drawings, so the drawing does not grow with the
number of systems. The figures that changed are drawn by forked workers, one per core the job has.
"""
import hashlib
import os
import shutil
import time
from pathlib import Path

from crosstalk import REPO_ROOT
from crosstalk.analysis.derived import framed
from crosstalk.analysis.workflow import figure_experiments
from crosstalk.codedeps import code_files, files_digest
from crosstalk.forked import forked_map

SUFFIXES = ("png", "caption.txt")
#: Drawn besides when asked for (``crosstalk report --svg``).
SVG = "svg"


def figure_suffixes(svg=False):
    """The files of each drawing: PNG and caption, and SVG when asked for."""
    return (*SUFFIXES, SVG) if svg else SUFFIXES
#: A stored drawing not shown is removed once it is this old (seconds): a report of other systems
#: and, soon after, of the first ones again draws nothing twice.
UNUSED_GRACE_S = 600


def drawing_inputs():
    """What draws a figure besides its rows: the figures package and every module it imports
    (crosstalk.codedeps), the papers' tables and the specs (a figure draws its claims' effects)."""
    papers = REPO_ROOT / "results" / "papers"
    return (code_files("crosstalk.figures") + sorted(p for p in papers.rglob("*") if p.is_file())
            + sorted((REPO_ROOT / "experiments").glob("*.yaml")))


def figure_rows(perf, experiment, systems):
    rows = perf[perf.experiment == experiment]
    if systems:
        rows = rows[rows.system.isin(systems)]
    return rows


def user_platforms(perf, systems):
    """The user's platforms a report of ``systems`` (None: all) shows, sorted."""
    rows = perf[perf.origin == "user"]
    if systems:
        rows = rows[rows.system.isin(systems)]
    return sorted(rows["platform"].dropna().unique())


def rows_key(rows, code_digest):
    import pandas as pd
    digest = hashlib.sha256(code_digest.encode())
    digest.update(",".join(map(str, rows.columns)).encode())
    digest.update(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes())
    return digest.hexdigest()


#: A PNG's first 8 bytes, and its last 8: the IEND chunk's type and CRC.
PNG_HEAD, PNG_TAIL = b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82"


class _Entry:
    """One stored drawing: its files and ``.done``, written last (a drawing interrupted half-way
    is not one); with ``svg``, one kept without its SVG is drawn again."""

    def __init__(self, store, fig, key, svg=False):
        self.dir, self.fig, self.key = Path(store) / fig, fig, key
        self.suffixes = figure_suffixes(svg)

    def path(self, suffix):
        return self.dir / f"{self.key}.{suffix}"

    @property
    def done(self):
        return (self.path("done").exists() and all(self.path(suffix).exists() for suffix in self.suffixes)
                and framed(self.path("png"), PNG_HEAD, PNG_TAIL))   # a store copied in part

    def draw(self, rows, systems, platforms=()):
        from crosstalk.figures import draw  # matplotlib only in the process that draws
        from crosstalk.figures.style import assign_colours
        assign_colours(platforms)
        self.path("done").unlink(missing_ok=True)
        svg = self.path(SVG) if SVG in self.suffixes else None
        caption = draw(self.fig, rows, systems, self.path("png"), svg)
        self.path("caption.txt").write_text(caption + "\n")
        self.path("done").touch()

    def copy_to(self, out_dir):
        for suffix in self.suffixes:
            shutil.copyfile(self.path(suffix), out_dir / f"{self.fig}.{suffix}")
        if SVG not in self.suffixes:                # not asked for: no older report's SVG shown
            (out_dir / f"{self.fig}.{SVG}").unlink(missing_ok=True)
        os.utime(self.path("done"))     # in use: not pruned


def draw_figures(perf, systems, out_dir, fig_ids, progress=None, store=None, workers=1, svg=False):
    """Write ``<fig>.png/.caption.txt`` (and ``.svg`` with ``svg``) in ``out_dir`` for every id;
    returns the ids this call drew. ``store``: the drawings kept (default ``<out_dir>/.cache``);
    ``workers``: the processes that draw (forked from this one, which has read the table and
    imported matplotlib)."""
    out_dir = Path(out_dir)
    shown = out_dir / ".cache"
    shown.mkdir(parents=True, exist_ok=True)
    store = Path(store) if store else shown
    experiments, code = figure_experiments(), files_digest(drawing_inputs())
    # every figure colours the report's user platforms alike (style.assign_colours), so a drawing
    # is kept only for the same platforms
    platforms = user_platforms(perf, systems)
    code += "\n" + "\n".join(platforms)
    # the figures of one experiment read the same rows: selected and hashed once
    of_experiment = {exp: figure_rows(perf, exp, systems) for exp in {experiments[fig] for fig in fig_ids}}
    keys = {exp: rows_key(rows, code) for exp, rows in of_experiment.items()}
    rows = {fig: of_experiment[experiments[fig]] for fig in fig_ids}
    entries = {fig: _Entry(store, fig, keys[experiments[fig]], svg) for fig in fig_ids}

    def finish(fig, drew):
        entries[fig].copy_to(out_dir)
        (shown / f"{fig}.key").write_text(entries[fig].key)
        if progress:
            progress(fig, drew)

    for fig in fig_ids:
        if entries[fig].done:
            finish(fig, False)
    redrawn = [fig for fig in fig_ids if not entries[fig].done]
    for fig in redrawn:
        entries[fig].dir.mkdir(parents=True, exist_ok=True)
    if len(redrawn) > 1 and workers > 1:
        import crosstalk.figures  # noqa: F401  (imported once, before the fork)

    def draw(fig):
        entries[fig].draw(rows[fig], systems, platforms)
        return fig

    for fig in forked_map(draw, redrawn, workers):
        finish(fig, True)
    _prune(store, fig_ids, out_dir)
    return redrawn


def _prune(store, fig_ids, out_dir):
    """Remove stored drawings not shown (after UNUSED_GRACE_S), and the files an older crosstalk
    kept beside the keys."""
    for old in (out_dir / ".cache").glob("*.*"):
        if old.is_file() and old.suffix != ".key":
            old.unlink(missing_ok=True)
    for fig in fig_ids:
        key_file = out_dir / ".cache" / f"{fig}.key"
        live = {key_file.read_text()} if key_file.is_file() else set()
        for done in (store / fig).glob("*.done"):
            key = done.name.removesuffix(".done")
            if key in live or time.time() - done.stat().st_mtime < UNUSED_GRACE_S:
                continue
            for suffix in (*SUFFIXES, SVG, "done", "lock"):     # (lock: what an older crosstalk left)
                (store / fig / f"{key}.{suffix}").unlink(missing_ok=True)
