"""pytest fixtures for the virtual cluster. Import them into a conftest or test module:
``from vcluster_fixtures import vcluster``.

``vcluster``: the shared 4-node cluster of inventories/vcluster, session-scoped. Brought up if
needed and torn down at session end only if this session brought it up.
``isolated``: a private 4-node cluster (name vclt, 198.19.0.0/24) for tests that reshape or
break it without disturbing the shared one; module-scoped.
``spare_cluster``: a second cluster like the shared one (vcspare, 198.19.9.0/24), session-scoped, for
the tests that change a run.
"""
import os
import shutil
import subprocess
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
INVENTORY = REPO / "inventories" / "vcluster"


def skip_unless_root():
    if os.geteuid() != 0:
        pytest.skip("virtual cluster needs root (network namespaces, tc, Slurm daemons)")


def copy_inventory(work, name, subnet, nodes, rate, topology="star", node_rates=None):
    """inventories/vcluster copied to ``work/name`` and edited as a site would: system name,
    subnet, node list (per-node rates ``node_rates``), nominal rate and topology."""
    import yaml

    def edit(path, change):
        data = yaml.safe_load(path.read_text())
        change(data)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    inv = work / name
    shutil.copytree(INVENTORY, inv)
    edit(inv / "group_vars" / "all" / "crosstalk.yml", lambda d: d["crosstalk_system"].update(name=name))
    edit(inv / "group_vars" / "all" / "vcluster.yml", lambda d: d.update(
        vcluster_subnet=subnet, vcluster_link_rate=rate, vcluster_topology=topology))
    prefix = subnet.rsplit(".", 1)[0]
    hosts = {f"n{i}": {"vcluster_address": f"{prefix}.{i}"} for i in range(1, nodes + 1)}
    for node, node_rate in (node_rates or {}).items():
        hosts[node]["vcluster_link_rate"] = node_rate
    edit(inv / "hosts.yml", lambda d: d["all"]["children"]["vcluster_nodes"].update(hosts=hosts))
    return inv


def kernels_under(stage_dir, prefix="xt-"):
    """PIDs of the kernels (executables named ``prefix``...) working under ``stage_dir`` (on any
    node: they share the host's process table)."""
    from crosstalk.run import leftovers
    found = []
    for pid in leftovers.run_processes(stage_dir):
        try:
            if os.readlink(f"/proc/{pid}/exe").rsplit("/", 1)[-1].startswith(prefix):
                found.append(pid)
        except OSError:
            pass
    return found


@contextmanager
def run_on_inventory(inventory, system, env, run_args, tag, settings=None):
    """``crosstalk run --system INVENTORY RUN_ARGS`` into a fresh results dir under build/ (the nodes
    have a private /tmp): yields (run_dir, load_run(run_dir)); the cluster goes down afterwards.
    ``settings``: ``{experiment: quick-profile settings}`` given to the run as a site's specs."""
    from xt_testing import site_specs, venv_tool

    from crosstalk.analysis.ingest import load_run
    results = REPO / "build" / f"test-{tag}" / uuid.uuid4().hex[:8]
    specs = site_specs(results.with_name(results.name + "-specs"), settings or {})
    env = dict(env, CROSSTALK_RESULTS_DIR=str(results))
    site = ["--specs", str(specs)] if settings else []
    try:
        proc = subprocess.run([venv_tool("crosstalk"), "run", "--system", str(inventory), *site, *run_args],
                              capture_output=True, text=True, env=env, timeout=2400)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        (run_dir,) = (results / system / "runs").iterdir()
        yield run_dir, load_run(run_dir)
    finally:
        subprocess.run([venv_tool("crosstalk"), "vcluster", "down", "--inventory", str(inventory)],
                       capture_output=True, env=env, timeout=120)
        shutil.rmtree(results, ignore_errors=True)
        shutil.rmtree(specs, ignore_errors=True)


@pytest.fixture(scope="session")
def vcluster():
    skip_unless_root()
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(INVENTORY)
    brought_up = not vc.is_up()
    vc.up()
    yield vc
    if brought_up:
        vc.down()


def reframe_on_login(vc, work, checks, args, env=None):
    """ReFrame on the login node n1 with the inventory's rendered config, the run and its stage
    under ``work`` (in the cluster's shared dir), ``env`` added to its environment: returns
    ReFrame's JSON report."""
    import json
    import sys

    from crosstalk.site.configrender import render
    config = render(INVENTORY, work / "config")[0]
    run_dir = work / "run"
    run_dir.mkdir(parents=True, exist_ok=True)     # ReFrame does not create its log dir
    out = vc.exec("n1", [str(Path(sys.executable).parent / "reframe"), "-C", str(config),
                         *[w for check in checks for w in ("-c", str(REPO / "reframe-tests" / check))],
                         *args, "-r"],
                  cwd=str(REPO), capture_output=True, text=True, timeout=600,
                  env={**os.environ, "CROSSTALK_RUN_DIR": str(run_dir), "CROSSTALK_PROFILE": "quick",
                       "CROSSTALK_STAGE_DIR": str(work / "stage"), **(env or {})})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    return json.loads((run_dir / "report.json").read_text())


@pytest.fixture(scope="session")
def login_report(vcluster):
    """One plain ReFrame session on the login node, both partitions and both MPIs: the STREAM
    slice and one RMA-MT case (read by test_vcluster_reframe and test_vcluster_mpich, which once ran
    four sessions of it). A site's smaller specs: its readers check where and how the cases ran,
    never a value (STREAM at 32 MiB, one round; RMA-MT two rounds)."""
    from xt_testing import site_specs
    work = vcluster.shared_dir / f"rfm-login-{uuid.uuid4().hex[:8]}"
    site_specs(work / "specs", {"stream": {"array_bytes": "32M", "ntimes": 2, "rounds": 1}, "rma-mt": {"rounds": 2}})
    yield reframe_on_login(vcluster, work, ["stream.py", "rma_mt.py"],
                           ["--system", "vcluster", "-n", "StreamTriad", "-n", "RmaMt%op=put%sync=fence%threads=2"],
                           {"CROSSTALK_SPECS_DIR": str(work / "specs")})
    shutil.rmtree(work, ignore_errors=True)


def compile_mpi(vc, src, name, mpicc="mpicc"):
    """``mpicc`` into the cluster's shared dir (node /tmp is private, so tmp_path is not visible)."""
    exe = vc.shared_dir / name
    subprocess.run([mpicc, "-O2", "-o", str(exe), str(src)], check=True, timeout=120)
    return exe


#: The spare cluster: like the shared one (4 nodes, the shared inventory's link rate), another name and subnet.
SPARE = {"name": "vcspare", "nodes": 4, "subnet": "198.19.9.0/24"}


@dataclass
class SpareCluster:
    vc: object          # crosstalk.vcluster.VCluster
    inventory: Path     # its inventory directory (``crosstalk run --system INVENTORY``)
    name: str = SPARE["name"]


@pytest.fixture(scope="session")
def spare_cluster():
    """A second cluster like the shared one, for the tests that change a run (interrupt and resume,
    time limits, a second stage): they use it on one pytest worker while the shared cluster's tests
    run on the other, instead of after them. Brought up once per session and taken down at its end."""
    skip_unless_root()
    import yaml

    from crosstalk.vcluster import VCluster
    rate = yaml.safe_load((INVENTORY / "group_vars" / "all" / "vcluster.yml").read_text())["vcluster_link_rate"]
    work = REPO / "build" / "test-spare-cluster" / uuid.uuid4().hex[:8]
    inventory = copy_inventory(work, SPARE["name"], SPARE["subnet"], SPARE["nodes"], rate)
    vc = VCluster.from_inventory(inventory)
    vc.up()
    yield SpareCluster(vc, inventory)
    vc.down()
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def isolated():
    skip_unless_root()
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(INVENTORY, name="vclt", subnet="198.19.0.0/24")
    vc.up()
    yield vc
    vc.down()


def node_cpu_groups(vc, launch):
    """The CPU cgroup of each process ``launch`` (e.g. ``["srun", "-N2"]``) starts from n1, sorted:
    the CPU controller's line of /proc/self/cgroup (v1 "N:cpu,cpuacct:/path", v2 "0::/path")."""
    from crosstalk.vcluster.balance import cgroup_cpu_root
    out = vc.exec("n1", [*launch, "cat", "/proc/self/cgroup"], capture_output=True, text=True, timeout=120, cwd="/")
    v1 = cgroup_cpu_root()[0] == 1
    return sorted(line.rsplit(":", 1)[1] for line in out.stdout.split()
                  if ("cpu" in line.split(":")[1].split(",") if v1 else line.startswith("0::"))), out


@pytest.fixture(scope="session")
def pingpong_src():
    return REPO / "tests" / "vcluster" / "pingpong.c"
