"""Collect ReFrame runs from ``results/<system>/runs/<run-id>/`` into tidy tables.

Every row carries the run's host class (``crosstalk.site.hostclass``) and origin: ``user`` for runs under
the results directory, ``example`` for the runs shipped with crosstalk (``examples/runs/``).
``platform`` (``system@host-class``, marked when an example) is the key that groups numbers: runs of
different hardware, or shipped examples and a user's own runs, are never pooled.

Each run directory holds ReFrame's JSON run report (``report.json``), its debug log
(``reframe.log``: the only place ReFrame writes why a test was skipped), perflogs and our
``provenance.json``. A broken file is reported in one line and skipped; the rest is still collected.
"""
import json
import os
import re
from functools import lru_cache
from pathlib import Path

from crosstalk import examples_root, results_root, userfiles
from crosstalk.errors import InputError
from crosstalk.run import runstatus
from crosstalk.site.hostclass import from_provenance
from crosstalk.site.systemfacts import encode as encode_facts, of_provenance as facts_of, topology_of


def platform_of(system, host_class, origin="user"):
    """The grouping key of a run: ``vcluster@e1596abf``, ``vcluster@81abe5a2 (example)``."""
    return f"{system}@{host_class}" + (" (example)" if origin == "example" else "")


#: How a case without a recorded programming environment reads in labels.
NO_ENVIRON = "-"


def target_of(platform, partition, environ):
    """The label of a series: ReFrame's ``system:partition+environ`` with the platform for the
    system (``vcluster@81abe5a2 (example):mpi+gnu-openmpi``). Strings or pandas columns."""
    if hasattr(environ, "fillna"):     # a column (duck-typed: the workflow plans without importing pandas)
        environ = environ.fillna(NO_ENVIRON)
    elif not isinstance(environ, str):
        environ = NO_ENVIRON
    return platform + ":" + partition + "+" + environ

#: One row per performance value. ``repeat`` is the test's repeat parameter, ``session`` the ReFrame
#: session within the run (``--reruns N`` adds N sessions), ``sample`` the ordinal of the case's
#: result within the run (also distinguishes ``--repeat`` copies), ``round`` the round of a job that
#: measured its conditions in rounds (one row per round; 0 otherwise).
PERF_COLUMNS = ["system", "host_class", "host_label", "origin", "platform", "partition", "environ", "experiment",
                "test", "case", "params", "metric",
                "value", "unit", "ref_value", "ref_lower", "ref_upper", "result", "repeat", "session", "sample",
                "round", "run_id",
                "time", "nodes", "git_commit", "spec_hash", "build_origin", "link_state", "topology", "profile"]
#: One row per test case (passed, failed or skipped) with the reason, its platform's facts
#: (crosstalk.site.systemfacts, JSON text: what claims' `where:` reads) and its run's looks at the data
#: (2 after a second stage: the claims are then judged at the confidence two looks allow).
CASE_COLUMNS = ["system", "host_class", "host_label", "origin", "platform", "partition", "environ", "experiment",
                "test", "case", "params", "result",
                "reason", "run_id", "time", "facts", "looks"]

_PARAM = re.compile(r"%(\w+)=(\S+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SKIP = re.compile(r"\[\s*SKIP\s*\] \(\s*\d+/\d+\) (?P<name>.+?) /(?P<hash>[0-9a-f]+) "
                   r"@(?P<target>\S+) \[(?P<reason>.*)\]$")


def _params(case):
    """Test parameters with their typed values (names come from the display name)."""
    names = [m.group(1) for m in _PARAM.finditer(case.get("display_name") or case["name"])]
    return {n: case.get(n, v) for n, v in zip(names, (m.group(2) for m in
                                                      _PARAM.finditer(case.get("display_name") or case["name"])))}


def _skip_reasons(log_path):
    """``{(hash, target): reason}`` from ReFrame's log: a test variant's hash (each ``--repeat``
    copy has its own; the logged name then carries ``%.repeat_no``) and the target
    (``system:partition+environ``), which tells apart the cases of one variant."""
    reasons = {}
    try:
        text = userfiles.read_text(log_path, "log", errors="replace")
    except userfiles.MissingFile:
        return reasons
    for line in text.splitlines():
        match = _SKIP.search(_ANSI.sub("", line))
        if match:
            reasons[(match["hash"], match["target"])] = match["reason"]
    return reasons


def file_kind(path):
    """The kind of a run's file, for its size limit (crosstalk.userfiles.MAX_BYTES)."""
    return {"report.json": "report", "reframe.log": "log"}.get(Path(path).name, "provenance")


def _load_json(path, what):
    try:
        return userfiles.load_json(path, file_kind(path))
    except userfiles.MissingFile:
        raise InputError(path, None, f"missing {what}") from None


def load_provenance(run_dir):
    """A run's ``provenance.json`` (``{}`` for a run without one: a plain ReFrame run); InputError
    naming file and field if it is broken."""
    path = Path(run_dir) / "provenance.json"
    if not path.exists():
        return {}
    prov = _load_json(path, "provenance")
    if not isinstance(prov, dict):
        raise InputError(path, None, "not a provenance record (a JSON object)")
    host = prov.get("host_class")
    if host is not None and not (isinstance(host, dict) and isinstance(host.get("id"), str)
                                 and "label" in host):
        raise InputError(path, "host_class", "not an object with 'id' and 'label'")
    return prov


def _is_number(value):
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


#: Results that a later attempt of the same case replaces (``crosstalk run --resume`` re-runs them).
UNFINISHED = {"fail", "abort", "fail_deps"}


def attempt_reports(run_dir):
    """``(report.json, reframe.log)`` of each attempt of a run, in order: the first run, then each
    ``crosstalk run --resume`` (``attempts/<n>/<partition>/``)."""
    run_dir = Path(run_dir)
    found = [(run_dir / "report.json", run_dir / "reframe.log")]
    resumed = [p for p in (run_dir / "attempts").glob("*/*/report.json") if p.parent.parent.name.isdigit()]
    for path in sorted(resumed, key=lambda p: (int(p.parent.parent.name), p.parent.name)):
        found.append((path, path.parent / "reframe.log"))
    return found


def attempt_testcases(run_dir):
    """Every test case record of every attempt's readable report, attempts in order (a report
    missing or unreadable is left out: for planning and figures, not for ingesting a run)."""
    for report_path, _ in attempt_reports(run_dir):
        try:
            report = userfiles.load_json(report_path, "report")
        except InputError:
            continue
        sessions = report.get("runs") if isinstance(report, dict) else None
        for session in sessions if isinstance(sessions, list) else ():
            cases = session.get("testcases") if isinstance(session, dict) else None
            yield from (c for c in cases if isinstance(c, dict)) if isinstance(cases, list) else ()


#: Kept job outputs the analysis reads beyond the run reports, by test: the raw samples that
#: figures and fits read (E5's ImpactB probe samples under the load and on the idle fabric). The
#: workflow declares them as inputs of the figures and reports (raw_output_files).
RAW_OUTPUTS = {"ActiveProbing": ("rfm_job.out", "idle_probe.out")}


def run_dir_of(origin, system, run_id):
    """The directory of a run: under the user's results or the shipped examples."""
    root = examples_root() if origin == "example" else results_root()
    return root / system / "runs" / run_id


@lru_cache(maxsize=None)
def case_output_dirs(run_dir):
    """{(case name, partition, environment): [output directories]} of the cases that passed, from
    every attempt's report (a resumed run's and a second stage's too). A case skipped under one
    environment has an empty directory of its own: keyed by environment, it never hides the one
    that ran. Results copied from elsewhere: the same layout under this run."""
    found = {}
    for case in attempt_testcases(run_dir):
        if case.get("result") != "pass":
            continue
        out = Path(case.get("outputdir") or "")
        if not out.is_dir():
            out = (Path(run_dir) / "output" / str(case.get("system", "")).split(":")[0] /
                   str(case.get("partition")) / str(case.get("environ")) / str(case.get("short_name")))
        dirs = found.setdefault((case.get("name"), case.get("partition"), case.get("environ")), [])
        if out not in dirs:
            dirs.append(out)
    return found


def raw_output_files(run_dir):
    """Every kept output of :data:`RAW_OUTPUTS` that the passed cases of ``run_dir`` left (a run
    without an ``output`` directory, e.g. a synthetic one, has none: its reports are not read)."""
    if not (Path(run_dir) / "output").is_dir():
        return []
    found = set()
    for (name, _, _), dirs in case_output_dirs(str(run_dir)).items():
        for file_name in RAW_OUTPUTS.get(str(name).split(" ")[0], ()):
            found.update(d / file_name for d in dirs if (d / file_name).is_file())
    return sorted(found)


def run_files(run_dir):
    """Every file ``load_run`` reads, in a fixed order: each attempt's report and log, the
    provenance and the run status (``status.json``, or ``exit_status`` for runs older than it)."""
    run_dir = Path(run_dir)
    paths = [p for pair in attempt_reports(run_dir) for p in pair]
    return paths + [run_dir / "provenance.json", run_dir / "status.json", run_dir / "exit_status"]


def link_out_of(run_dir):
    """The first of a run's files that leads out of its run directory through a link, or None: a
    results tree copied from elsewhere may hold links, and a run's files are its own."""
    root = Path(run_dir).resolve()
    for path in run_files(run_dir):
        if os.path.lexists(path) and not path.resolve().is_relative_to(root):
            return path
    return None


def _sessions(run_dir):
    """``(report path, where, session dict, skip reasons, start time)`` of every ReFrame session of a
    run, attempts in order. A report is required unless its attempt was interrupted before ReFrame
    wrote it."""
    sessions = []
    # A run stopped (or still going) before ReFrame wrote its first report has no rows yet.
    unfinished = runstatus.read(run_dir)["state"] in ("running", "interrupted")
    for n, (report_path, log_path) in enumerate(attempt_reports(run_dir)):
        if (n or unfinished) and not report_path.exists():
            continue
        report = _load_json(report_path, "ReFrame run report")
        if not isinstance(report, dict) or "runs" not in report or "session_info" not in report:
            raise InputError(report_path, "runs", "not a ReFrame run report (no 'runs'/'session_info')")
        if not isinstance(report["runs"], list):
            raise InputError(report_path, "runs", "not a list of sessions")
        if not isinstance(report["session_info"], dict):
            raise InputError(report_path, "session_info", "not an object")
        reasons = _skip_reasons(log_path)
        start = (report.get("session_info") or {}).get("time_start")
        for local, attempt in enumerate(report["runs"]):
            if isinstance(attempt, dict) and not isinstance(attempt.get("testcases", []), list):
                raise InputError(report_path, f"runs[{local}].testcases", "not a list of test cases")
            sessions.append((report_path, f"runs[{local}]", attempt, reasons, start))
    return sessions


def load_run(run_dir, origin="user"):
    """Rows of one run: (perf rows, case rows). Raises InputError for a broken run."""
    run_dir = Path(run_dir)
    outside = link_out_of(run_dir)
    if outside is not None:
        raise InputError(outside, None, f"a link out of its run directory (to {outside.resolve()}): refused")
    sessions = _sessions(run_dir)
    prov = load_provenance(run_dir)
    run_id = prov.get("run_id", run_dir.name)
    host = from_provenance(prov)
    facts = encode_facts(facts_of(prov, host))
    specs = prov.get("specs", {})
    looks = prov.get("looks", 1)       # 2 after a second stage (crosstalk.claims.plan)
    if not isinstance(looks, int) or isinstance(looks, bool) or looks < 1:
        raise InputError(run_dir / "provenance.json", "looks", f"{looks!r} is not a count of looks (1 or more)")
    perf_rows, case_rows = [], []
    # Each session of each attempt: --reruns N adds whole sessions (more samples), --max-retries
    # and --resume add sessions of the unfinished cases only (the later result replaces them).
    cases = []
    latest = {}
    for i, (report_path, where, attempt, reasons, start) in enumerate(sessions):
        for case in attempt.get("testcases", []) if isinstance(attempt, dict) else [None]:
            if not isinstance(case, dict) or "name" not in case:
                raise InputError(report_path, f"{where}.testcases", "malformed test case")
            key = (case["name"], case.get("system"), case.get("partition"), case.get("environ"))
            earlier = latest.get(key)
            if earlier is not None and cases[earlier][1].get("result") in UNFINISHED:
                cases[earlier] = (i, case, reasons, start, report_path)
            else:
                latest[key] = len(cases)
                cases.append((i, case, reasons, start, report_path))
    samples = {}
    for session, case, skip_reasons, session_start, report_path in cases:
        if case.get("fixture"):
            continue
        # Ordinal of this case's result in the run: --repeat puts copies in one session, --reruns
        # in several; either way each sample of a case keeps its own number.
        key = (case["name"], case.get("system"), case.get("partition"), case.get("environ"))
        sample = samples[key] = samples.get(key, -1) + 1
        experiment = case.get("spec_name") or ""
        params = _params(case)
        base = {
            "system": case.get("system"), "host_class": host["id"], "host_label": host["label"],
            "origin": origin, "platform": platform_of(case.get("system"), host["id"], origin),
            "partition": case.get("partition"),
            "environ": case.get("environ"), "experiment": experiment,
            "test": case["name"].split(" %")[0], "case": case["name"],
            "params": json.dumps(params, sort_keys=True), "run_id": run_id,
            "time": case.get("job_completion_time") or session_start,
        }
        reason = case.get("fail_reason")
        if case.get("result") == "skip":
            target = f"{case.get('system')}:{case.get('partition')}+{case.get('environ')}"
            reason = skip_reasons.get((case.get("hashcode"), target), "skipped (reason not logged)")
        case_rows.append({**base, "result": case.get("result"), "reason": reason, "facts": facts, "looks": looks})
        perfvalues = case.get("perfvalues") or {}
        if not isinstance(perfvalues, dict):
            raise InputError(report_path, f"{case['name']}: perfvalues",
                             "not a mapping of performance variables")
        rounds = _round_values(case, report_path)
        for key, values in perfvalues.items():
            try:
                value, ref, lower, upper, unit, result = values[:6]
            except (TypeError, ValueError):
                raise InputError(report_path, f"{case['name']}: perfvalues.{key}", "malformed") from None
            for what, number in (("value", value), ("reference", ref), ("lower threshold", lower),
                                 ("upper threshold", upper)):
                if number is not None and not _is_number(number):
                    raise InputError(report_path, f"{case['name']}: perfvalues.{key}",
                                     f"{what} {number!r} is not a number")
            has_ref = not (ref in (0, None) and lower is None and upper is None)
            metric = key.rsplit(":", 1)[-1]
            perf_rows += [{
                **base, "metric": metric,
                "value": float(v) if v is not None else float("nan"), "unit": unit,
                "ref_value": float(ref) if has_ref else float("nan"),
                "ref_lower": float(lower) if has_ref and lower is not None else float("nan"),
                "ref_upper": float(upper) if has_ref and upper is not None else float("nan"),
                "result": result, "repeat": int(params.get("repeat", 0)), "session": session,
                "sample": sample, "round": r,
                "nodes": ",".join(case.get("job_nodelist") or []),
                "git_commit": prov.get("git_commit"),
                "spec_hash": specs.get(experiment, {}).get("sha256"),
                "build_origin": prov.get("build_origin"),
                "link_state": json.dumps(prov.get("link_state")) if prov.get("link_state") else None,
                "topology": topology_of(prov),
                "profile": prov.get("profile"),
            } for r, v in enumerate(rounds.get(metric) or [value])]
    return perf_rows, case_rows


#: What identifies one value ReFrame reported: a case's sample in a run (its rounds share it).
REPORTED_KEY = ["system", "host_class", "run_id", "partition", "environ", "case", "metric", "session", "sample"]


def reported(perf):
    """The perf table with one row per case sample and the value ReFrame reported for it: a case
    measured in rounds has a row per round, and reported their median. Tables of an older crosstalk
    (no ``round`` column) already have one row per case sample."""
    if "round" not in perf or perf.empty:
        return perf.copy()
    values = perf.groupby(REPORTED_KEY, dropna=False, sort=False)["value"].median().reset_index()
    return perf.drop_duplicates(REPORTED_KEY).drop(columns="value").merge(values, on=REPORTED_KEY)[perf.columns]


def _round_values(case, report_path):
    """``{metric: [value per round]}`` of a case measured in rounds (xtlib.rounds), else empty."""
    rounds = case.get("round_values") or {}
    field = f"{case['name']}: round_values"
    if not isinstance(rounds, dict):
        raise InputError(report_path, field, "not a mapping of performance variables to lists")
    for metric, values in rounds.items():
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise InputError(report_path, f"{field}.{metric}", "not a non-empty list of numbers")
    return rounds


def run_dirs(results_dir, systems=None):
    results_dir = Path(results_dir)
    found = sorted(p.parent for p in results_dir.glob("*/runs/*/report.json"))
    # A directory with provenance but no report is a broken run, and so is an empty one.
    found += sorted(p for p in results_dir.glob("*/runs/*") if p.is_dir() and p not in found
                    and ((p / "provenance.json").exists() or not any(p.iterdir())))
    if systems:
        found = [p for p in found if p.parent.parent.name in systems]
    return sorted(set(found))
