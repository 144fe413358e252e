#!/usr/bin/env python3
"""Scale benchmark of the analysis (not a test): synthesise N result rows as ReFrame run reports,
then time the Snakemake workflow (collect, every figure, the report) on them.

    .venv/bin/python workflows/benchmarks/scale.py --rows 10000 100000 1000000 [--repeat 3]

Each size: the median of ``--repeat`` reports from scratch; for ``--add-run-to`` rows (100 000)
also one new run added on top, ``--repeat`` times: a run of every experiment (as the quick suite
makes), then a run of STREAM alone (as re-running one spec makes).

Writes results/bench/analysis-scale-<timestamp>.json and results/bench/analysis-scale.md.
Rows are shaped like the suite's: every spec's metrics over its quick sweep, spread over systems,
runs and repeats, with values drawn from a seeded log-normal around 1000.

    .venv/bin/python workflows/benchmarks/scale.py --collect-only --rows 100000 [--repeat 3]

times the collection alone instead (prints, writes nothing): from scratch, the first collection
into the run cache (results/.collect), an unchanged one and one after a run changed; the median of
``--repeat`` fresh processes each, with their peak memory (ru_maxrss).
"""
import argparse
import datetime as dt
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from crosstalk import REPO_ROOT  # noqa: E402
from crosstalk.analysis.workflow import WORKFLOW, workflow_timeout  # noqa: E402
from crosstalk.errors import CrosstalkError  # noqa: E402
from crosstalk.proc import run  # noqa: E402
from crosstalk.specs import all_specs  # noqa: E402

CASES_PER_RUN = 2000


def case_templates(experiment=None):
    """(spec, test name, sweep point) of every quick case, or of one experiment's."""
    templates = []
    for spec in all_specs():
        if experiment and spec.name != experiment:
            continue
        test = "".join(part.title() for part in spec.name.replace("-", "_").split("_"))
        for point in spec.sweep("quick"):
            templates.append((spec, test, point))
    return templates


#: Systems the synthetic runs are spread over (one page each, besides the overview).
SYSTEMS = 4


def synthesise(root, rows, systems=SYSTEMS, seed=1, first_run=0, max_runs=None, experiment=None):
    """Runs numbered from ``first_run`` holding ``rows`` rows in all (or ``max_runs`` full runs),
    of every experiment or of ``experiment`` alone; returns the next run number."""
    rng = random.Random(seed + first_run)
    templates = case_templates(experiment)
    written, run = 0, first_run
    while written < rows and (max_runs is None or run < first_run + max_runs):
        system = f"sys{run % systems}"
        run_id = f"20261122T{run:06d}Z-synthetic"
        run_dir = root / system / "runs" / run_id
        run_dir.mkdir(parents=True)
        cases = []
        for i in range(CASES_PER_RUN):
            if written >= rows:
                break
            spec, test, point = templates[i % len(templates)]
            repeat = i // len(templates)
            params = {**point, "repeat": repeat}
            display = " ".join([test] + [f"%{k}={v}" for k, v in params.items()])
            perf = {}
            for metric in spec.data["metrics"]:
                if written >= rows:
                    break
                perf[f"{system}:default:{metric['name']}"] = [rng.lognormvariate(6.9, 0.2), 0, None, None,
                                                                metric["unit"], "pass"]
                written += 1
            cases.append({"name": display, "display_name": display, "system": system,
                          "partition": "default", "environ": "gnu-openmpi", "result": "pass",
                          "fixture": False, "spec_name": spec.name, "hashcode": f"{i:08x}",
                          "job_completion_time": "2026-11-22T00:00:00+00:00", "job_nodelist": ["n1"],
                          "perfvalues": perf, **params})
        report = {"session_info": {"time_start": "20261122T000000+0000", "num_cases": len(cases)},
                  "runs": [{"testcases": cases}]}
        (run_dir / "report.json").write_text(json.dumps(report))
        (run_dir / "provenance.json").write_text(json.dumps({"run_id": run_id, "system": system,
                                                            "profile": "quick"}))
        run += 1
    return run


def snakemake(results):
    """Seconds of one Snakemake run of the whole workflow on ``results``."""
    argv = [str(Path(sys.executable).with_name("snakemake")), "-s", str(WORKFLOW),
            "-d", str(REPO_ROOT), "--cores", "2", "--quiet", "all", "--config", f"results={results}",
            "examples="]      # the synthetic rows only: the shipped example runs are not the scale
    start = time.perf_counter()
    run(argv, workflow_timeout(), "snakemake", check=True)
    return time.perf_counter() - start


def time_report(results):
    """One report in this (fresh) process, as ``crosstalk report`` makes it (one Snakemake run: a
    second one to time the collection apart cost another start-up, about 2 s at 100 000 rows):
    prints its seconds, those until the overview's table was written (``collect_s``: the
    collection, with Snakemake's start-up), and the peak RSS of the workflow's processes."""
    import resource
    started = time.time()
    total = snakemake(results)
    table = Path(results) / "table.parquet"
    collect = max(0.0, table.stat().st_mtime - started) if table.exists() else 0.0
    print(json.dumps({"collect_s": collect, "total_s": total,
                      "maxrss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))


def in_fresh_process(what, *args):
    """The JSON line this script prints when run with ``args`` (a --time-* mode) in a new process,
    so that peak memory and imports belong to that one measurement."""
    proc = run([sys.executable, __file__, *args], workflow_timeout(), what, capture_output=True,
               check=True, text=True)
    return json.loads(proc.stdout)


def median_of(samples, digits=2):
    return {key: round(statistics.median(s[key] for s in samples), digits) for key in samples[0]}


#: Targets of the analysis at scale (issue "Analysis at scale"): shown beside the measurements.
TARGETS = {("scratch", 100_000): 20, ("one-new-run", 100_000): 5, ("scratch", 1_000_000): 60,
           ("scratch-one-system", 100_000): 20}


#: Runs added on top of ``--add-run-to`` rows: scenario -> the experiment the run holds (None: all).
ADDED_RUNS = {"one-new-run": None, "one-new-stream-run": "stream"}


def measure_one_system(rows, repeat):
    """Median of ``repeat`` reports from scratch of ``rows`` rows of one system (the overview and
    the system's page show the same rows: a user's results with one machine)."""
    samples = []
    for attempt in range(repeat):
        with tempfile.TemporaryDirectory(prefix="xt-scale-") as tmp:
            runs = synthesise(Path(tmp), rows, systems=1)
            samples.append(in_fresh_process("timed report", "--time-report", tmp))
            print(f"  {rows:,} rows of one system from scratch ({attempt + 1}/{repeat}): "
                  f"{samples[-1]['total_s']:.1f} s", flush=True)
    return [{"scenario": "scratch-one-system", "rows": rows, "runs": runs, **median_of(samples)}]


def measure(rows, repeat, add_runs):
    """Median of ``repeat`` reports from scratch of ``rows`` rows (each in a fresh directory); with
    ``add_runs``, then for each of ADDED_RUNS one such run added ``repeat`` times to the last of
    them, each report timed."""
    scratch, added = [], {scenario: [] for scenario in ADDED_RUNS}
    for attempt in range(repeat):
        with tempfile.TemporaryDirectory(prefix="xt-scale-") as tmp:
            results = Path(tmp)
            runs = synthesise(results, rows)
            first_runs = runs
            scratch.append(in_fresh_process("timed report", "--time-report", str(results)))
            print(f"  {rows:,} rows from scratch ({attempt + 1}/{repeat}): "
                  f"{scratch[-1]['total_s']:.1f} s", flush=True)
            if add_runs and attempt == repeat - 1:
                for scenario, experiment in ADDED_RUNS.items():
                    for _ in range(repeat):
                        runs = synthesise(results, rows, first_run=runs, max_runs=1, experiment=experiment)
                        added[scenario].append(in_fresh_process("timed report", "--time-report",
                                                                str(results)))
                        print(f"  {scenario}: {added[scenario][-1]['total_s']:.1f} s", flush=True)
    out = [{"scenario": "scratch", "rows": rows, "runs": first_runs, **median_of(scratch)}]
    out += [{"scenario": scenario, "rows": rows, "runs": f"{first_runs} + 1", **median_of(samples)}
            for scenario, samples in added.items() if samples]
    return out


#: Collection phases of --collect-only, in the order they run.
PHASES = {"scratch": "from scratch (no cache)", "first": "first, into the cache",
          "unchanged": "incremental, nothing changed", "one-changed": "incremental, one run changed"}


def time_collect(phase, results):
    """One collection in this (fresh) process: prints its seconds and the process's peak RSS."""
    import resource

    from crosstalk.analysis.collect import collect
    from crosstalk.analysis.ingestcache import CACHE_NAME
    cache = results / CACHE_NAME
    if phase == "first":
        shutil.rmtree(cache, ignore_errors=True)
    if phase == "one-changed":
        report = min(results.glob("*/runs/*/report.json"))
        with open(report, "a") as fp:
            fp.write(" ")           # still the same JSON, but new content: that run is read again
    imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    perf, cases, errors = collect(results, cache=None if phase == "scratch" else cache)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rows": len(perf), "errors": len(errors),
                      "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "imports_maxrss_mib": imported / 1024}))


def measure_collect(rows, repeat):
    with tempfile.TemporaryDirectory(prefix="xt-scale-") as tmp:
        results = Path(tmp)
        runs = synthesise(results, rows)
        out = {"rows": rows, "runs": runs}
        for phase in PHASES:
            samples = [in_fresh_process(f"collection ({phase})", "--time-collect", phase, str(results))
                       for _ in range(repeat)]
            assert {s["rows"] for s in samples} == {rows}, samples
            out[phase] = median_of(samples, 3)
        return out


def main_collect(args):
    lines = ["| rows | runs | collection | median time (s) | peak RSS (MiB; after imports) |",
             "|---:|---:|---|---:|---:|"]
    for rows in args.rows:
        print(f"collection scale: {rows} rows, {args.repeat} processes per phase ...", flush=True)
        m = measure_collect(rows, args.repeat)
        lines += [f"| {rows:,} | {m['runs']} | {what} | {m[phase]['seconds']} | "
                  f"{m[phase]['maxrss_mib']:.0f} ({m[phase]['imports_maxrss_mib']:.0f}) |"
                  for phase, what in PHASES.items()]
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--collect-only", action="store_true",
                        help="time the collection alone: from scratch and incremental (prints only)")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per size (the median is kept)")
    parser.add_argument("--add-run-to", type=int, default=100_000, metavar="ROWS",
                        help="also time one new run added to this many rows (default 100000)")
    parser.add_argument("--time-collect", nargs=2, metavar=("PHASE", "RESULTS"), help=argparse.SUPPRESS)
    parser.add_argument("--time-report", metavar="RESULTS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.time_collect:
        return time_collect(args.time_collect[0], Path(args.time_collect[1]))
    if args.time_report:
        return time_report(Path(args.time_report))
    if args.collect_only:
        return main_collect(args)
    out_dir = REPO_ROOT / "results" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    measurements = []
    for rows in args.rows:
        print(f"analysis scale: {rows:,} rows, medians of {args.repeat} ...", flush=True)
        measurements += measure(rows, args.repeat, rows == args.add_run_to)
        if rows == args.add_run_to:
            measurements += measure_one_system(rows, args.repeat)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    record = {"benchmark": "analysis-scale", "date": stamp, "cores": 2, "repeat": args.repeat,
              "measurements": measurements}
    (out_dir / f"analysis-scale-{stamp}.json").write_text(json.dumps(record, indent=2) + "\n")
    print(write_summary(record, out_dir))


def write_summary(record, out_dir):
    """results/bench/analysis-scale.md from a record of measurements; returns its table."""
    what = {"scratch": f"from scratch ({SYSTEMS} systems)", "one-new-run": "one new run on top (every experiment)",
            "one-new-stream-run": "one new run on top (STREAM only)",
            "scratch-one-system": "from scratch, one system (its page and the overview show the same rows)"}
    lines = ["| rows | runs | report | total (s) | target (s) | overview table written (s) | peak RSS (MiB) |",
             "|---:|---:|---|---:|---:|---:|---:|"]
    for m in record["measurements"]:
        target = TARGETS.get((m["scenario"], m["rows"]))
        verdict = "-" if target is None else f"{target} ({'met' if m['total_s'] <= target else 'missed'})"
        lines.append(f"| {m['rows']:,} | {m['runs']} | {what[m['scenario']]} | {m['total_s']} | {verdict} | "
                     f"{m['collect_s']} | {m['maxrss_mib']:.0f} |")
    (out_dir / "analysis-scale.md").write_text(
        f"# Analysis scale benchmark ({record['date']}, {record['cores']} cores)\n\nMedians of "
        f"{record['repeat']} reports, each as `crosstalk report` makes it: one Snakemake run (collection into "
        f"the run cache, then the figures beside the verdicts, then the pages). The figures are drawn once "
        f"for every system and the claims judged once; a new run redraws the figures of the experiments it "
        f"holds and judges again the platform it ran on (each platform's verdicts are kept). The overview's "
        f"table is written when the collection ends. Peak RSS is the largest process of the workflow.\n\n"
        + "\n".join(lines) + "\n")
    return "\n".join(lines)

if __name__ == "__main__":
    try:
        main()
    except CrosstalkError as err:
        sys.exit(f"scale: {err}")
