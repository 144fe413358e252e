"""``crosstalk refs calibrate``: write a system's ReFrame references from its measured runs.

References are per system **and host class** (``crosstalk.site.hostclass``):
``reframe-tests/references/<system>/<host-class>.yaml``, chosen at run time for the host the run is
on; a real cluster with one node type may keep one ``<system>.yaml`` for every host class
(``--system-wide``). With neither, the run is in explore mode. Each file is in ReFrame 4.10's
external-reference format, indexed by partition and the test's parameters (repeats pooled). Each
reference is the median of the measured values; the tolerated regression is
``max(min_margin, k * robust CV, 1.5 * worst seen)``
(robust CV = 1.4826 x MAD / median; worst seen = the largest relative deviation from the median among
the calibration values, so a reference is never tighter than the spread its own runs showed: a few
runs underestimate heavy tails). One-sided: only the direction the spec calls worse fails.
The runs used are recorded in the file under ``crosstalk_calibration``.
"""
import datetime as dt
import json
import re
from pathlib import Path

import yaml

from crosstalk import REPO_ROOT, examples_root, references_dir, results_root, userfiles
from crosstalk.analysis import tell_skipped
from crosstalk.argtypes import SYSTEM_NAME, number
from crosstalk.errors import InputError

# numpy, pandas and the specs are imported where they are used: `crosstalk run` imports this module
# and a refused argument must not wait for them (about 1 s).

DEFAULT_K = 3.0
DEFAULT_MIN_MARGIN = 0.05
#: A reference tolerates at least this multiple of the worst deviation seen during calibration.
WORST_SEEN_FACTOR = 1.5
#: With a single value there is no spread to learn from.
SINGLE_VALUE_MARGIN = 0.15
#: A run id (``crosstalk run`` makes ``20261122T035204Z-e5d98537``): a name, never a path.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def calibrate_command(system, run_ids):
    return f"crosstalk refs calibrate --system {system} --runs {' '.join(run_ids)} [more run ids]"


def tolerance(values, k=DEFAULT_K, min_margin=DEFAULT_MIN_MARGIN):
    """Relative tolerance from the run-to-run spread of ``values``."""
    import numpy as np
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return max(min_margin, SINGLE_VALUE_MARGIN)
    median = np.median(values)
    if not median:
        return float(min_margin)
    deviation = np.abs(values - median) / abs(median)
    robust_cv = 1.4826 * np.median(deviation)
    return float(max(min_margin, k * robust_cv, WORST_SEEN_FACTOR * deviation.max()))


class _NoAliases(yaml.SafeDumper):
    """Spell repeated blocks out: the file is read by people, not only by ReFrame."""

    def ignore_aliases(self, data):
        return True


def thresholds(reference, tol, better):
    """ReFrame's (lower, upper) relative thresholds: one-sided in the worse direction. ReFrame
    accepts a lower threshold in [-1, 0] for a positive reference (-1 = down to zero), in
    [-inf, 0] for a negative one; the upper one is unbounded for a positive reference, <= 1 else."""
    if better == "higher":
        return (-min(tol, 1.0) if reference >= 0 else -tol), None
    return None, (tol if reference >= 0 else min(tol, 1.0))


def _run_rows(run_dir):
    """A run's values as ReFrame checks them against a reference (a case's rounds count once,
    as their median); InputError for a broken run or one that recorded no hardware."""
    from crosstalk.analysis.ingest import PERF_COLUMNS, load_run, reported
    perf, _ = load_run(run_dir)
    import pandas as pd  # after the run is read: a broken run is one line at once
    perf = reported(pd.DataFrame(perf, columns=PERF_COLUMNS)).to_dict("records")
    if any(r["host_class"] == "unknown" for r in perf):
        raise InputError(Path(run_dir) / "provenance.json", "host_class",
                         "missing: the run recorded no hardware, so no host would match its "
                         "references (runs of `crosstalk run` record it)")
    return perf


def calibrate(system, run_dirs, k=DEFAULT_K, min_margin=DEFAULT_MIN_MARGIN, out_dir=None,
              system_wide=False, skipped=None):
    """Write one reference file per host class found in ``run_dirs`` (runs of different hardware
    are never pooled); ``system_wide`` writes ``<system>.yaml`` from runs of one host class.
    ``skipped``: a list that takes the InputError of each broken run, left out (without it, the
    first one is raised); if every run is broken, the last is raised instead."""
    rows = []
    for run_dir in run_dirs:
        try:
            perf = _run_rows(run_dir)
        except InputError as err:
            if skipped is None:
                raise
            skipped.append(err)
            continue
        rows += [dict(r, run_dir=run_dir) for r in perf if r["system"] == system]
    if not rows and skipped:
        raise skipped.pop()
    if not rows:
        raise InputError("--runs", None, f"no performance values of system {system!r} in those runs")
    classes = sorted({r["host_class"] for r in rows})
    if system_wide and len(classes) > 1:
        raise InputError("--runs", None, f"runs of {len(classes)} host classes ({', '.join(classes)}): "
                                         f"a system-wide file needs runs of one node type")
    out_dir = Path(out_dir or references_dir())
    written = []
    for host_class in classes:
        target = out_dir / f"{system}.yaml" if system_wide else out_dir / system / f"{host_class}.yaml"
        class_rows = [r for r in rows if r["host_class"] == host_class]
        class_runs = sorted({str(r["run_dir"]) for r in class_rows})
        written.append(_write_references(system, class_rows, class_runs, target, k, min_margin))
    return written


def _write_references(system, rows, run_dirs, out, k, min_margin):
    import numpy as np

    from crosstalk.specs import better_direction
    groups = {}
    for r in rows:
        params = {k_: v for k_, v in json.loads(r["params"]).items() if k_ != "repeat"}
        # per environment too: each MPI implementation gets its own reference (ReFrame's $environ)
        key = (r["test"], f"{r['system']}:{r['partition']}", r["environ"], tuple(sorted(params.items())),
               r["metric"])
        groups.setdefault(key, {"values": [], "unit": r["unit"], "experiment": r["experiment"]})
        groups[key]["values"].append(r["value"])

    try:
        existing = userfiles.load_yaml(out, "table")
    except userfiles.MissingFile:
        existing = {}
    if existing is not None and not isinstance(existing, dict):
        raise InputError(out, None, "not a ReFrame references file (a mapping)")
    better_of = better_direction()
    tests = {}
    for (test, partition, environ, params, metric), g in sorted(groups.items(), key=lambda kv: str(kv[0])):
        values = [v for v in g["values"] if np.isfinite(v)]
        if not values:
            continue
        tol = round(tolerance(values, k, min_margin), 4)
        better = better_of(g["experiment"], metric)
        ref = [float(f"{np.median(values):.6g}"), *thresholds(float(np.median(values)), tol, better), g["unit"]]
        entry = tests.setdefault(test, {"$index": ["$partition", "$environ", *[p for p, _ in params]]})
        node = entry.setdefault(partition, {}).setdefault(environ, {})
        for _, value in params:
            node = node.setdefault(value, {})
        node[metric] = ref
    calibration = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "runs": sorted(str(Path(d).resolve().relative_to(REPO_ROOT)) if Path(d).resolve().is_relative_to(REPO_ROOT)
                       else str(d) for d in run_dirs),
        "method": f"median; one-sided tolerance max({min_margin}, {k} x 1.4826 MAD/median, "
                  f"{WORST_SEEN_FACTOR} x worst relative deviation seen), "
                  f"max({min_margin}, {SINGLE_VALUE_MARGIN}) for single values",
    }
    values_per_reference = {key[0]: 0 for key in groups}
    for key, g in groups.items():
        values_per_reference[key[0]] = max(values_per_reference[key[0]], len(g["values"]))
    merged = {k_: v for k_, v in (existing or {}).items() if k_ not in tests and k_ != "crosstalk_calibration"}
    merged.update(tests)
    previous = (existing or {}).get("crosstalk_calibration", {})
    merged["crosstalk_calibration"] = {
        **previous, **{t: {**calibration, "values_per_reference": values_per_reference[t]} for t in tests}}
    out.parent.mkdir(parents=True, exist_ok=True)
    host = rows[0]
    header = (f"# ReFrame references of system '{system}' (external $ref file), written by\n"
              f"# `crosstalk refs calibrate` from measured runs: see crosstalk_calibration.\n"
              f"# Host class {host['host_class']}: {host['host_label']}\n")
    out.write_text(header + yaml.dump(merged, Dumper=_NoAliases, sort_keys=False, width=100))
    return out


def _run_dir(system, item):
    """A run directory given as a run id of the user's runs or the shipped examples, or as a path
    inside one of them (never elsewhere: run ids are names, like system names)."""
    if "/" not in item and (not RUN_ID.match(item) or ".." in item):
        raise InputError("--runs", None, f"{item!r} is not a run id (give a run id or a path with '/')")
    roots = (results_root(), examples_root())
    if "/" in item and not any(Path(item).resolve().is_relative_to(r.resolve()) for r in roots):
        raise InputError("--runs", None, f"{item!r} is outside the results ({roots[0]}) and the shipped "
                                         f"examples: give a run id or a run directory under them")
    candidates = ([Path(item)] if "/" in item else
                  [root / system / "runs" / item for root in roots])
    for path in candidates:
        if path.is_dir():
            return path
    raise InputError("--runs", None, f"no run directory {item!r} (a run id of system {system!r} "
                                     f"or a path)")


def _cmd_calibrate(args):
    if not SYSTEM_NAME.match(args.system):
        raise InputError("--system", None, f"{args.system!r} is not a system name")
    runs = [_run_dir(args.system, item) for item in args.runs]
    skipped = []            # the runs asked for by name that are broken: exit status 2
    try:
        written = calibrate(args.system, runs, args.k, args.min_margin, system_wide=args.system_wide,
                            skipped=skipped)
    finally:
        tell_skipped(skipped)
    for out in written:
        print(out)
    return 2 if skipped else 0


def register(subparsers):
    refs = subparsers.add_parser("refs", help="manage per-system performance references")
    sub = refs.add_subparsers(dest="refs_command", required=True, metavar="ACTION")
    p = sub.add_parser("calibrate", help="write references/<system>.yaml from measured runs")
    p.add_argument("--system", "-s", required=True)
    p.add_argument("--runs", nargs="+", required=True, help="run ids or run directories")
    p.add_argument("--k", type=number(above=0), default=DEFAULT_K,
                   help="tolerance in robust CVs (default 3)")
    p.add_argument("--min-margin", type=number(minimum=0), default=DEFAULT_MIN_MARGIN,
                   help="smallest tolerated relative regression (default 0.05)")
    p.add_argument("--system-wide", action="store_true",
                   help="write references/<system>.yaml for every host class (one node type)")
    p.set_defaults(func=_cmd_calibrate)
