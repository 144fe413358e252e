"""Machine balance on a private 2-node cluster (name vcbal, 198.19.12.0/24): the nodes' CPU quota
is set so that link bytes per byte of Triad are a paper machine's, and an independent measurement
afterwards (Triad inside the other node under its quota, iperf3 the other way) lands within a factor
of 1.5 of the target (the calibration itself aims at 10 %; how close it lands is shown by
`crosstalk vcluster status`, a measurement, not a test). Every process a node runs (slurmd, srun
and mpirun ranks) is in its cgroup."""
import json
import math
import subprocess

import pytest
from vcluster_fixtures import INVENTORY, node_cpu_groups, skip_unless_root
from xt_testing import venv_tool

from crosstalk.site.machines import load, ratios
from crosstalk.vcluster.balance import build_triad, cgroup_cpu_root, cpu_groups_available, triad_argv, triad_of
from crosstalk.vcluster.iperf import iperf_flows

pytestmark = [pytest.mark.root, pytest.mark.cluster]
#: A machine whose ratio this kind of host reaches with links of 500 Mbit/s (a few % of a core).
MACHINE = "groves2017-sandy-bridge-x2-fdr-offload"   # 6.8 GB/s FDR over 85.3 GB/s: 0.080 B/B


@pytest.fixture(scope="module")
def balanced():
    skip_unless_root()
    if not cpu_groups_available():
        pytest.skip("no writable cgroup CPU controller here: machine balance cannot be set")
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(INVENTORY, name="vcbal", subnet="198.19.12.0/24", nodes=2, link_rate="500mbit",
                                 like=MACHINE)
    # Calibrate now: a calibration kept from hours before (the balance file outlives `down`) was
    # made under other load on this shared host; the check compares measurements minutes apart.
    vc.balance_file.unlink(missing_ok=True)
    vc.up()
    yield vc
    vc.down()
    assert not (cgroup_cpu_root()[1] / "crosstalk-vcbal").exists()


def test_measured_ratio_is_the_machines_within_a_factor_1_5(balanced):
    vc = balanced
    target = ratios(load(MACHINE))["network_to_memory"]
    assert vc.balance()["target"]["network_to_memory"] == target
    # Not the calibration's own numbers: Triad on n1 (the calibration measured n2; n1 also hosts
    # slurmctld, outside the quota), the link the other way, medians of three, so one burst of load
    # on this shared host moves neither far.
    exe = build_triad(vc.shared_dir)
    triads, links = [], []
    for _ in range(3):
        out = vc.exec("n1", triad_argv(exe), capture_output=True, text=True, timeout=120, cwd="/")
        triads.append(triad_of(out.stdout))
        links.append(iperf_flows(vc, [("n1", "n2")], seconds=2)[0])
    ratio = sorted(links)[1] / 8 / sorted(triads)[1]
    # Why 1.5x: the calibration and this check are minutes apart on a host whose two cores a second
    # test worker shares; a calibration made while that worker ran gave a share 1.29x too large
    # (CI, 0.062 against 0.080). A node without its quota is more than 10x off (Triad of a whole
    # core against ~6 % of one), and a quota planned from a wrong ratio misses by its own factor.
    assert abs(math.log(ratio / target)) <= math.log(1.5), (ratio, target, triads, links)


def test_every_process_of_a_node_runs_under_its_quota(balanced):
    vc = balanced
    base = f"/crosstalk-{vc.name}/"
    slurmd = open(f"/proc/{vc._slurmd_pid('n1')}/cgroup").read()
    assert f"{base}n1" in slurmd
    for launch in (["srun", "-N2"], ["mpirun", "-np", "2"]):
        groups, out = node_cpu_groups(vc, launch)
        assert groups == [f"{base}n1", f"{base}n2"], (launch, out.stdout, out.stderr[-500:])
    status = json.loads(subprocess.run([venv_tool("crosstalk"), "vcluster", "status", "--name", vc.name,
                                        "--subnet", str(vc.subnet), "--json"], capture_output=True, text=True,
                                       timeout=60).stdout)
    assert status["balance"]["like"] == MACHINE
