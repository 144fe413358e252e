#!/usr/bin/env python3
"""Benchmark of the test suite (not a test): the wall time of each tier, run alone, one after the
other, so that a change that slows a tier shows before CI's 90 minutes are at risk.

    .venv/bin/python scripts/bench_test_tiers.py [--tiers fast cluster slow] [--timeout 3600]

The tiers partition the suite (docs/testing.md): ``fast``, ``cluster and not slow``, ``slow``.
Prints one line per tier (tests, failures, skips, seconds), then the slowest 30 tests and the time
per directory (the tables of docs/testing.md), and writes results/bench/test-tiers-<timestamp>.json.

    .venv/bin/python scripts/bench_test_tiers.py --from-junit ci.xml

prints the same tables from JUnit files of runs already made (``pytest --junitxml``);
``--ci-summary XML`` prints what .ci/run shows at the end of every run: time per tier, the 20
slowest tests and worker groups, and a warning for a tier over its budget (docs/testing.md). Each tier runs
in a fresh pytest process with the random order of a fresh seed (recorded: ``--randomly-seed=N``
repeats it), as CI would run it.
"""
import argparse
import datetime as dt
import json
import os
import random
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Marker expression of each tier; together they select every test once.
TIERS = {"fast": "fast", "cluster": "cluster and not slow", "slow": "slow"}


def run_tier(name, timeout, out_dir):
    junit = out_dir / f"{name}.xml"
    seed = random.randrange(2**32)
    argv = [sys.executable, "-m", "pytest", "-m", TIERS[name], "-q", "-p", "no:cacheprovider",
            f"--randomly-seed={seed}", f"--junitxml={junit}"]
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        status = "timeout"
    seconds = time.monotonic() - start
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if junit.exists():
        suite = ET.parse(junit).getroot()
        suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
        counts = {k: int(suite.get(k, 0)) for k in counts}
    return {"tier": name, "markers": TIERS[name], "exit": status, "seconds": round(seconds, 1),
            "randomly_seed": seed, **counts}


def testcases(junit_paths):
    """(node id, directory, seconds incl. set-up and tear-down) of every test in the JUnit files."""
    return [(c["id"], c["directory"], c["seconds"]) for c in junit_cases(junit_paths)]


def junit_cases(junit_paths):
    """Every test of the JUnit files: id, directory, seconds, and the tier and worker group that
    tests/conftest.py records as properties (None in files written without them)."""
    out = []
    for path in junit_paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            module = case.get("classname", "").split(".")
            file = "/".join(m for m in module if not m[:1].isupper()) + ".py"
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            out.append({"id": f"{file}::{case.get('name')}", "directory": str(Path(file).parent),
                        "seconds": float(case.get("time", 0)), "tier": props.get("tier"),
                        "group": props.get("group")})
    return out


def wall_seconds(junit_paths):
    """The wall time pytest reported for the runs of these files (the testsuite's time)."""
    total = 0.0
    for path in junit_paths:
        root = ET.parse(path).getroot()
        for suite in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
            total += float(suite.get("time", 0))
    return total


def budgets(doc=REPO / "docs" / "testing.md"):
    """{tier or "suite": seconds} from the budget table of docs/testing.md ("| fast | 180 |")."""
    text = doc.read_text() if doc.exists() else ""
    section = text.partition("## Budget")[2].partition("\n## ")[0]
    rows = re.finditer(r"^\| (fast|cluster|slow|suite) \| (\d+) \|", section, re.M)
    return {m.group(1): float(m.group(2)) for m in rows}


def ci_summary(junit_paths, workers, top=20):
    """Markdown for the end of a CI run: time per tier, the slowest tests and worker groups, and a
    warning where a tier or the whole suite is over its budget (docs/testing.md). A tier's time in a
    run of ``workers`` workers is estimated as its tests' summed time over the workers."""
    cases = junit_cases(junit_paths)
    wall = wall_seconds(junit_paths)
    limits = budgets()
    lines = ["| tier | tests | summed seconds | estimated wall seconds | budget |", "|---|---:|---:|---:|---:|"]
    warnings = []
    for tier in ("fast", "cluster", "slow", None):
        mine = [c for c in cases if c["tier"] == tier]
        if not mine:
            continue
        summed = sum(c["seconds"] for c in mine)
        name = tier or "(no tier recorded)"
        limit = limits.get(tier)
        lines.append(f"| {name} | {len(mine)} | {summed:.0f} | {summed / workers:.0f} | "
                     f"{f'{limit:.0f}' if limit else '-'} |")
        if limit and summed / workers > limit:
            warnings.append(f"WARNING: the {name} tier took about {summed / workers:.0f} s, "
                            f"over its budget of {limit:.0f} s")
    suite_limit = limits.get("suite")
    lines.append(f"| whole suite | {len(cases)} | {sum(c['seconds'] for c in cases):.0f} | {wall:.0f} (measured) | "
                 f"{f'{suite_limit:.0f}' if suite_limit else '-'} |")
    if suite_limit and wall > suite_limit:
        warnings.append(f"WARNING: the suite took {wall:.0f} s, over its budget of {suite_limit:.0f} s "
                        "(docs/testing.md: how a new slow test pays for itself)")
    lines += ["", f"| slowest {top} tests | tier | seconds |", "|---|---|---:|"]
    lines += [f"| `{c['id']}` | {c['tier'] or '-'} | {c['seconds']:.1f} |"
              for c in sorted(cases, key=lambda c: -c["seconds"])[:top]]
    groups = {}
    for c in cases:
        n, total = groups.get(c["group"] or c["id"].split("::")[0], (0, 0.0))
        groups[c["group"] or c["id"].split("::")[0]] = (n + 1, total + c["seconds"])
    lines += ["", f"| slowest {top} worker groups | tests | seconds |", "|---|---:|---:|"]
    lines += [f"| `{g}` | {n} | {t:.0f} |" for g, (n, t) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:top]]
    return "\n".join(lines + ([""] + warnings if warnings else []))


def durations_tables(junit_paths, top=30):
    """Markdown: the slowest ``top`` tests, then seconds and test count per directory."""
    cases = testcases(junit_paths)
    lines = [f"| slowest {top} | seconds |", "|---|---:|"]
    lines += [f"| `{name}` | {sec:.1f} |" for name, _, sec in sorted(cases, key=lambda c: -c[2])[:top]]
    per_dir = {}
    for _, directory, sec in cases:
        n, total = per_dir.get(directory, (0, 0.0))
        per_dir[directory] = (n + 1, total + sec)
    lines += ["", "| directory | tests | seconds |", "|---|---:|---:|"]
    lines += [f"| {d} | {n} | {t:.0f} |" for d, (n, t) in sorted(per_dir.items(), key=lambda kv: -kv[1][1])]
    lines.append(f"| total | {len(cases)} | {sum(c[2] for c in cases):.0f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", nargs="+", choices=list(TIERS), default=list(TIERS))
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per tier (default 3600)")
    parser.add_argument("--from-junit", nargs="+", type=Path, metavar="XML",
                        help="only print the durations tables of these JUnit files")
    parser.add_argument("--ci-summary", nargs="+", type=Path, metavar="XML",
                        help="print the time per tier, the slowest tests and groups, and budget warnings")
    parser.add_argument("--workers", type=int, default=2, help="pytest workers of the --ci-summary run (default 2)")
    args = parser.parse_args()
    for path in args.from_junit or args.ci_summary or ():
        if not path.is_file():
            print(f"bench_test_tiers: error: {path}: no such JUnit file", file=sys.stderr)
            return 2
    if args.ci_summary:
        print(ci_summary(args.ci_summary, max(1, args.workers)))
        return 0
    if args.from_junit:
        print(durations_tables(args.from_junit))
        return 0
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = REPO / "build" / "bench-test-tiers" / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'tier':8} {'tests':>6} {'failed':>6} {'skipped':>7} {'seconds':>8}  exit", flush=True)
    for name in args.tiers:
        row = run_tier(name, args.timeout, out_dir)
        rows.append(row)
        print(f"{name:8} {row['tests']:6d} {row['failures'] + row['errors']:6d} {row['skipped']:7d} "
              f"{row['seconds']:8.1f}  {row['exit']}", flush=True)
    print(f"{'total':8} {sum(r['tests'] for r in rows):6d} {'':6} {'':7} {sum(r['seconds'] for r in rows):8.1f}")
    print()
    print(durations_tables(sorted(out_dir.glob("*.xml"))))
    bench = REPO / "results" / "bench"
    bench.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": "test-tiers", "date": stamp, "cores": os.cpu_count(), "tiers": rows}
    path = bench / f"test-tiers-{stamp}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written: {path.relative_to(REPO)}")
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
