"""``reframe --dry-run`` (how a site engineer inspects the job scripts before running anything) goes
through every test module on the rendered configs of the example site and the virtual cluster:
every case is set up and writes its job script, or is skipped with its reason; none fails for
want of the outputs a dry run never makes (hooks that read them step aside)."""
import os
import re
import subprocess

import pytest
from xt_testing import REPO, venv_tool

from crosstalk.site.configrender import render

pytestmark = pytest.mark.slow
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("inventory, system", [("vcluster", "vcluster"), ("example-slurm", "example-slurm")])
def test_a_dry_run_of_every_test_writes_its_job_script(tmp_path, inventory, system):
    config = render(REPO / "inventories" / inventory, tmp_path / "config")[0]
    env = {**os.environ, "CROSSTALK_RUN_DIR": str(tmp_path / "run")}
    (tmp_path / "run").mkdir()
    proc = subprocess.run([venv_tool("reframe"), "-C", str(config), "--system", system,
                           "-c", str(REPO / "reframe-tests"), "-R", "--dry-run",
                           "-s", str(tmp_path / "stage"), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    out = ANSI.sub("", proc.stdout)
    results = re.findall(r"^\[ +(OK|FAIL|SKIP)", out, re.M)
    assert proc.returncode == 0 and "FAIL" not in results, out[-4000:] + proc.stderr[-2000:]
    assert results.count("OK") >= 10, out[-2000:]
    # every experiment wrote job scripts (the kernels' build fixtures write build scripts instead)
    written = {p.parent.name.split("_")[0] for p in (tmp_path / "stage").rglob("rfm_job.sh")}
    assert len(written) >= 8, written
