"""`crosstalk claims` for real on committed runs: the shipped example runs copied into a results
directory as if they were the user's (6 quick runs of the virtual cluster: 10-12 samples per
claim, enough for the exact 90 % interval of the median). A claim the runs bear out exits 0; a
paper claim they contradict (a site spec that inverts one: the fixture) exits 1 with a JUnit
failure; a contradicted check of the platform is printed but does not gate (it is no paper's
claim); the shipped examples themselves are judged with --examples but never change the exit
status."""
import shutil
import subprocess
from xml.etree import ElementTree as ET

import pytest
import yaml
from xt_testing import REPO, tool_env, venv_tool

from crosstalk import examples_root


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(examples_root() / "vcluster", root / "vcluster")
    return root


def claims(*args, env=None):
    return subprocess.run([venv_tool("crosstalk"), "claims", *args], capture_output=True, text=True,
                          env={**tool_env(), **(env or {})}, timeout=600)


def test_a_claim_the_runs_bear_out_exits_0(results, tmp_path):
    junit = tmp_path / "claims.xml"
    proc = claims("--claim", "gpcnet-incast-slows-bw", "--junit", str(junit),
                  env={"CROSSTALK_RESULTS_DIR": str(results)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "REPRODUCED    gpcnet-incast-slows-bw (check of this platform, from Chunduri et al. SC19, Fig 5)" \
        in proc.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "1" and suite.get("failures") == "0"


def test_a_contradicted_claim_exits_1_with_a_junit_failure(results, tmp_path):
    """The fixture: a congestion check inverted (the incast raises the bandwidth canary's
    bandwidth) and made a paper claim, as a site spec."""
    spec = yaml.safe_load((REPO / "experiments" / "congestion.yaml").read_text())
    (claim,) = [c for c in spec["claims"] if c["id"] == "gpcnet-incast-slows-bw"]
    claim = {**claim, "id": "incast-raises-bw", "kind": "paper", "test": {**claim["test"], "expect": "greater"}}
    spec["claims"] = [claim]
    site = tmp_path / "specs"
    site.mkdir()
    (site / "congestion.yaml").write_text(yaml.safe_dump(spec))
    junit = tmp_path / "claims.xml"
    proc = claims("--claim", "incast-raises-bw", "--junit", str(junit),
                  env={"CROSSTALK_RESULTS_DIR": str(results), "CROSSTALK_SPECS_DIR": str(site)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "CONTRADICTED  incast-raises-bw" in proc.stdout
    suite = ET.parse(junit).getroot()
    failures = suite.findall("testcase/failure")
    assert suite.get("failures") == "1" and len(failures) == 1
    assert failures[0].get("message").startswith("contradicted: ")


def test_a_contradicted_check_is_shown_but_does_not_gate(results):
    # on the examples a network-free load raises the probe latency: the control fails
    proc = claims("--claim", "casas-network-free-load-leaves-probe", env={"CROSSTALK_RESULTS_DIR": str(results)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CONTRADICTED  casas-network-free-load-leaves-probe (check of this platform" in proc.stdout


def test_the_shipped_examples_are_judged_apart_and_never_gate(tmp_path):
    proc = claims("--examples", env={"CROSSTALK_RESULTS_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(example)" in proc.stdout and "CONTRADICTED" in proc.stdout


def test_no_runs_is_one_line_and_status_2(tmp_path):
    proc = claims(env={"CROSSTALK_RESULTS_DIR": str(tmp_path)})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no runs of any system to judge" in proc.stderr
