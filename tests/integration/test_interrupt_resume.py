"""Ctrl-C and resume, for real on a virtual cluster (the spare one, tests/vcluster_fixtures.py): E4
congestion (it shapes links) on both partitions, interrupted twice mid-job and resumed until done.

1. ``crosstalk run`` is interrupted (SIGINT to its process group, as a terminal's Ctrl-C) while a
   kernel of the ``mpi`` partition (ReFrame's local scheduler, mpirun over the nodes) runs:
   ReFrame's abort path cancels it.
2. ``crosstalk run --resume`` is interrupted twice (force) while a Slurm job of the ``slurm``
   partition runs: ReFrame is killed without cancelling anything, so crosstalk's clean-up must.
3. a second resume finishes the run.
After each interrupt: exit 130, no job in squeue, no process of the run on any node, links at
nominal, status ``interrupted`` and the partial results collectable. At the end the tidy table
has every case ReFrame concretises exactly once, none aborted.
"""
import os
import re
import shutil
import signal
import subprocess
import time
import uuid

import pytest
from vcluster_fixtures import REPO, kernels_under, skip_unless_root
from xt_testing import OPEN_MPI_ONLY, site_specs, venv_tool

from crosstalk.analysis.ingest import load_run
from crosstalk.run import leftovers, runstatus

pytestmark = pytest.mark.slow
#: Seconds for a job to show up; the quick congestion profile reaches its first kernel in ~20 s.
JOB_WAIT = 300
#: One canary case per partition: xt-congestion on shaped links on both partitions is what an
#: interrupt must clean up (jobs, processes, link shaping). The LAMMPS victims added a minute of
#: resume, the second congestor case (all four) another; neither is cleaned up differently.
CANARIES = ("-n", "^CongestionCanary%congestors=p2p_incast%")
#: Paired rounds per canary job (a site spec; the quick profile has four): the final resume's jobs
#: must pass their portable checks (incast slows the canaries: 2.5-4.2x bandwidth, 74-382x
#: Allreduce), judged on the median of the rounds, which for two is their mean: one disturbed round
#: (0.56 once under load) cannot take it below 1. Each interrupt comes at a kernel's start, with
#: the job's rounds still ahead.
SETTINGS = {"congestion": {"rounds": 2}}


def _start(argv, env, log):
    """A crosstalk command as a terminal would start it: its own process group, output to ``log``."""
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _wait_for_kernel(proc, stage_dir, log_path):
    """Wait until an xt-* kernel works under ``stage_dir`` (a job is running)."""
    deadline = time.monotonic() + JOB_WAIT
    while time.monotonic() < deadline:
        assert proc.poll() is None, log_path.read_text()[-3000:]
        if kernels_under(stage_dir):
            return
        time.sleep(0.2)
    pytest.fail(f"no kernel ran under {stage_dir} within {JOB_WAIT} s")


def _interrupt(proc, times=1):
    started = time.monotonic()
    for _ in range(times):
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.1)
    assert proc.wait(timeout=240) == 128 + signal.SIGINT
    return time.monotonic() - started


def _assert_clean(vc, run_dir, stage_root):
    queue = vc.exec(vc.nodes[0], ["squeue", "-h"], capture_output=True, text=True, timeout=30)
    assert queue.returncode == 0 and queue.stdout.strip() == "", queue.stdout
    assert leftovers.run_processes(stage_root) == []
    kernels = subprocess.run(["pgrep", "-f", str(stage_root)], capture_output=True, text=True,
                             timeout=10).stdout
    assert kernels.strip() == ""
    links = vc.link_state()
    assert all(links[n]["rate_bps"] == links[n]["nominal_bps"] == links[n]["tc_rate_bps"]
               and links[n]["width"] == "4X" for n in vc.nodes), links
    assert runstatus.read(run_dir)["state"] == "interrupted"
    load_run(run_dir)                    # partial results collect without error


def _concretised_cases(vc, system, env):
    """``{(test case, partition)}`` ReFrame would run for this spec on both partitions."""
    argv = [venv_tool("reframe"), "-C", str(REPO / f"reframe-tests/config/{system}.yaml"),
            "-c", str(REPO / "reframe-tests/congestion.py"), "--system", system, *CANARIES, "-lC"]
    out = vc.exec(vc.nodes[0], argv, env=env, cwd=str(REPO), capture_output=True, text=True,
                  timeout=120).stdout
    return {(m["name"], m["part"]) for m in
            re.finditer(rf"^- (?P<name>.+?) /[0-9a-f]+ @{system}:(?P<part>\w+)\+", out, re.M)}


@pytest.mark.root
@pytest.mark.cluster
def test_interrupt_twice_then_resume_to_completion(spare_cluster, run_env_module, tmp_path):
    """On the spare cluster (tests/vcluster_fixtures.py): the run is changed, not only read."""
    skip_unless_root()
    vc, system = spare_cluster.vc, spare_cluster.name
    results = REPO / "build" / "test-interrupt" / uuid.uuid4().hex[:8]  # nodes have a private /tmp
    specs = site_specs(results / "specs", SETTINGS)
    env = dict(run_env_module, CROSSTALK_RESULTS_DIR=str(results))
    crosstalk = venv_tool("crosstalk")
    try:
        log1 = tmp_path / "run.log"
        with open(log1, "w") as log:
            proc = _start([crosstalk, "run", "--system", str(spare_cluster.inventory), "--specs", str(specs),
                           "-e", "congestion", "--", *OPEN_MPI_ONLY, *CANARIES], env, log)
            deadline = time.monotonic() + 120
            while not list(results.glob(f"{system}/runs/*")) and time.monotonic() < deadline:
                time.sleep(0.2)
            (run_dir,) = results.glob(f"{system}/runs/*")
            stage_root = REPO / "build/reframe" / system / "stage" / run_dir.name
            _wait_for_kernel(proc, stage_root / system / "mpi", log1)
            took = _interrupt(proc)
        text = log1.read_text()
        assert "SIGINT received: stopping the run" in text and "force-stopping" not in text
        assert f"crosstalk run --resume {run_dir.name}" in text
        _assert_clean(vc, run_dir, stage_root)
        print(f"graceful interrupt -> clean state: {took:.1f} s")

        log2 = tmp_path / "resume1.log"
        with open(log2, "w") as log:
            proc = _start([crosstalk, "run", "--resume", run_dir.name], env, log)
            _wait_for_kernel(proc, stage_root / "attempt-2" / system / "slurm", log2)
            took = _interrupt(proc, times=2)
        text = log2.read_text()
        assert "second signal: force-stopping" in text, text[-3000:]
        assert re.search(r"stopped by force and clean .* Slurm job\(s\) cancelled", text), text[-2000:]
        _assert_clean(vc, run_dir, stage_root)
        print(f"forced interrupt -> clean state: {took:.1f} s")

        started = time.monotonic()
        done = subprocess.run([crosstalk, "run", "--resume", run_dir.name], env=env, timeout=1800,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        print(f"final resume: {time.monotonic() - started:.1f} s")
        status = runstatus.read(run_dir)
        assert status["state"] == "finished" and len(status["attempts"]) == 3

        _, cases = load_run(run_dir)
        seen = [(c["case"], c["partition"]) for c in cases]
        assert len(seen) == len(set(seen)), "a case is in the table twice"
        assert set(seen) == _concretised_cases(vc, system, env)
        assert not [c for c in cases if c["result"] not in ("pass", "skip")], cases
    finally:
        shutil.rmtree(results, ignore_errors=True)


@pytest.mark.root
@pytest.mark.cluster
def test_a_second_run_on_the_same_cluster_is_refused(spare_cluster, run_env_module, tmp_path):
    """Two runs on one virtual cluster would measure each other: the second is refused, in one
    line naming the first, and leaves no run directory."""
    skip_unless_root()
    system = spare_cluster.name
    results = REPO / "build" / "test-concurrent" / uuid.uuid4().hex[:8]
    env = dict(run_env_module, CROSSTALK_RESULTS_DIR=str(results))
    argv = [venv_tool("crosstalk"), "run", "--system", str(spare_cluster.inventory), "-e", "stream"]
    try:
        with open(tmp_path / "first.log", "w") as log:
            first = _start(argv, env, log)
            deadline = time.monotonic() + 120
            while not list(results.glob(f"{system}/runs/*")) and time.monotonic() < deadline:
                time.sleep(0.2)
            (run_dir,) = results.glob(f"{system}/runs/*")
            second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300,
                                    stdin=subprocess.DEVNULL)
            assert first.poll() is None, "the first run ended before the second started: no test"
            _interrupt(first)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"in use by crosstalk run {run_dir.name} (pid {first.pid})" in lines[0]
        assert [p.name for p in results.glob(f"{system}/runs/*")] == [run_dir.name]
    finally:
        shutil.rmtree(results, ignore_errors=True)


@pytest.mark.machine("local")
def test_ctrl_c_on_the_local_system(run_env_module, tmp_path):
    """The same stop on a ``local`` system (ReFrame's local scheduler on this host, no cluster):
    exit 130, no kernel left, the run resumable."""
    results = tmp_path / "results"
    env = dict(run_env_module, CROSSTALK_RESULTS_DIR=str(results))
    log_path = tmp_path / "local.log"
    with open(log_path, "w") as log:
        proc = _start([venv_tool("crosstalk"), "run", "--system", "local", "-e", "stream"], env, log)
        deadline = time.monotonic() + 120
        while not list(results.glob("local/runs/*")) and time.monotonic() < deadline:
            time.sleep(0.2)
        (run_dir,) = results.glob("local/runs/*")
        stage_root = REPO / "build/reframe/local/stage" / run_dir.name
        _wait_for_kernel(proc, stage_root, log_path)
        _interrupt(proc)
    assert leftovers.run_processes(stage_root) == []
    assert runstatus.read(run_dir)["state"] == "interrupted"
    assert f"crosstalk run --resume {run_dir.name}" in log_path.read_text()
    load_run(run_dir)
