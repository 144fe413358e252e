"""Collecting real run reports into the tidy table; broken files; the compare gate."""
import json
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pandas as pd
import pytest
from xt_testing import REPO, venv_tool

from crosstalk import examples_root
from crosstalk.analysis.collect import collect
from crosstalk.analysis.compare import compare_tables, load_values
from crosstalk.analysis.ingest import PERF_COLUMNS, load_run
from crosstalk.errors import InputError
from crosstalk.site.hostclass import from_provenance

RUNS = REPO / "tests" / "fixtures" / "runs"
(RUN,) = sorted((RUNS / "local" / "runs").iterdir())
#: The smallest shipped example run (STREAM and the builds on the virtual cluster).
EXAMPLE = min(examples_root().glob("vcluster/runs/*/report.json"), key=lambda p: p.stat().st_size).parent


def test_real_run_becomes_tidy_rows():
    perf, cases = load_run(RUN)
    df = pd.DataFrame(perf, columns=PERF_COLUMNS)
    triad = df[df.metric == "triad_bw"]
    assert len(triad) == 10                       # threads 1 and 2, five repeats each
    assert set(triad["repeat"]) == set(range(5))
    assert {json.loads(p)["threads"] for p in triad.params} == {1, 2}
    assert (triad.value > 1000).all() and set(triad.unit) == {"MB/s"}
    assert set(df.experiment) == {"stream"} and set(df.run_id) == {RUN.name}
    assert df.spec_hash.str.len().eq(64).all() and df.profile.eq("full").all()


def test_skip_reasons_come_from_the_log():
    _, cases = load_run(RUN)
    skipped = [c for c in cases if c["result"] == "skip"]
    assert len(skipped) == 25
    assert {c["reason"] for c in skipped} == {f"{t} threads > 2 cores" for t in (4, 8, 16, 32, 64)}


def test_skip_reasons_are_per_environment(tmp_path):
    """Two environments' cases of one test variant share its hash: each keeps its own reason."""
    run = copy_run(tmp_path)
    report = json.loads((run / "report.json").read_text())
    cases = report["runs"][0]["testcases"]
    skipped = next(c for c in cases if c["result"] == "skip")
    cases.append({**skipped, "environ": "gnu-mpich"})
    (run / "report.json").write_text(json.dumps(report))
    line = (f"[ SKIP ] ( 9/36) {skipped['name']} /{skipped['hashcode']} @local:default+gnu-mpich "
            f"[runs under gnu-openmpi only]\n")
    with open(run / "reframe.log", "a") as log:
        log.write(line)
    _, rows = load_run(run)
    reasons = {c["environ"]: c["reason"] for c in rows if c["case"] == skipped["name"]}
    assert reasons == {"gnu-openmpi": f"{skipped['threads']} threads > 2 cores",
                       "gnu-mpich": "runs under gnu-openmpi only"}


def copy_run(tmp_path, system="local"):
    dest = tmp_path / system / "runs" / RUN.name
    shutil.copytree(RUN, dest)
    return dest


def test_truncated_report_is_one_line_and_the_rest_is_collected(tmp_path):
    good = copy_run(tmp_path, "sysa")
    bad = copy_run(tmp_path, "sysb")
    text = (bad / "report.json").read_text()
    (bad / "report.json").write_text(text[: len(text) // 2])
    with pytest.raises(InputError, match=r"report\.json: line \d+: not valid JSON"):
        load_run(bad)
    perf, cases, errors = collect(tmp_path)
    assert len(errors) == 1 and str(bad / "report.json") in errors[0] and "\n" not in errors[0]
    assert set(perf.system) == {"local"} and len(perf) == 20   # the good run's rows survive
    assert good.exists()


def test_not_a_reframe_report(tmp_path):
    run = copy_run(tmp_path)
    (run / "report.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(InputError, match="not a ReFrame run report"):
        load_run(run)


def degraded_copy(tmp_path, factor):
    run = copy_run(tmp_path)
    report = json.loads((run / "report.json").read_text())
    for case in report["runs"][-1]["testcases"]:
        for values in (case.get("perfvalues") or {}).values():
            values[0] *= factor
    (run / "report.json").write_text(json.dumps(report))
    return run


def test_compare_flags_a_real_regression_only():
    base = pd.DataFrame(load_run(RUN)[0])
    same = compare_tables(base, base)
    assert same and {r["verdict"] for r in same} == {"no change"}


def test_compare_cli_exit_status_and_junit(tmp_path, run_env):
    # Half the bandwidth: beyond this VM's run-to-run spread (21-31 GB/s at one thread).
    slower = degraded_copy(tmp_path, 0.5)
    junit = tmp_path / "compare.xml"
    proc = subprocess.run([venv_tool("crosstalk"), "compare", str(RUN), str(slower), "--junit", str(junit)],
                          capture_output=True, text=True, env=run_env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "regression" in proc.stdout and "Mann-Whitney" in proc.stdout
    suite = ET.parse(junit).getroot()
    assert int(suite.get("failures")) == 4               # triad and copy, 1 and 2 threads
    faster = compare_tables(pd.DataFrame(load_run(RUN)[0]), pd.DataFrame(load_run(degraded_copy(
        tmp_path / "f", 2.0))[0]))
    assert {r["verdict"] for r in faster} == {"improvement"}


def test_compare_rejects_unknown_input(tmp_path, run_env):
    proc = subprocess.run([venv_tool("crosstalk"), "compare", str(tmp_path), str(RUN)],
                          capture_output=True, text=True, env=run_env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and str(tmp_path) in proc.stderr


def other_host_copy(dest, host_class="0ther0ne"):
    """The example run as if recorded on other hardware (what a new run writes in provenance.json)."""
    shutil.copytree(EXAMPLE, dest)
    prov = json.loads((dest / "provenance.json").read_text())
    prov["host_class"] = {"id": host_class, "label": "Other CPU, 64 cores, 256 GiB",
                          "fingerprint": {"cpu_model": "Other CPU", "cores": 64}, "pinned": False}
    (dest / "provenance.json").write_text(json.dumps(prov))
    return dest


def test_compare_refuses_two_host_classes(tmp_path, run_env):
    other = other_host_copy(tmp_path / "other")
    junit = tmp_path / "compare.xml"
    proc = subprocess.run([venv_tool("crosstalk"), "compare", str(EXAMPLE), str(other), "--junit", str(junit)],
                          capture_output=True, text=True, env=run_env)
    shipped = from_provenance(json.loads((EXAMPLE / "provenance.json").read_text()))["id"]
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and not proc.stdout, proc.stderr
    assert shipped in proc.stderr and "0ther0ne" in proc.stderr and "different hardware" in proc.stderr
    assert not junit.exists()


def test_compare_pairs_values_of_the_same_host_class_only(tmp_path):
    """A baseline holding two host classes is compared with the candidate's class alone."""
    both = tmp_path / "vcluster"
    shutil.copytree(EXAMPLE, both / "runs" / EXAMPLE.name)
    other_host_copy(both / "runs" / "other")
    baseline, candidate = load_values(both), load_values(EXAMPLE)
    assert set(baseline.host_class) == {"0ther0ne", candidate.host_class.iloc[0]}
    results = compare_tables(baseline, candidate)
    assert results and all(r["n_baseline"] == r["n_candidate"] for r in results)   # nothing pooled
    assert "regression" not in {r["verdict"] for r in results}
    assert compare_tables(load_values(both / "runs" / "other"), candidate) == []
