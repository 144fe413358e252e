"""Rounds inside one job (reframe-tests/xtlib): LAMMPS runs the LJ melt K times in one process
(inputs/in.lj), and a probe's exchanges are cut into K blocks in time; each is one sample."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import reframe.utility.sanity as sn
from xt_testing import REPO

sys.path.insert(0, str(REPO / "reframe-tests"))
from active_probing import block_medians  # noqa: E402

from xtlib.lammps import INPUTS, lammps_args, loop_times  # noqa: E402


@pytest.mark.parametrize("rounds", [1, 3])
def test_lammps_runs_the_melt_once_per_round(tmp_path, rounds):
    if shutil.which("lmp") is None:
        pytest.skip("lmp (LAMMPS) is not installed")
    shutil.copy(os.path.join(INPUTS, "in.lj"), tmp_path)
    argv = ["lmp", *lammps_args(4, 20, rounds=rounds, screen=False)]
    subprocess.run(argv, cwd=tmp_path, check=True, timeout=120, capture_output=True)
    times = loop_times(str(tmp_path / "log.lammps"), rounds).evaluate()
    assert len(times) == rounds and all(t > 0 for t in times)
    with pytest.raises(sn.SanityError, match=f"expected {rounds + 1} LAMMPS run"):
        loop_times(str(tmp_path / "log.lammps"), rounds + 1).evaluate()


def test_one_round_leaves_the_command_line_as_it_was():
    assert lammps_args(10, 100) == ["-in", "in.lj", "-var", "box", "10", "-var", "steps", "100",
                                    "-log", "log.lammps"]
    assert lammps_args(10, 100, "x.log", rounds=2, screen=False)[-6:] == ["x.log", "-var", "rounds", "2",
                                                                         "-screen", "none"]


def _probe_output(path, per_pair):
    """xt-impactb's sample records: ``per_pair[p]`` the half round trips of pair p, in order."""
    with open(path, "w") as fp:
        for pair, values in enumerate(per_pair):
            for k, v in enumerate(values):
                fp.write(json.dumps({"kernel": "xt-impactb", "type": "sample", "metric": "half_rtt",
                                     "value": v, "unit": "us", "iteration": k, "pair": pair}) + "\n")


def test_probe_blocks_follow_the_exchanges_in_time(tmp_path):
    out = tmp_path / "probe.out"
    # two pairs, six exchanges each: blocks of exchanges 0-1, 2-3, 4-5 over both pairs
    _probe_output(out, [[1, 2, 10, 11, 100, 101], [3, 4, 12, 13, 102, 103]])
    assert block_medians(str(out), 3).evaluate() == [2.5, 11.5, 101.5]
    assert block_medians(str(out), 1).evaluate() == [11.5]
    with pytest.raises(sn.SanityError, match="6 exchanges cannot make 7 rounds"):
        block_medians(str(out), 7).evaluate()
