"""Draw a scope's figures in one process, redrawing only those whose rows or drawing code changed.

Every figure reads the rows of one experiment (the spec that lists it; a figure that also reads a
run's raw output finds the run by the rows' run ids). A figure's key is a hash of those rows (of
the scope's systems) and of the code and paper tables that draw it; drawings are
kept under ``<figures>/.cache/`` with their key. Snakemake removes a job's outputs before it runs,
so kept drawings are copied back rather than left in place.
"""
import hashlib
import shutil
from pathlib import Path

import pandas as pd

from crosstalk import REPO_ROOT
from crosstalk.analysis.report import figure_experiments
from crosstalk.codedeps import code_files

SUFFIXES = ("png", "svg", "caption.txt")


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


def draw_scope(perf, systems, out_dir, fig_ids, progress=None):
    """Write ``<fig>.png/.svg/.caption.txt`` in ``out_dir`` for every id; returns the ids redrawn."""
    from crosstalk.figures import draw  # matplotlib only in the process that draws

    out_dir = Path(out_dir)
    cache = out_dir / ".cache"
    cache.mkdir(parents=True, exist_ok=True)
    experiments = figure_experiments()
    code = _drawing_code_digest()
    redrawn = []
    for fig in fig_ids:
        rows = figure_rows(perf, experiments[fig], systems)
        key = rows_key(rows, code)
        kept = {s: cache / f"{fig}.{s}" for s in SUFFIXES}
        key_file = cache / f"{fig}.key"
        fresh = key_file.exists() and key_file.read_text() == key and all(
            p.exists() for p in kept.values())
        if not fresh:
            key_file.unlink(missing_ok=True)   # a drawing interrupted half-way is not kept
            caption = draw(fig, rows, systems, kept["png"], kept["svg"])
            kept["caption.txt"].write_text(caption + "\n")
            key_file.write_text(key)
            redrawn.append(fig)
        for suffix, path in kept.items():
            shutil.copyfile(path, out_dir / f"{fig}.{suffix}")
        if progress:
            progress(fig, not fresh)
    return redrawn
