#!/usr/bin/env python3
"""Scale benchmark of the analysis (not a test): synthesise N result rows as ReFrame run reports,
then time the Snakemake workflow (collect, every figure, the report) on them.

    .venv/bin/python workflows/benchmarks/scale.py --rows 10000 100000 1000000

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
from crosstalk.errors import CrosstalkError  # noqa: E402
from crosstalk.proc import run  # noqa: E402
from crosstalk.report import WORKFLOW, workflow_timeout  # noqa: E402
from crosstalk.specs import all_specs  # noqa: E402

CASES_PER_RUN = 2000


def case_templates():
    templates = []
    for spec in all_specs():
        test = "".join(part.title() for part in spec.name.replace("-", "_").split("_"))
        for point in spec.sweep("quick"):
            templates.append((spec, test, point))
    return templates


def synthesise(root, rows, systems=4, seed=1):
    rng = random.Random(seed)
    templates = case_templates()
    written, run = 0, 0
    while written < rows:
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


def snakemake(results, *targets):
    # Targets first: --quiet and --config take every word that follows them.
    argv = [str(Path(sys.executable).with_name("snakemake")), *targets, "-s", str(WORKFLOW),
            "-d", str(REPO_ROOT), "--cores", "2", "--quiet", "all", "--config", f"results={results}",
            "examples="]      # the synthetic rows only: the shipped example runs are not the scale
    start = time.perf_counter()
    run(argv, workflow_timeout(), "snakemake", check=True)
    return time.perf_counter() - start


def measure(rows):
    with tempfile.TemporaryDirectory(prefix="xt-scale-") as tmp:
        results = Path(tmp)
        start = time.perf_counter()
        runs = synthesise(results, rows)
        synth = time.perf_counter() - start
        collect = snakemake(results, f"{results}/table.parquet")
        rest = snakemake(results)
        figures = sorted(p.name for p in (results / "figures").glob("*.png"))
        return {"rows": rows, "runs": runs, "synthesise_s": round(synth, 2), "collect_s": round(collect, 2),
                "figures_and_reports_s": round(rest, 2), "total_s": round(collect + rest, 2),
                "figures": figures}


#: Collection phases of --collect-only, in the order they run.
PHASES = {"scratch": "from scratch (no cache)", "first": "first, into the cache",
          "unchanged": "incremental, nothing changed", "one-changed": "incremental, one run changed"}


def time_collect(phase, results):
    """One collection in this (fresh) process: prints its seconds and the process's peak RSS."""
    import resource
    from crosstalk.ingest import collect
    from crosstalk.ingestcache import CACHE_NAME
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
            samples = []
            for _ in range(repeat):
                proc = run([sys.executable, __file__, "--time-collect", phase, str(results)],
                           workflow_timeout(), f"collection ({phase})", capture_output=True, check=True,
                           text=True)
                samples.append(json.loads(proc.stdout))
            assert {s["rows"] for s in samples} == {rows}, samples
            out[phase] = {"seconds": round(statistics.median(s["seconds"] for s in samples), 3),
                          "maxrss_mib": round(statistics.median(s["maxrss_mib"] for s in samples)),
                          "imports_maxrss_mib": round(statistics.median(s["imports_maxrss_mib"] for s in samples))}
        return out


def main_collect(args):
    lines = ["| rows | runs | collection | median time (s) | peak RSS (MiB; after imports) |",
             "|---:|---:|---|---:|---:|"]
    for rows in args.rows:
        print(f"collection scale: {rows} rows, {args.repeat} processes per phase ...", flush=True)
        m = measure_collect(rows, args.repeat)
        lines += [f"| {rows:,} | {m['runs']} | {what} | {m[phase]['seconds']} | "
                  f"{m[phase]['maxrss_mib']} ({m[phase]['imports_maxrss_mib']}) |" for phase, what in PHASES.items()]
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--collect-only", action="store_true",
                        help="time the collection alone: from scratch and incremental (prints only)")
    parser.add_argument("--repeat", type=int, default=3, help="processes per phase with --collect-only")
    parser.add_argument("--time-collect", nargs=2, metavar=("PHASE", "RESULTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.time_collect:
        return time_collect(args.time_collect[0], Path(args.time_collect[1]))
    if args.collect_only:
        return main_collect(args)
    out_dir = REPO_ROOT / "results" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    measurements = []
    for rows in args.rows:
        print(f"analysis scale: {rows} rows ...", flush=True)
        m = measure(rows)
        print(f"  collect {m['collect_s']} s, figures + reports {m['figures_and_reports_s']} s", flush=True)
        measurements.append(m)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    record = {"benchmark": "analysis-scale", "date": stamp, "cores": 2, "measurements": measurements}
    (out_dir / f"analysis-scale-{stamp}.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = ["| rows | runs | collect (s) | figures + reports (s) | total (s) |", "|---:|---:|---:|---:|---:|"]
    lines += [f"| {m['rows']:,} | {m['runs']} | {m['collect_s']} | {m['figures_and_reports_s']} | {m['total_s']} |"
              for m in measurements]
    (out_dir / "analysis-scale.md").write_text(
        f"# Analysis scale benchmark ({stamp}, 2 cores)\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except CrosstalkError as err:
        sys.exit(f"scale: {err}")
