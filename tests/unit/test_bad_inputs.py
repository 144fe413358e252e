"""The bad-input corpus (issue 11, item 4): every case of tests/bad-inputs/cases.yaml through the
real ``crosstalk`` command, each under a time limit, with HOME and TMPDIR fresh and empty (the
``compare``, ``spec`` and ``config`` cases in children of a process that imported their libraries once, FORKED).

A bad spec, inventory, result file or argument ends with exit status 2 and exactly one line on
stderr that names the file (or argument) and the field: no traceback, no second line, nothing written
in HOME, TMPDIR or the references directory, no file a shell metacharacter could have created, and
the checkout untouched (git status of what the commands read or could write, and the corpus itself).
Result files sit beside a committed good run, which must still be collected. The cases run in
parallel (a few at a time) once per module; the cases that run the whole workflow (``crosstalk
report``) are a group of their own, in the slow tier.
Cases marked ``xfail`` in cases.yaml are known defects, listed with the reason."""
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from xt_testing import REPO, tool_env, venv_tool

CORPUS = REPO / "tests" / "bad-inputs"
CASES = yaml.safe_load((CORPUS / "cases.yaml").read_text())
(GOOD_RUN,) = sorted((REPO / "tests" / "fixtures" / "runs" / "local" / "runs").iterdir())
#: Seconds one command may take (``crosstalk report`` runs the whole Snakemake workflow).
TIME_LIMIT = 120
REPORT_TIME_LIMIT = 600
WORKERS = 3
#: Commands whose cases run forked from a process that imported their libraries once
#: (tests/cli_forkserver.py's PRELOAD: 1.6 s of each compare's 2.7 s; 0.2 s of each spec check's and
#: inventory render's 0.28 s, 84 cases); every other command (run, refs, claims, report, doctor,
#: an unknown one) is started as the installed script, as a user starts it.
FORKED = {"compare", "spec", "config"}
#: Files a shell metacharacter in a case would create if anything ran it through a shell.
PWNED = ("/tmp/*pwned*", str(REPO / "*pwned*"))

pytestmark = pytest.mark.timeout(REPORT_TIME_LIMIT + 300)


def _expand(kind):
    out = []
    for case in CASES[kind]:
        category = case["id"].split("/")[0]
        out.append({**CASES.get("defaults", {}).get(category, {}), **case, "kind": kind})
    return out


ALL = _expand("cases") + _expand("tolerated")


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    values: dict
    left_behind: dict = field(default_factory=dict)    # directory -> files written into it
    missing: list = field(default_factory=list)         # files of `exists` not written


def fill(text, values, escape=False):
    for key, value in values.items():
        text = text.replace("{" + key + "}", re.escape(value) if escape else value)
    return text


def _files(directory):
    return sorted(str(p.relative_to(directory)) for p in Path(directory).rglob("*"))


def _descendants(pid):
    """Every live process below ``pid`` (crosstalk starts its tools in process groups of their own)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_all(root):
    for pid in [root, *_descendants(root)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _run(argv, env, limit):
    """(exit status, stdout, stderr); on expiry the command and everything it started end."""
    with subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_all(proc.pid)
            out, err = proc.communicate()
            err += f"\n(test: killed after the time limit of {limit} s)"
    return proc.returncode, out, err


def _run_forked(argv, env, limit, base):
    """As ``_run``, in a child of tests/cli_forkserver.py (its PRELOAD imported once)."""
    from cli_forkserver import run
    return run(argv, env, REPO, base, limit)


def run_case(case, base):
    """Run one case in fresh directories under ``base``; returns its Outcome."""
    base = Path(base)
    dirs = {name: base / name for name in ("home", "tmpdir", "tmp", "results", "references", "examples")}
    for d in dirs.values():
        d.mkdir(parents=True)
    good = dirs["results"] / "local" / "runs" / GOOD_RUN.name
    shutil.copytree(GOOD_RUN, good)
    values = {"case": str(CORPUS / case["id"]), "tmp": str(dirs["tmp"]), "results": str(dirs["results"]),
              "references": str(dirs["references"]), "good": str(good), "repo": str(REPO),
              # Enough ../ to reach / from the checkout, wherever it is: {up}/etc is /etc.
              "up": os.path.relpath("/", REPO)}
    if case["id"].startswith("results/"):
        bad = dirs["results"] / "local" / "runs" / case["id"].split("/", 1)[1]
        source = case.get("run", case["id"])
        if source == "empty":
            bad.mkdir()
        else:
            shutil.copytree(CORPUS / source / "run", bad, symlinks=True)   # links stay links, as in a copied tree
        values["bad"] = str(bad)
    env = {k: v for k, v in tool_env().items()
           if not k.startswith(("CROSSTALK_", "XDG_", "ANSIBLE_", "MPLCONFIGDIR"))}
    env.update(HOME=str(dirs["home"]), TMPDIR=str(dirs["tmpdir"]),
               CROSSTALK_RESULTS_DIR=str(dirs["results"]),
               CROSSTALK_REFERENCES_DIR=str(dirs["references"]),
               CROSSTALK_EXAMPLES_DIR=str(dirs["examples"]))
    env.update({k: fill(str(v), values) for k, v in case.get("env", {}).items()})
    argv = [venv_tool("crosstalk"), *(fill(str(a), values) for a in case["argv"])]
    limit = REPORT_TIME_LIMIT if case["argv"][0] == "report" else TIME_LIMIT
    start = time.monotonic()
    if case["argv"][0] in FORKED:
        status, out, err = _run_forked(argv, env, limit, base)
    else:
        status, out, err = _run(argv, env, limit)
    outcome = Outcome(status, out, err, time.monotonic() - start, values)
    for name in ("home", "tmpdir", "references", "examples"):
        written = [] if name in case.get("writes", ()) else _files(dirs[name])
        if written:
            outcome.left_behind[name] = written
    outcome.missing = [f for f in (fill(p, values) for p in case.get("exists", [])) if not Path(f).exists()]
    return outcome


#: What the commands under test read or could write in the checkout (the rest of the tree may be
#: edited meanwhile by people working in the same checkout): build/ and results/ are scratch.
WATCHED = ("reframe-tests", "experiments", "inventories", "examples", "spack-envs", "tests/bad-inputs",
           "tests/fixtures")


#: Configurations rendered from inventories (and their temporary files while written): tests on
#: the other pytest worker render them at any moment. A case that got as far as rendering would
#: fail its own check, since the runner renders only after every argument is checked.
RENDERED = re.compile(r"^(!!|\?\?) (reframe-tests/config/|spack-envs/[^/]+/spack\.(yaml|lock)$)")


def _git_status():
    """``git status`` of the watched paths, ignored files included, rendered configurations not."""
    proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored", "--",
                           *WATCHED], cwd=REPO, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return None
    return {ln for ln in proc.stdout.splitlines() if "__pycache__" not in ln and not RENDERED.match(ln)}


def _corpus_digest():
    """The corpus's files and contents (untracked files' changes do not show in git status)."""
    import hashlib
    return {str(p.relative_to(CORPUS)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(CORPUS.rglob("*")) if p.is_file()}


def _pwned():
    import glob
    return {p for pattern in PWNED for p in glob.glob(pattern)}


def _group(case):
    """``workflow`` for the cases that run the whole Snakemake workflow (slow tier), else ``quick``."""
    return "workflow" if case.get("workflow") else "quick"


def _run_group(group, root):
    """Every case of ``group``'s Outcome, plus the repository's state before and after."""
    before = {"git": _git_status(), "pwned": _pwned(), "corpus": _corpus_digest()}
    cases = [c for c in ALL if _group(c) == group]
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        futures = {c["id"] + ("" if c["kind"] == "cases" else " (tolerated)"):
                   pool.submit(run_case, c, root / f"{i:03d}") for i, c in enumerate(cases)}
        results = {key: f.result() for key, f in futures.items()}
    results["_repo"] = (before, {"git": _git_status(), "pwned": _pwned(), "corpus": _corpus_digest()})
    return results


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """``outcomes(group)``: the group's cases, run once per module when first asked for."""
    done = {}

    def of(group):
        if group not in done:
            done[group] = _run_group(group, tmp_path_factory.mktemp(f"bad-inputs-{group}"))
        return done[group]
    return of


def _marks(case):
    marks = [pytest.mark.xfail(reason=case["xfail"], strict=True)] if case.get("xfail") else []
    return marks + ([pytest.mark.slow] if _group(case) == "workflow" else [])


def _params(kind):
    return [pytest.param(case, id=case["id"], marks=_marks(case)) for case in _expand(kind)]


def describe(out):
    return (f"exit {out.returncode} after {out.seconds:.1f} s\n--- stderr:\n{out.stderr}\n"
            f"--- stdout:\n{out.stdout[-2000:]}")


def check_clean(case, out):
    assert not out.left_behind, f"written outside the case's results: {out.left_behind}"
    assert not out.missing, f"not written: {out.missing}\n{describe(out)}"
    if "stdout" in case:
        assert re.search(fill(case["stdout"], out.values, escape=True), out.stdout, re.M), describe(out)


@pytest.mark.parametrize("case", _params("cases"))
def test_bad_input_is_one_line_naming_file_and_field(case, outcomes):
    out = outcomes(_group(case))[case["id"]]
    assert "Traceback" not in out.stderr + out.stdout, describe(out)
    assert out.returncode == case.get("status", 2), describe(out)
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), describe(out)
    assert lines[0].startswith("crosstalk"), describe(out)
    pattern = fill(case["stderr"], out.values, escape=True)
    assert re.search(pattern, lines[0]), f"{pattern!r} not in:\n{describe(out)}"
    check_clean(case, out)


@pytest.mark.parametrize("case", _params("tolerated"))
def test_tolerated_input_is_collected(case, outcomes):
    out = outcomes(_group(case))[case["id"] + " (tolerated)"]
    assert out.returncode == 0 and not out.stderr, describe(out)
    check_clean(case, out)


@pytest.mark.parametrize("group", ["quick", pytest.param("workflow", marks=pytest.mark.slow)])
def test_nothing_outside_the_cases_changed(outcomes, group):
    before, after = outcomes(group)["_repo"]
    assert not after["pwned"] - before["pwned"], "a shell metacharacter was run"
    assert after["corpus"] == before["corpus"], "a case changed the corpus"
    if before["git"] is None:
        pytest.skip("not a git checkout")
    assert after["git"] == before["git"], "the repository tree changed"


def test_corpus_is_complete():
    """Every case directory is listed and every listed case with files has its directory."""
    listed = {c["id"] for c in ALL} | {c.get("run") for c in ALL if c.get("run") not in (None, "empty")}
    on_disk = {str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*") if p.is_dir()}
    assert on_disk <= listed, sorted(on_disk - listed)
    for case in ALL:
        if "{case}" in str(case["argv"]):
            assert (CORPUS / case["id"]).is_dir(), case["id"]
    ids = [c["id"] + c["kind"] for c in ALL]
    assert len(ids) == len(set(ids))
