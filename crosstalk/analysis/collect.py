"""Collection: every run found under a results directory (and the shipped examples), as one
performance table and one table of test cases, read from scratch or through the per-run cache
(crosstalk.analysis.ingestcache)."""
from pathlib import Path

import pandas as pd

from crosstalk.analysis import ingestcache
from crosstalk.analysis.ingest import CASE_COLUMNS, PERF_COLUMNS, load_run, run_dirs
from crosstalk.errors import InputError


def collect(results_dir, systems=None, examples_dir=None, cache=None):
    """(perf DataFrame, cases DataFrame, list of one-line errors) for all runs found: the user's
    under ``results_dir``, the shipped examples under ``examples_dir`` (same layout), labelled.

    ``cache``: a directory (``crosstalk report`` passes ``<results>/.collect``) keeping each run's
    rows, so that only new or changed runs are read (``crosstalk.analysis.ingestcache``; same tables).
    None (the default): every run is read and nothing is written, for callers that look at a
    few runs (compare)."""
    roots = [(Path(results_dir), "user")] + ([(Path(examples_dir), "example")] if examples_dir else [])
    found = [(d, origin) for root, origin in roots for d in run_dirs(root, systems)]
    if cache is not None:
        scopes = [(origin, list(systems) if systems else None) for _, origin in roots]
        return ingestcache.collect(found, scopes, cache)[:3]
    perf, cases, errors = [], [], []
    for run_dir, origin in found:
        try:
            p, c = load_run(run_dir, origin)
        except InputError as err:
            errors.append(str(err))
            continue
        perf += p
        cases += c
    perf_df = pd.DataFrame(perf, columns=PERF_COLUMNS)
    case_df = pd.DataFrame(cases, columns=CASE_COLUMNS)
    return perf_df, case_df, errors
