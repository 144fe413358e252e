"""Incremental collection: each run directory is read once and kept as Parquet parts.

``crosstalk.analysis.collect.collect(..., cache=<results>/.collect)`` keeps, for each run directory::

    <cache>/<origin>/<system>/<run>.<key>.perf.parquet    its performance rows (PERF_COLUMNS)
    <cache>/<origin>/<system>/<run>.<key>.cases.parquet   its test cases (CASE_COLUMNS)
    <cache>/<origin>/<system>/<run>.<key>.error.json      or: why it is broken (listed every time)

``<origin>`` is ``user`` or ``example``, ``<run>`` the run directory's name and ``<key>`` a hash of
every file the rows come from and of the code that reads them (:func:`run_key`). A new, changed or
resumed run gets a new key and is read again; every other run is read from its parts. Parts of a
run no longer on disk (or of an older key) are deleted. Parts are written to a temporary name and
renamed, so an interrupted collection leaves whole parts or none; a part that cannot be read is
treated as missing (the run is read again).

The tables are those of a collection from scratch (``collect`` without a cache): the same rows in
the same order (run directories sorted, the user's then the examples', each run's rows as
``load_run`` gives them) with the same columns and dtypes. Parts hold fixed Arrow types (float64,
int64, large_string); the parts are concatenated in Arrow and converted to pandas once. A run
whose values do not fit those types is not cached (read every time), and the whole table is then
built from Python rows as from scratch.
"""
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from crosstalk import errors as _errors, userfiles
from crosstalk.analysis import ingest, write_whole
from crosstalk.errors import InputError
from crosstalk.run import runstatus as _runstatus
from crosstalk.site import hostclass as _hostclass, systemfacts as _systemfacts

#: The cache directory's name under a results directory (the workflow's default).
CACHE_NAME = ".collect"

_FLOATS = {"value", "ref_value", "ref_lower", "ref_upper"}
_INTS = {"repeat", "session", "sample", "round", "looks"}


def _schema(columns):
    return pa.schema([(c, pa.float64() if c in _FLOATS else pa.int64() if c in _INTS else pa.large_string())
                      for c in columns])


PERF_SCHEMA = _schema(ingest.PERF_COLUMNS)
CASE_SCHEMA = _schema(ingest.CASE_COLUMNS)
#: Python types a numeric column of a part may hold (``load_run`` makes them so).
_PYTHON_TYPES = {pa.float64(): {float}, pa.int64(): {int}}

_PART = re.compile(r"^(?P<run>.+)\.(?P<key>[0-9a-f]{32})\.(?P<kind>perf\.parquet|cases\.parquet|error\.json)$")

_code = None


def _code_fingerprint():
    """Hash of the modules whose code turns a run's files into rows: a change to any of them makes
    every part stale (their columns or values may differ)."""
    global _code
    if _code is None:
        h = hashlib.sha256()
        for module in (ingest, sys.modules[__name__], _hostclass, _runstatus, _errors, _systemfacts, userfiles):
            h.update(Path(module.__file__).read_bytes())
        _code = h.digest()
    return _code


def run_key(run_dir, origin):
    """The cache key of a run directory: a hash of the content of every file its rows come from
    (absent ones included as absent), its origin and name, and the ingestion code; None if a
    file cannot be read or leads out of the run through a link (that run is never cached:
    ``load_run`` reports it every time).

    Content (sha256), not size and mtime: hashing costs little beside reading the parts
    (workflows/benchmarks/scale.py: 100 000 synthetic rows are 15.6 MB of reports, hashed in
    14 ms; 1 000 000 rows, 150 MB, in about 0.15 s of an unchanged collection's 1 s; collecting
    them from scratch takes 1.4 s and 17 s), and a content key is right whatever happened to the
    files' times (copies, rsync, git checkouts, a rewrite of the same size within one mtime tick,
    a report still being written)."""
    if ingest.link_out_of(run_dir) is not None:
        return None
    h = hashlib.sha256(_code_fingerprint())
    h.update(f"{origin}\0{run_dir.name}\0".encode())
    for path in ingest.run_files(run_dir):
        h.update(f"{path.relative_to(run_dir).as_posix()}\0".encode())
        try:
            with userfiles.open_regular(path, ingest.file_kind(path)) as fp:
                h.update(hashlib.file_digest(fp, "sha256").digest())
        except userfiles.MissingFile:
            h.update(b"absent\0")
        except (OSError, InputError):     # not a regular file, too large: load_run says why
            return None
    return h.hexdigest()[:32]


def _to_arrow(rows, schema):
    """The rows as an Arrow table of ``schema``; None if a value does not fit its column's type.
    Numbers are checked here (Arrow would turn an int into a float); a string column refuses any
    other value itself (all but bytes, which JSON cannot give)."""
    for field in schema:
        if field.type != pa.large_string() and not {type(row[field.name]) for row in rows} <= _PYTHON_TYPES[field.type]:
            return None
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _read_part(path, schema):
    try:
        table = pq.read_table(path)
    except (OSError, ValueError):          # truncated or not Parquet (ArrowInvalid is a ValueError)
        return None
    return table if table.schema.equals(schema, check_metadata=False) else None


def _error_record(err, run_dir):
    """An InputError of a run, with its path relative to the run directory when inside it (the
    message is rebuilt from the run directory as found next time)."""
    prefix = str(run_dir) + os.sep
    inside = err.path.startswith(prefix)
    return {"path": err.path[len(prefix):] if inside else err.path, "inside": inside,
            "field": err.field, "problem": err.problem}


def _error_message(record, run_dir):
    path = str(run_dir) + os.sep + record["path"] if record["inside"] else record["path"]
    return str(InputError(path, record["field"], record["problem"]))


def _cached(where, run, key, kinds):
    """A run's entry from its parts: ``("error", message)`` or ``("rows", perf, cases)``; None
    if they are missing or unreadable."""
    stem = where / f"{run.name}.{key}"
    if "error.json" in kinds:
        try:
            record = json.loads(Path(f"{stem}.error.json").read_text())
            return ("error", _error_message(record, run)), [f"{stem}.error.json"]
        except (OSError, ValueError, KeyError, TypeError):
            return None, []
    if {"perf.parquet", "cases.parquet"} <= kinds:
        perf = _read_part(f"{stem}.perf.parquet", PERF_SCHEMA)
        cases = _read_part(f"{stem}.cases.parquet", CASE_SCHEMA)
        if perf is not None and cases is not None:
            return ("rows", perf, cases), [f"{stem}.perf.parquet", f"{stem}.cases.parquet"]
    return None, []


def _ingest(where, run, origin, key):
    """Read a run (``load_run``) and write its parts: its entry and the parts written. Nothing is
    written if the run changed while it was read (the next collection reads it again), if a value
    does not fit a part or if the cache cannot be written (read-only, full: the rows still count)."""
    try:
        perf, cases = ingest.load_run(run, origin)
        entry = None
    except InputError as err:
        entry, record = ("error", str(err)), _error_record(err, run)
    if entry is None:
        perf_table, case_table = _to_arrow(perf, PERF_SCHEMA), _to_arrow(cases, CASE_SCHEMA)
        if perf_table is None or case_table is None:
            return ("rows", perf, cases), []
        entry = ("rows", perf_table, case_table)
    if key is None or run_key(run, origin) != key:
        return entry, []
    stem = where / f"{run.name}.{key}"
    try:
        where.mkdir(parents=True, exist_ok=True)
        if entry[0] == "error":
            text = json.dumps(record)
            write_whole(Path(f"{stem}.error.json"), lambda tmp: tmp.write_text(text))
            return entry, [f"{stem}.error.json"]
        # Cases last: a run is cached once both are there (an interrupted pair is read again).
        write_whole(Path(f"{stem}.perf.parquet"), lambda tmp: pq.write_table(entry[1], tmp))
        write_whole(Path(f"{stem}.cases.parquet"), lambda tmp: pq.write_table(entry[2], tmp))
        return entry, [f"{stem}.perf.parquet", f"{stem}.cases.parquet"]
    except OSError:
        return entry, []


def _listing(where):
    """``{(run name, key): {kinds}}`` of the parts in a cache directory."""
    found = {}
    try:
        names = os.listdir(where)
    except OSError:
        return found
    for name in names:
        match = _PART.match(name)
        if match:
            found.setdefault((match["run"], match["key"]), set()).add(match["kind"])
    return found


_str_dtype = None


def _string_dtype():
    """The dtype pandas gives a column of strings and None built from rows (``str`` in pandas 3)."""
    global _str_dtype
    if _str_dtype is None:
        _str_dtype = pd.DataFrame([{"c": "x"}, {"c": None}], columns=["c"])["c"].dtype
    return _str_dtype


def _frame(parts, columns):
    """One DataFrame of the parts (Arrow tables, or row lists of runs that are not cached), as
    ``pd.DataFrame(rows, columns=columns)`` builds it from all their rows."""
    if parts and all(isinstance(p, pa.Table) for p in parts):
        table = pa.concat_tables(parts)
        if table.num_rows:
            df = _arrow_frame(table, columns)
            if df is not None:
                return df
    # Rows of a run that is not cached, no rows at all, or a pandas that converts Arrow otherwise.
    return _rows_frame(parts, columns)


def _arrow_frame(table, columns):
    """The table as pandas (fast: no Python object per value), None unless its dtypes are those a
    DataFrame built from the rows gets."""
    n = table.num_rows
    df = table.to_pandas()
    expected = {}
    for field in table.schema:
        if field.type == pa.large_string() and table.column(field.name).null_count == n:
            # A column of None only is an object column (of None) when built from rows.
            df[field.name] = pd.Series(np.full(n, None, dtype=object), dtype=object, copy=False)
            expected[field.name] = np.dtype(object)
        else:
            expected[field.name] = _string_dtype() if field.type == pa.large_string() else field.type.to_pandas_dtype()
    if list(df.columns) == list(columns) and all(df[c].dtype == expected[c] for c in columns):
        return df
    return None


def _rows_frame(parts, columns):
    """The DataFrame a collection from scratch builds: from every row, as Python values."""
    rows = [row for part in parts for row in (part.to_pylist() if isinstance(part, pa.Table) else part)]
    return pd.DataFrame(rows, columns=columns)


def _prune(cache, scopes, keep):
    """Delete every file of the scoped cache directories that is not a part of a run found now:
    parts of removed runs, of older keys, and temporary files of an interrupted collection."""
    for origin, systems in scopes:
        base = cache / origin
        if systems:
            dirs = [base / s for s in systems if s and s not in (".", "..") and Path(s).name == s]
        else:
            dirs = [base / d.name for d in os.scandir(base) if d.is_dir()] if base.is_dir() else []
        for where in dirs:
            try:
                entries = list(os.scandir(where))
            except OSError:
                continue
            for entry in entries:
                if entry.path in keep:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    try:
                        os.unlink(entry.path)
                    except FileNotFoundError:
                        pass
            try:
                where.rmdir()          # only if it is empty: the system's runs are all gone
            except OSError:
                pass


def collect(found, scopes, cache):
    """(perf DataFrame, cases DataFrame, one-line errors, {"read": n, "cached": n}) of the run
    directories ``found`` (``[(run_dir, origin)]``), reading only those new or changed since
    the parts in ``cache`` were written. ``scopes`` (``[(origin, systems or None)]``) are what was
    searched: parts there of runs not found are deleted (other systems' parts are left alone)."""
    cache = Path(cache)
    listings, keep = {}, set()
    perf_parts, case_parts, errors = [], [], []
    stats = {"read": 0, "cached": 0}
    for run, origin in found:
        run = Path(run)
        where = cache / origin / run.parent.parent.name
        if where not in listings:
            listings[where] = _listing(where)
        key = run_key(run, origin)
        entry, files = (_cached(where, run, key, listings[where].get((run.name, key), set()))
                        if key else (None, []))
        if entry is None:
            entry, files = _ingest(where, run, origin, key)
            stats["read"] += 1
        else:
            stats["cached"] += 1
        keep.update(files)
        if entry[0] == "error":
            errors.append(entry[1])
        else:
            perf_parts.append(entry[1])
            case_parts.append(entry[2])
    _prune(cache, scopes, keep)
    return (_frame(perf_parts, ingest.PERF_COLUMNS), _frame(case_parts, ingest.CASE_COLUMNS),
            errors, stats)
