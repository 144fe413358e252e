"""The Snakemake analysis for real, on run directories committed from real runs: the local STREAM
runs in tests/fixtures/runs and the virtual cluster's quick-suite runs that its references were
calibrated from (results/vcluster/runs, named in reframe-tests/references/vcluster.yaml). Every
figure the specs list is drawn, the report is written, the two systems are drawn side by side, and
the workflow passes `snakemake --lint`."""
import shutil
import subprocess

import pytest
import yaml

from crosstalk.figures import FIGURES
from crosstalk.report import WORKFLOW, figure_ids
from xt_testing import REPO, tool_env, venv_tool

FIXTURES = REPO / "tests" / "fixtures" / "runs"
VCLUSTER_REFS = REPO / "reframe-tests" / "references" / "vcluster.yaml"


def calibration_runs():
    """The committed virtual-cluster runs the references came from."""
    calibration = yaml.safe_load(VCLUSTER_REFS.read_text())["crosstalk_calibration"]
    return sorted({run for entry in calibration.values() for run in entry["runs"]})


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    for system_dir in FIXTURES.iterdir():
        if system_dir.is_dir():
            shutil.copytree(system_dir, results / system_dir.name)
    for run in calibration_runs():
        shutil.copytree(REPO / run, results / "vcluster" / "runs" / (REPO / run).name,
                        ignore=shutil.ignore_patterns("output", "stage"))
    env = dict(tool_env(), CROSSTALK_RESULTS_DIR=str(results))
    proc = subprocess.run([venv_tool("crosstalk"), "report"], capture_output=True, text=True, env=env,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return results


def test_every_listed_figure_has_a_drawing_function():
    assert set(figure_ids()) <= set(FIGURES), set(figure_ids()) - set(FIGURES)


def test_every_experiment_of_the_virtual_cluster_is_collected(analysed):
    import pandas as pd
    from crosstalk.specs import all_specs
    table = pd.read_parquet(analysed / "table.parquet")
    vc = table[table.system == "vcluster"]
    assert set(vc.experiment) == {spec.name for spec in all_specs()}
    assert set(vc.partition) == {"mpi", "slurm"}


def test_every_figure_and_the_reports(analysed):
    page = (analysed / "report.html").read_text()
    for fig in figure_ids():
        png = analysed / "figures" / f"{fig}.png"
        assert png.read_bytes()[:4] == b"\x89PNG", fig
        assert (analysed / "figures" / f"{fig}.svg").stat().st_size > 1000
        assert f"figures/{fig}.png" in page
    for system in ("local", "vcluster"):
        assert (analysed / system / "report.html").exists()
    assert "local:default" in page and "vcluster:slurm" in page and "vcluster:mpi" in page
    assert "4 threads &gt; 2 cores" in page          # skip reasons reach the report


def test_systems_subset_via_config(analysed):
    """--config systems=[local] redraws the combined report from that system alone (runs last)."""
    argv = [venv_tool("snakemake"), "-s", str(WORKFLOW), "-d", str(REPO), "--cores", "2", "--forceall",
            "--quiet", "all", "--config", f"results={analysed}", "systems=[local]"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=tool_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (analysed / "report.html").read_text()
    assert "local:default" in page and "vcluster:" not in page


def test_workflow_lint_is_clean():
    proc = subprocess.run([venv_tool("snakemake"), "-s", str(WORKFLOW), "-d", str(REPO), "--lint"],
                          capture_output=True, text=True, env=tool_env(), timeout=300)
    assert proc.returncode == 0 and "good condition" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
