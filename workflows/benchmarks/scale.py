#!/usr/bin/env python3
"""Scale benchmark of the analysis (not a test): synthesise N result rows as ReFrame run reports,
then time the Snakemake workflow (collect, every figure, the report) on them.

    .venv/bin/python workflows/benchmarks/scale.py --rows 10000 100000 1000000

Writes results/bench/analysis-scale-<timestamp>.json and results/bench/analysis-scale.md.
Rows are shaped like the suite's: every spec's metrics over its quick sweep, spread over systems,
runs and repeats, with values drawn from a seeded log-normal around 1000.
"""
import argparse
import datetime as dt
import json
import random
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
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
