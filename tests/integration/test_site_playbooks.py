"""The site playbooks against the virtual cluster, for real (issue 7, "Proof here").

``playbooks/site.yml``, ``run.yml`` and ``collect.yml`` run on the login node ``n1`` of
``inventories/vcluster`` (group ``login``; Ansible's modules run inside the node's namespaces through
the ``python-n1`` wrapper, which enters them with nsenter). site.yml: ``--check`` first, then for
real, then a second run that changes nothing. run.yml: ``--check`` starts nothing, then a real
``crosstalk run -e stream --partition mpi`` on n1 (ReFrame, mpirun across the nodes) whose run
directory is brought back to the controller. collect.yml: while that run is going it leaves the
run alone; afterwards nothing new, then a deleted run reported by ``--check`` and fetched again.

The login node shares this machine's file system, so its checkout is this repository (other
users run on it too): the drift site.yml repairs is only the mode of the installed ReFrame
configuration (its content, which concurrent `crosstalk run`s re-render, is never touched), and
the runs stay out of results/ (node and controller directories under build/).
"""
import json
import re
import shutil
import stat
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from xt_testing import REPO, venv_tool

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.cluster]

WORK = REPO / "build" / "test-site-playbooks"
INVENTORY = REPO / "inventories" / "vcluster"
CONFIG = REPO / "reframe-tests" / "config" / "vcluster.yaml"
INSTALL = "reframe_config : Install the ReFrame configuration"
PARTITIONS = ["mpi"]
RUN_TASK = "Run crosstalk (ReFrame -r) under the scheduler"

TASK_RE = re.compile(r"^TASK \[(.+?)\] \*+$", re.M)
STATUS_RE = re.compile(r"^(ok|changed|failed|fatal|included): \[n1(?: -> [\w.-]+)?\]", re.M)
RECAP_RE = re.compile(r"^n1\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


class Play:
    """One ansible-playbook run: return code, output, recap and each task's statuses on n1."""

    def __init__(self, proc):
        self.rc, self.out = proc.returncode, proc.stdout + proc.stderr
        recap = RECAP_RE.search(proc.stdout)
        self.ok, self.changed, self.unreachable, self.failed = (
            map(int, recap.groups()) if recap else (None,) * 4)
        parts = TASK_RE.split(proc.stdout)
        self.tasks = {}
        for name, body in zip(parts[1::2], parts[2::2]):
            self.tasks.setdefault(name, []).extend(STATUS_RE.findall(body))

    def assert_clean(self, what):
        assert self.rc == 0 and self.failed == 0 and self.unreachable == 0, \
            f"{what}: rc={self.rc}\n{self.out[-4000:]}"


@pytest.fixture(scope="module")
def site(vcluster, run_env_module):
    """Directories under build/, the variables every play gets, and a playbook runner."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    node_results, controller = WORK / "node-results", WORK / "controller-results"
    (WORK / "vars.json").write_text(json.dumps({
        "crosstalk_results_dir": str(controller),
        # Explore mode on the node too (n1's /tmp is its own, so the controller's empty
        # references directory would not be seen there): this checks the plays, not the machine.
        "crosstalk_run_env": {"CROSSTALK_RESULTS_DIR": str(node_results),
                              "CROSSTALK_REFERENCES_DIR": str(WORK / "no-references")},
        "crosstalk_run_experiments": ["stream"],
        # mpirun across the nodes; the Slurm partition would wait behind other users' jobs
        "crosstalk_run_partitions": PARTITIONS,
        "crosstalk_run_poll": 5,
    }))
    env = dict(run_env_module, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    # The installed configuration exists before the first play, as after any `crosstalk run`: the
    # drift test changes its mode, whichever test ran before this module (or none).
    subprocess.run([venv_tool("crosstalk"), "config", "render", "--inventory", str(INVENTORY)],
                   check=True, capture_output=True, env=env, cwd=REPO, timeout=120)

    def playbook(name, *args, timeout=300):
        argv = [venv_tool("ansible-playbook"), "-i", str(INVENTORY), str(REPO / "playbooks" / name),
                "-e", f"@{WORK / 'vars.json'}", *args]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO,
                              timeout=timeout)
        label = "-".join([name.removesuffix(".yml"), *[a.strip("-") for a in args]])
        n = len(list(WORK.glob("*.log")))
        (WORK / f"{n:02d}-{label}.log").write_text(proc.stdout + proc.stderr)
        return Play(proc)

    yield {"playbook": playbook, "node": node_results / "vcluster" / "runs",
           "controller": controller / "vcluster" / "runs", "env": env}
    if mode(CONFIG) != 0o644:           # a failed site.yml left the drift behind
        CONFIG.chmod(0o644)


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_site_check_then_for_real_then_no_change(site):
    playbook = site["playbook"]
    # The reference: the configuration rendered from the inventory, independently of the play.
    render = subprocess.run([venv_tool("crosstalk"), "config", "render", "--inventory",
                             str(INVENTORY), "--output", str(WORK / "render")],
                            capture_output=True, text=True, env=site["env"], cwd=REPO, timeout=120)
    assert render.returncode == 0, render.stderr
    expected = (WORK / "render" / "vcluster.yaml").read_text()
    assert "name: vcluster" in expected and "name: slurm" in expected and "name: mpi" in expected

    # Drift site.yml must repair: the installed configuration's mode (the role installs 0644).
    # Concurrent `crosstalk run`s rewrite the file in place and keep the mode: nothing undoes it.
    CONFIG.chmod(0o600)

    # --check: reports the drift as a change, and changes nothing.
    check = playbook("site.yml", "--check")
    check.assert_clean("site.yml --check")
    assert check.tasks[INSTALL] == ["changed"] and check.changed == 1, check.out[-3000:]
    assert mode(CONFIG) == 0o600, "site.yml --check changed the installed configuration"

    # For real: repaired, and the installed configuration is the inventory's.
    real = playbook("site.yml")
    real.assert_clean("site.yml")
    assert real.tasks[INSTALL] == ["changed"] and real.changed == 1, real.out[-3000:]
    assert mode(CONFIG) == 0o644
    assert CONFIG.read_text() == expected
    # the tasks that do the work ran (not skipped): facts, packages, checkout, render, install
    for task in ("Gathering Facts", "crosstalk_login : Install the login node's distribution packages",
                 "crosstalk_login : Look for the crosstalk checkout and command",
                 "reframe_config : Render the ReFrame configuration", INSTALL):
        assert real.tasks.get(task) and set(real.tasks[task]) <= {"ok", "changed"}, task

    # A second run: no change.
    again = playbook("site.yml")
    again.assert_clean("site.yml (second run)")
    assert again.changed == 0, again.out[-3000:]
    assert again.ok == real.ok, (real.ok, again.ok)
    assert mode(CONFIG) == 0o644 and CONFIG.read_text() == expected


@pytest.fixture(scope="module")
def stream_run(site):
    """run.yml --check, then run.yml for real (crosstalk run -e stream on n1); while that run is
    going, collect.yml."""
    playbook = site["playbook"]
    check = playbook("run.yml", "--check")
    node_after_check = sorted(site["node"].glob("*")) if site["node"].exists() else []
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(playbook, "run.yml", timeout=900)
        deadline = time.monotonic() + 300
        while not (site["node"].exists() and any(site["node"].iterdir())):
            if running.done() or time.monotonic() > deadline:
                pytest.fail("run.yml made no run directory on the node: " + (
                    running.result().out[-4000:] if running.done() else "none after 300 s"))
            time.sleep(0.5)
        (run_dir,) = site["node"].iterdir()
        during = playbook("collect.yml")
        during_state = {"run_id": run_dir.name,
                        "finished": (run_dir / "exit_status").exists(),
                        "fetched": sorted(site["controller"].glob("*"))
                        if site["controller"].exists() else []}
        real = running.result()
    return {"check": check, "node_after_check": node_after_check, "real": real,
            "collect_during": during, "during": during_state}


def test_run_check_starts_nothing(stream_run):
    check = stream_run["check"]
    check.assert_clean("run.yml --check")
    assert check.changed == 0, check.out[-3000:]
    assert stream_run["node_after_check"] == []


def test_run_brings_the_report_back(stream_run, site):
    real = stream_run["real"]
    real.assert_clean("run.yml")
    assert real.tasks[RUN_TASK] == ["changed"]
    (node_run,) = site["node"].iterdir()
    (fetched,) = site["controller"].iterdir()
    assert fetched.name == node_run.name

    report = json.loads((fetched / "report.json").read_text())
    assert report == json.loads((node_run / "report.json").read_text())
    cases = [c for c in report["runs"][-1]["testcases"] if c["name"].startswith("StreamTriad")]
    # STREAM makes no MPI call: under the second MPI it is skipped (stream.yaml's one_environment;
    # ReFrame writes the reason to its log only)
    assert all(c["result"] == "skip" for c in cases if c["environ"] != "gnu-openmpi")
    cases = [c for c in cases if c["environ"] == "gnu-openmpi"]
    assert {(c["partition"], c["threads"]) for c in cases} == \
        {(p, t) for p in PARTITIONS for t in (1, 2)}
    for case in cases:
        assert case["result"] == "pass", case["fail_reason"]
        value = case["perfvalues"][f"vcluster:{case['partition']}:triad_bw"][0]
        assert value > 100, "Triad below 100 MB/s cannot be a real memory bandwidth"
    # crosstalk ran on the login node n1 (the provenance names the host it ran on)
    prov = json.loads((fetched / "provenance.json").read_text())
    assert prov["host"] == "n1" and prov["system"] == "vcluster" and prov["nodes"] == ["n1", "n2", "n3", "n4"]
    assert (fetched / "exit_status").read_text() == "0\n"
    assert list((fetched / "perflogs").rglob("StreamTriad*.log"))
    # the archives are gone on both sides
    assert not (REPO / "build" / f"crosstalk-run-{fetched.name}.tgz").exists()
    assert not (site["controller"] / ".incoming").exists()


def test_collect_leaves_a_run_in_progress_alone(stream_run):
    during, state = stream_run["collect_during"], stream_run["during"]
    during.assert_clean("collect.yml (during the run)")
    assert not state["finished"], "the run ended before collect.yml did: nothing was proven"
    assert state["fetched"] == [] and during.changed == 0, during.out[-3000:]
    assert re.search(rf"not finished .*{state['run_id']}", during.out), during.out[-3000:]


def test_collect_fetches_what_the_controller_lacks(stream_run, site):
    stream_run["real"].assert_clean("run.yml")
    playbook = site["playbook"]
    (node_run,) = site["node"].iterdir()
    fetched = site["controller"] / node_run.name

    nothing_new = playbook("collect.yml")
    nothing_new.assert_clean("collect.yml")
    assert nothing_new.changed == 0, nothing_new.out[-3000:]

    shutil.rmtree(fetched)
    check = playbook("collect.yml", "--check")
    check.assert_clean("collect.yml --check")
    assert check.changed == 1 and not fetched.exists(), check.out[-3000:]
    assert not list((REPO / "build").glob(f"crosstalk-run-{node_run.name}.tgz"))

    again = playbook("collect.yml")
    again.assert_clean("collect.yml (after deleting the run)")
    assert again.changed >= 1 and again.tasks["fetch_run : Fetch the archive"] == ["changed"]
    assert sorted(p.relative_to(fetched) for p in fetched.rglob("*")) == \
        sorted(p.relative_to(node_run) for p in node_run.rglob("*"))
    assert (fetched / "report.json").read_bytes() == (node_run / "report.json").read_bytes()

    settled = playbook("collect.yml")
    settled.assert_clean("collect.yml (third run)")
    assert settled.changed == 0, settled.out[-3000:]
