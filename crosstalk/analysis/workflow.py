"""The analysis workflow as crosstalk runs it: ``crosstalk report`` (Snakemake on the results and
the shipped examples, one report at a time per results directory) and what the workflow's Snakefile
reads while it plans (the figures the specs list, the systems found, the benchmark pages). Kept
free of pandas and the page templates: Snakemake imports it at every start."""
import json
import os
import subprocess
import sys
from pathlib import Path

from crosstalk import CACHE_DIR, REPO_ROOT, examples_root, results_root
from crosstalk.analysis import ERRORS_NAME, derived, tell_skipped
from crosstalk.argtypes import SYSTEM_NAME, number
from crosstalk.errors import CrosstalkError, InputError
from crosstalk.proc import run
from crosstalk.run import uselock
from crosstalk.specs import all_specs

WORKFLOW = REPO_ROOT / "workflows" / "Snakefile"


def figure_ids():
    """Every figure the specs list (the workflow draws exactly these)."""
    return [fig["id"] for spec in all_specs() for fig in spec.data.get("figures", [])]


def figure_experiments():
    """The experiment whose rows each figure draws: the spec that lists it."""
    return {fig["id"]: spec.name for spec in all_specs() for fig in spec.data.get("figures", [])}


#: Benchmark summaries (markdown written by the benchmark scripts) shown at the end of the report.
BENCHMARK_PAGES = [("Virtual cluster links and bring-up", "vcluster/linkbench.md"),
                   ("Virtual cluster topologies", "vcluster/topologies.md"),
                   ("Kernels against plain loops and upstream", "bench/latest.md"),
                   ("Analysis scale", "bench/analysis-scale.md")]


def discovered_systems(results_dir):
    return sorted(p.parent.name for p in Path(results_dir).glob("*/runs") if p.is_dir())


def workflow_timeout():
    """Seconds the Snakemake workflow may take: ``CROSSTALK_REPORT_TIMEOUT``, default 3600."""
    text = os.environ.get("CROSSTALK_REPORT_TIMEOUT", "3600")
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0
    if not 0 < seconds < float("inf"):
        raise CrosstalkError(f"CROSSTALK_REPORT_TIMEOUT: {text!r}: give a positive number of seconds")
    return seconds


def run_workflow(systems=(), cores=2, extra=(), quiet=True, examples=True, svg=False):
    """Run the Snakemake workflow on results_root() (and the shipped examples unless
    ``examples`` is false; the figures as SVG too with ``svg``); returns its exit status. A run
    longer than :func:`workflow_timeout` is stopped (CrosstalkError)."""
    # The lock below lets one report at a time write a results directory, so what Snakemake keeps of
    # a report that was killed (its lock, jobs marked incomplete) is stale: --nolock and
    # --rerun-incomplete, or the next report would refuse to start until someone unlocks it by hand.
    argv = [str(Path(sys.executable).with_name("snakemake")), *extra, "-s", str(WORKFLOW),
            "-d", str(REPO_ROOT), "--cores", str(cores), "--nolock", "--rerun-incomplete"]
    if quiet:
        argv += ["--quiet", "rules"]
    # --config takes every following word: it must come last.
    config = ["--config", f"results={results_root()}", f"examples={examples_root() if examples else ''}",
              f"svg={'true' if svg else 'false'}"]
    if systems:
        config += [f"systems={json.dumps(list(systems))}"]
    timeout = workflow_timeout()
    # One report at a time per results directory: a second one waits (Snakemake would refuse it
    # with a locked-directory error, or two writers would interleave the table).
    waiting = lambda holder: print(f"crosstalk: report: waiting for {holder} to finish with "  # noqa: E731
                                   f"{results_root()}", flush=True)
    env = dict(os.environ)
    env.setdefault("XDG_CACHE_HOME", str(CACHE_DIR))
    env.setdefault("MPLCONFIGDIR", str(CACHE_DIR / "matplotlib"))
    with uselock.held(results_root() / ".report.lock", "crosstalk report", wait=timeout,
                      on_wait=waiting):
        for path in derived.broken(results_root()):
            print(f"crosstalk: report: {path} is cut short or unreadable: making it again", flush=True)
            path.unlink()            # a target of the workflow: made again
        try:
            # Snakemake's progress is output, not an error: stdout (stderr is for errors only).
            return run([*argv, *config], timeout, "snakemake", stderr=subprocess.STDOUT, env=env).returncode
        except CrosstalkError as err:
            raise CrosstalkError(f"report: {err} (CROSSTALK_REPORT_TIMEOUT sets the limit)") from None


def _cmd_report(args):
    systems = [s for s in (args.systems or "").split(",") if s]
    for system in systems:
        if not SYSTEM_NAME.match(system):
            raise InputError("--systems", None, f"{system!r} is not a system name")
    status = run_workflow(systems, args.cores, examples=not args.no_examples, svg=args.svg)
    if status != 0:
        print(f"crosstalk: error: report: the workflow failed (snakemake exit status {status}; "
              "its output is above)", file=sys.stderr)
        return status
    root = results_root()
    print(f"crosstalk: report: {root / 'report.html'}")
    for system in systems or discovered_systems(root):
        page = root / system / "report.html"
        if page.exists():
            print(f"crosstalk: report for {system}: {page}")
    # Broken runs were left out (and are listed in the report): one line each; no one asked for
    # them by name, so the exit status is that of the others.
    errors_file = root / ERRORS_NAME
    tell_skipped([ln for ln in errors_file.read_text().splitlines() if ln.strip()] if errors_file.is_file() else [])
    return 0


def register(subparsers):
    p = subparsers.add_parser("report", help="collect runs, fit models, draw figures, write the report")
    p.add_argument("--systems", help="comma-separated systems (default: every system under results/ and the examples)")
    p.add_argument("--cores", type=number(minimum=1, integer=True), default=2)
    p.add_argument("--no-examples", action="store_true",
                   help="leave out the runs shipped with crosstalk (shown by default as labelled examples)")
    p.add_argument("--svg", action="store_true", help="draw each figure as SVG besides PNG (linked from the report)")
    p.set_defaults(func=_cmd_report)
