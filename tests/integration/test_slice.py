"""The first vertical slice, for real: xt-stream -> ReFrame -> references -> run report -> Snakemake
-> report.html with the STREAM figure; plus gate mode and reference calibration."""
import json
import subprocess

import pytest
import yaml
from xt_testing import site_specs, venv_tool

pytestmark = [pytest.mark.slow, pytest.mark.machine("local")]
#: The quick profile's STREAM with shorter loops, as a site's spec (CROSSTALK_SPECS_DIR): the same
#: arrays (far above the last-level cache), two rounds of two timed iterations. The gate's margin
#: is the calibration's 0.6 either side, against this VM's two modes 0.74x apart.
SETTINGS = {"stream": {"rounds": 2, "ntimes": 3}}


def crosstalk(*args, env, check=True):
    proc = subprocess.run([venv_tool("crosstalk"), *args], capture_output=True, text=True, env=env,
                          timeout=1200)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def slice_env(tmp_path_factory, run_env_module):
    results = tmp_path_factory.mktemp("results")
    refs = tmp_path_factory.mktemp("refs")
    specs = site_specs(tmp_path_factory.mktemp("specs"), SETTINGS)
    return dict(run_env_module, CROSSTALK_RESULTS_DIR=str(results), CROSSTALK_REFERENCES_DIR=str(refs),
                CROSSTALK_SPECS_DIR=str(specs))


@pytest.fixture(scope="module")
def stream_run(slice_env):
    from pathlib import Path
    crosstalk("run", "--system", "local", "--experiments", "stream", env=slice_env)
    (run_dir,) = (Path(slice_env["CROSSTALK_RESULTS_DIR"]) / "local" / "runs").iterdir()
    return run_dir


def test_run_leaves_report_perflogs_and_provenance(stream_run):
    report = json.loads((stream_run / "report.json").read_text())
    cases = [c for c in report["runs"][-1]["testcases"] if not c["fixture"]]
    assert {c["threads"] for c in cases} == {1, 2}
    for case in cases:
        assert case["result"] == "pass", case["fail_reason"]
        value, ref, *_ = case["perfvalues"]["local:default:triad_bw"]
        assert value > 100, "Triad below 100 MB/s cannot be a real memory bandwidth"
        assert ref == 0  # explore mode: no reference file for 'local' in this test
        # Groves' rate from the average time: never above the best rate of the same iterations
        avg = case["perfvalues"]["local:default:triad_bw_avg"][0]
        assert 0 < avg <= value
    assert list((stream_run / "perflogs").rglob("StreamTriad*.log"))
    prov = json.loads((stream_run / "provenance.json").read_text())
    assert prov["system"] == "local" and prov["profile"] == "quick"
    assert len(prov["specs"]["stream"]["sha256"]) == 64
    # The two-thread job measured one thread too, in turn every round: one value per round of
    # each, so stream-threads-saturate pairs them round by round; the one-thread job did not.
    rounds = {c["threads"]: c.get("round_values", {}) for c in cases}
    assert len(rounds[2]["triad_bw_one_thread"]) == len(rounds[2]["triad_bw"]) > 1
    assert "triad_bw_one_thread" not in rounds[1]


def test_report_has_the_stream_figure(stream_run, slice_env):
    # SVG besides PNG, linked, when asked for; this system's pages alone (the shipped examples'
    # are tests/integration/test_report_pipeline.py's)
    crosstalk("report", "--svg", "--no-examples", env=slice_env)
    results = stream_run.parents[2]
    page = (results / "local" / "report.html").read_text()
    png = results / "figures" / "stream_triad.png"      # drawn once, shown by every page
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (results / "figures" / "stream_triad.svg").exists() and "../figures/stream_triad.svg" in page
    assert "../figures/stream_triad.png" in page and "Table 2.4" in page
    assert "triad_bw" in page and "StreamTriad" in page
    assert (results / "report.html").exists() and (results / "table.parquet").exists()


def test_calibrated_references_pass_and_impossible_ones_fail_in_gate_mode(stream_run, slice_env):
    refs_dir = slice_env["CROSSTALK_REFERENCES_DIR"]
    # A wide margin: this checks the mechanism, not this VM's run-to-run noise (2-thread STREAM
    # has two modes here, 32 and 43 GB/s).
    cal = crosstalk("refs", "calibrate", "--system", "local", "--runs", str(stream_run), "--min-margin",
                    "0.6", env=slice_env)
    # One file for this machine's host class (the one the run recorded).
    host_class = json.loads((stream_run / "provenance.json").read_text())["host_class"]["id"]
    ref_file = f"{refs_dir}/local/{host_class}.yaml"
    assert cal.stdout.split() == [ref_file]
    refs = yaml.safe_load(open(ref_file))
    assert str(stream_run) in json.dumps(refs["crosstalk_calibration"])
    # indexed by $partition, $environ (each MPI its own reference), then the test's parameters
    (by_threads,) = refs["StreamTriad"]["local:default"].values()
    entry = by_threads[1]["triad_bw"]
    assert entry[0] > 100 and entry[1] < 0 and entry[3] == "MB/s"

    # Gate with calibrated references: a second run passes (tolerance covers run-to-run noise).
    ok = crosstalk("run", "--system", "local", "-e", "stream", "--gate", env=slice_env, check=False)
    assert ok.returncode == 0, ok.stdout[-2000:]

    # An impossible reference (100x the measured bandwidth, 5 % tolerance) must fail the gate.
    for threads in by_threads.values():
        threads["triad_bw"][0] *= 100
    with open(ref_file, "w") as fp:
        yaml.safe_dump(refs, fp)
    # (the one-thread case is enough to fail: the gate is the same for every case)
    bad = crosstalk("run", "--system", "local", "-e", "stream", "--gate", "--", "-n", "^StreamTriad%threads=1%",
                    env=slice_env, check=False)
    assert bad.returncode != 0
    assert "triad_bw" in bad.stdout + bad.stderr
