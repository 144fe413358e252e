"""A job that alternates with a load counterbalances the order of its two conditions: rounds A B and
B A in turn, ending with A B (the job's main step runs under the load), so that a warm-up only the
first step pays, or a drift through the job, does not always fall on the same side of the pairs.
Read from the job script ReFrame's dry run writes for a NiMC STREAM case on the example site."""
import re
import shutil

from xt_testing import REPO, dry_run_job_script

from crosstalk.specs import load_spec


def test_rounds_alternate_which_condition_comes_first(tmp_path):
    inventory = tmp_path / "example-slurm"
    shutil.copytree(REPO / "inventories" / "example-slurm", inventory)
    script = dry_run_job_script(tmp_path, inventory, "nimc_stream.py", "NimcStream%injection=max%cores=all%",
                                "example-slurm:debug")
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
