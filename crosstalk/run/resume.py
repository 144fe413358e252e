"""``crosstalk run --resume RUN_ID``: what of an earlier run is left to do, and may it continue.

A case is done when some attempt of the run passed it, skipped it (skips repeat: the node lacks
what the case needs) or saw it fail as expected. Everything else the run selected, failed, aborted
by an interrupt or never reached, runs again. ReFrame selects cases by test hash, not by partition,
so each partition gets its own ReFrame session with that partition's done hashes excluded.
"""
import re

from crosstalk import results_root, userfiles
from crosstalk.analysis.ingest import attempt_reports
from crosstalk.errors import InputError

DONE = {"pass", "skip", "xfail"}
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def find_run(run_id, option="--resume"):
    """The directory of run ``run_id`` under the results directory (any system); errors name
    ``option``."""
    if not _RUN_ID.match(run_id) or ".." in run_id:
        raise InputError(repr(run_id), option, "not a run id (like 20261123T101500Z-1b8548e0)")
    found = sorted(p for p in results_root().glob(f"*/runs/{run_id}") if p.is_dir())
    if not found:
        raise InputError(run_id, option, f"no such run under {results_root()}")
    if len(found) > 1:
        raise InputError(run_id, option, f"run id is ambiguous: {', '.join(map(str, found))}")
    return found[0]


def load_provenance(run_dir):
    path = run_dir / "provenance.json"
    try:
        prov = userfiles.load_json(path, "provenance")
    except userfiles.MissingFile:
        raise InputError(path, None, "missing: not a crosstalk run, cannot resume") from None
    if not isinstance(prov, dict):
        raise InputError(path, None, "not a provenance record (a JSON object): cannot resume")
    for key in ("system", "profile", "specs"):
        if key not in prov:
            raise InputError(path, key, "missing: this run cannot be resumed")
    return prov


def check_unchanged(run_dir, prov, specs, host_id):
    """Refuse to mix what the run measured with different specs or hardware."""
    path = run_dir / "provenance.json"
    recorded = prov["specs"]
    for spec in specs:
        if recorded.get(spec.name, {}).get("sha256") != spec.sha256:
            raise InputError(spec.path, "sha256", f"changed since run {prov.get('run_id')} began: "
                                                  f"start a new run instead of resuming")
    had = (prov.get("host_class") or {}).get("id")
    if had and had != host_id:
        raise InputError(path, "host_class.id", f"the run began on host class {had}, this host is "
                                                f"{host_id}: resume it there, or start a new run")


def done_hashes(run_dir):
    """``{partition: {test hash, ...}}`` of the run's cases that need no new attempt."""
    done = {}
    for report_path, _log in attempt_reports(run_dir):
        try:
            report = userfiles.load_json(report_path, "report")
        except userfiles.MissingFile:
            continue                      # interrupted before ReFrame wrote a report
        for session in report.get("runs", []):
            for case in session.get("testcases", []):
                if case.get("result") in DONE and not case.get("fixture") and case.get("hashcode"):
                    done.setdefault(case.get("partition"), set()).add(case["hashcode"])
    return done


def exclusions(done, partition):
    """ReFrame arguments that leave out the partition's done cases."""
    return [arg for h in sorted(done.get(partition, ())) for arg in ("-x", f"/{h}")]
