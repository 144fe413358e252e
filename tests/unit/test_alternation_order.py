"""A job that alternates with a load counterbalances the order of its two conditions: rounds A B and
B A in turn, ending with A B (the job's main step runs under the load), so that a warm-up only the
first step pays, or a drift through the job, does not always fall on the same side of the pairs.
Read from the job script ReFrame's dry run writes for a NiMC STREAM case on the example site."""
import re
import shutil

from xt_testing import REPO, dry_run_job_script

from crosstalk.specs import load_spec
from crosstalk.vcluster import format_rate, parse_rate


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


def test_e6_rounds_alternate_which_link_comes_first(tmp_path):
    """E6's narrower link case runs its rounds in one LAMMPS process: the wider link's run and its
    own in either order in turn, ending with its own (the main step's meters read around it)."""
    script = dry_run_job_script(tmp_path, REPO / "inventories" / "vcluster", "energy.py",
                                "Energy62%link=2X%cpu_freq=default", "vcluster:mpi")
    between = script[script.index("xt_await 1"):script.index("xt_between_runs=$!")]
    # the job's first node: n1 with the cluster up, a dry run's placeholder without it
    sets = re.findall(r"link set (\S+) --rate (\w+)", between)
    rates = [rate for node, rate in sets if node == sets[0][0]]
    rounds = int(load_spec("energy").setting("rounds", "quick"))
    nominal = parse_rate(load_spec("energy").setting("link_nominal_rate", "quick"))
    wider, own = format_rate(nominal), format_rate(nominal // 2)      # 4X and 2X
    pairs = [rates[i:i + 2] for i in range(0, len(rates), 2)]
    assert len(pairs) == rounds >= 3, rates
    assert pairs[-1] == [wider, own] and pairs[-2] == [own, wider], rates
    assert all(p in ([wider, own], [own, wider]) for p in pairs), rates
