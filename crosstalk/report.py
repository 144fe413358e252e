"""The HTML report (``crosstalk report`` runs the Snakemake workflow that calls ``write_report``)."""
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import jinja2
import pandas as pd

from crosstalk import REPO_ROOT, results_root
from crosstalk.specs import all_specs

WORKFLOW = REPO_ROOT / "workflows" / "Snakefile"
TEMPLATES = Path(__file__).parent / "templates"


def figure_ids():
    """Every figure the specs list (the workflow draws exactly these)."""
    return [fig["id"] for spec in all_specs() for fig in spec.data.get("figures", [])]


def format_number(value):
    """Readable numbers: thousands grouped, small ones with 4 significant digits."""
    if value != value:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _reference_text(group):
    ref = group["ref_value"].dropna()
    if ref.empty:
        return "none (explore)"
    lo, hi = group["ref_lower"].iloc[0], group["ref_upper"].iloc[0]
    bounds = f" [{lo:+.0%}, {hi:+.0%}]" if pd.notna(lo) and pd.notna(hi) else ""
    return f"{format_number(ref.iloc[0])}{bounds}"


def experiment_table(perf):
    rows = []
    for (system, partition, case, metric), group in perf.groupby(
            ["system", "partition", "case", "metric"], sort=True):
        results = set(group["result"])
        rows.append({
            "target": f"{system}:{partition}", "case": case.split(" %repeat=")[0], "metric": metric,
            "median": group["value"].median(), "min": group["value"].min(), "max": group["value"].max(),
            "n": len(group), "unit": group["unit"].iloc[0], "reference": _reference_text(group),
            "result": "fail" if "fail" in results else "pass",
        })
    # Repeats of one case collapse into one row.
    merged = {}
    for row in rows:
        key = (row["target"], row["case"], row["metric"])
        merged.setdefault(key, row)
    return list(merged.values())


def load_runs(results_dir, systems):
    runs = []
    for path in sorted(Path(results_dir).glob("*/runs/*/provenance.json")):
        if systems and path.parent.parent.parent.name not in systems:
            continue
        try:
            runs.append(json.loads(path.read_text()))
        except json.JSONDecodeError:
            continue   # already reported by collect
    return runs


def write_report(perf, cases, errors, systems, figures_dir, out, results_dir,
                 captions=None, extra_sections=None):
    """Render the report page. ``figures_dir`` holds ``<id>.png/.svg``; paths become relative."""
    out = Path(out)
    rel = os.path.relpath(figures_dir, out.parent)
    captions = captions or {}
    experiments = []
    for spec in all_specs():
        exp_perf = perf[perf.experiment == spec.name]
        exp_cases = cases[(cases.experiment == spec.name) & (cases.result != "pass")]
        experiments.append({
            "name": spec.name, "title": spec.data["title"], "citations": spec.data["citations"],
            "figures": [{**fig, "png": f"{rel}/{fig['id']}.png", "svg": f"{rel}/{fig['id']}.svg",
                         "caption": captions.get(fig["id"], "")} for fig in spec.data.get("figures", [])],
            "table": experiment_table(exp_perf),
            "not_run": [{"target": f"{c.system}:{c.partition}", "case": c.case, "result": c.result,
                         "reason": c.reason} for c in exp_cases.itertuples()],
        })
    counts = {k: int((cases.result == k).sum()) for k in ("pass", "fail", "skip")}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    env.filters["num"] = format_number
    html = env.get_template("report.html.j2").render(
        systems=systems, experiments=experiments, counts=counts, errors=errors,
        runs=load_runs(results_dir, systems), extra_sections=extra_sections or [],
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return out


#: Benchmark summaries (markdown written by the benchmark scripts) shown at the end of the report.
BENCHMARK_PAGES = [("Virtual cluster links and bring-up", "vcluster/linkbench.md"),
                   ("Kernels against plain loops and upstream", "bench/latest.md"),
                   ("Analysis scale", "bench/analysis-scale.md")]


def benchmark_sections(results_dir):
    import markdown
    sections = []
    for title, rel in BENCHMARK_PAGES:
        path = Path(results_dir) / rel
        if path.exists():
            sections.append({"title": title,
                             "html": markdown.markdown(path.read_text(), extensions=["tables"])})
    return sections


def discovered_systems(results_dir):
    return sorted(p.parent.name for p in Path(results_dir).glob("*/runs") if p.is_dir())


def run_workflow(systems=(), cores=2, extra=(), quiet=True):
    """Run the Snakemake workflow on results_root(); returns its exit status."""
    argv = [str(Path(sys.executable).with_name("snakemake")), *extra, "-s", str(WORKFLOW),
            "-d", str(REPO_ROOT), "--cores", str(cores)]
    if quiet:
        argv += ["--quiet", "rules"]
    # --config takes every following word: it must come last.
    argv += ["--config", f"results={results_root()}"]
    if systems:
        argv += [f"systems={json.dumps(list(systems))}"]
    return subprocess.run(argv).returncode


def _cmd_report(args):
    systems = [s for s in (args.systems or "").split(",") if s]
    status = run_workflow(systems, args.cores)
    if status == 0:
        root = results_root()
        print(f"crosstalk: report: {root / 'report.html'}")
        for system in systems or discovered_systems(root):
            page = root / system / "report.html"
            if page.exists():
                print(f"crosstalk: report for {system}: {page}")
    return status


def register(subparsers):
    p = subparsers.add_parser("report", help="collect runs, fit models, draw figures, write the report")
    p.add_argument("--systems", help="comma-separated systems (default: every system under results/)")
    p.add_argument("--cores", type=int, default=2)
    p.set_defaults(func=_cmd_report)
