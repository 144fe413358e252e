"""Actions between the runs of one process (reframe-tests/xtlib/betweenruns.py): the job script's
background side does run N's actions when the program (LAMMPS' in.lj with before_run, through
inputs/between_runs.sh) reaches run N, and the program waits for them; a failed action ends the
wait at once. Real bash, a real LAMMPS where installed."""
import os
import shutil
import subprocess
import sys

import pytest
from xt_testing import REPO

sys.path.insert(0, str(REPO / "reframe-tests"))
from crosstalk.vcluster.balance import cgroup_cpu_root, outside_node_quota  # noqa: E402
from xtlib.betweenruns import HOOK, between_runs_lines  # noqa: E402
from xtlib.lammps import INPUTS, lammps_args, loop_times  # noqa: E402


def _job(tmp_path, actions, program):
    """Run the job-script lines around ``program`` (a shell line) in ``tmp_path`` with bash."""
    shutil.copy(os.path.join(INPUTS, f"{HOOK}.sh"), tmp_path)
    prerun, postrun = between_runs_lines(actions)
    return subprocess.run(["bash", "-c", "\n".join([*prerun, program, *postrun])], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_lammps_waits_for_each_runs_actions(tmp_path):
    if shutil.which("lmp") is None:
        pytest.skip("lmp (LAMMPS) is not installed")
    shutil.copy(os.path.join(INPUTS, "in.lj"), tmp_path)
    # each action logs how many runs LAMMPS had finished when it ran, and holds the next run 0.3 s
    actions = [[f'echo "{run} $(grep -c "^Loop time" log.lammps)" >> order.txt', "sleep 0.3"] for run in (1, 2, 3, 4)]
    argv = " ".join(["lmp", *lammps_args(3, 10, rounds=4, screen=False, before_run=HOOK)])
    res = _job(tmp_path, actions, argv)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "order.txt").read_text().split("\n")[:-1] == ["1 0", "2 1", "3 2", "4 3"]
    assert len(loop_times(str(tmp_path / "log.lammps"), 4).evaluate()) == 4


def test_a_failed_action_ends_the_wait(tmp_path):
    """Run 2's action fails (as a link that cannot be set, `|| exit 1`): the program's wait for run
    2 fails at once instead of after 600 s, and the later runs are not waited for either."""
    actions = [["true"], ["false || exit 1"], ["echo never > ran.3"]]
    program = ('for run in 1 2 3; do sh between_runs.sh "$run"; echo "run $run: $?" >> waits.txt; done')
    res = _job(tmp_path, actions, program)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "waits.txt").read_text().split("\n")[:-1] == ["run 1: 0", "run 2: 1", "run 3: 1"]
    assert (tmp_path / HOOK / "failed").exists() and not (tmp_path / "ran.3").exists()


def test_a_finished_sequence_is_not_a_failure(tmp_path):
    res = _job(tmp_path, [["true"]], "sh between_runs.sh 1")
    assert res.returncode == 0 and not (tmp_path / HOOK / "failed").exists(), res.stderr


def test_outside_node_quota_leaves_a_crosstalk_cgroup(tmp_path):
    """A command started inside a virtual node's CPU cgroup (crosstalk-<cluster>/<node>) runs in
    the root cgroup: its start-up does not pay the node's quota. Elsewhere it runs where it is."""
    found = cgroup_cpu_root()
    if os.geteuid() != 0 or not found or not os.access(found[1], os.W_OK):
        pytest.skip("needs root and a writable cgroup CPU controller")
    version, root = found
    node = root / f"crosstalk-xtunit{os.getpid()}" / "n1"
    node.mkdir(parents=True)
    try:
        show = 'grep -E "^[0-9]+:(cpu,cpuacct|cpu|):" /proc/self/cgroup'
        inside = subprocess.run(["sh", "-c", f'echo $$ > "{node}/cgroup.procs" && {show} && exec "$@"', "sh",
                                 *outside_node_quota(["sh", "-c", show])],
                                capture_output=True, text=True, timeout=30)
        assert inside.returncode == 0, inside.stderr
        before, after = inside.stdout.split("\n")[:2]
        assert "/crosstalk-xtunit" in before and "/crosstalk-" not in after, inside.stdout
        mine = subprocess.run(outside_node_quota(["echo", "a b"]), capture_output=True, text=True, timeout=30)
        assert mine.stdout == "a b\n"
    finally:
        node.rmdir()
        node.parent.rmdir()
