"""A job that alternates with a load counterbalances the order of its two conditions: rounds A B and
B A in turn, ending with A B (the job's main step runs under the load), so that a warm-up only the
first step pays, or a drift through the job, does not always fall on the same side of the pairs.
Read from the job script ReFrame's dry run writes for a NiMC STREAM case on the example site."""
import os
import re
import shutil
import subprocess

from xt_testing import REPO, venv_tool

from crosstalk.site.configrender import render
from crosstalk.specs import load_spec


def test_rounds_alternate_which_condition_comes_first(tmp_path):
    inventory = tmp_path / "example-slurm"
    shutil.copytree(REPO / "inventories" / "example-slurm", inventory)
    config = render(inventory, tmp_path / "config")[0]
    env = {**os.environ, "CROSSTALK_RUN_DIR": str(tmp_path / "run"), "CROSSTALK_STAGE_DIR": str(tmp_path / "stage")}
    (tmp_path / "run").mkdir()
    proc = subprocess.run([venv_tool("reframe"), "-C", str(config), "--system", "example-slurm:debug",
                           "-c", str(REPO / "reframe-tests" / "nimc_stream.py"), "-p", "^gnu-openmpi$",
                           "-n", "NimcStream%injection=max%cores=all%", "--dry-run"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (script,) = [p.read_text() for p in (tmp_path / "stage").rglob("NimcStream_*/rfm_job.sh")]
    rounds = int(load_spec("nimc-stream").setting("rounds", "quick"))
    assert rounds >= 3          # enough rounds for both orders to appear
    # the measured steps in script order: alone.k / loaded.k files, the last loaded step the main one
    steps = [m.group(1) for line in script.splitlines() if "xt-stream" in line
             for m in [re.search(r"> ((?:alone|loaded)\.\d+)\.out", line)] if m] + ["main"]
    want = []
    for k in range(rounds - 1):
        pair = [f"alone.{k}", f"loaded.{k}"]
        want += pair[::-1] if (rounds - 1 - k) % 2 else pair
    assert steps == want + [f"alone.{rounds - 1}", "main"], steps
