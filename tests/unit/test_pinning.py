"""Rank-to-core pinning (reframe-tests/xtlib/pinning.py): the taskset script by node-local rank or
by rank, the round-robin check, mappings given per node, and cores named by their role."""
import os
import shutil
import subprocess
import sys

import pytest
from xt_testing import REPO

sys.path.insert(0, str(REPO / "reframe-tests"))
from xtlib.pinning import (  # noqa: E402
    PIN_SCRIPT,
    node_cores,
    parse_pin_lines,
    rank_table,
    role_core,
    round_robin_cores,
    round_robin_errors,
)

#: What launchers set; the script must read only what each test gives it.
LAUNCHER_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK",
                 "PMI_RANK", "SLURM_PROCID")


def pin(by, cores, tmp_path, **env):
    """Run the pin script as a launcher would start one rank; ``(exit status, stderr lines, stdout)``."""
    if not shutil.which("taskset") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs taskset and two CPUs")
    clean = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    err = tmp_path / "stderr"
    with open(err, "w") as fp:
        proc = subprocess.run(["sh", "-c", PIN_SCRIPT, "xt-pin", by, cores, "sh", "-c",
                               "grep Cpus_allowed_list /proc/self/status | cut -f2"],
                              env={**clean, **env}, stdout=subprocess.PIPE, stderr=fp, text=True, timeout=30)
    return proc.returncode, err, proc.stdout.strip()


def test_by_local_rank_the_node_local_number_chooses(tmp_path):
    status, err, allowed = pin("local", "1,0", tmp_path, OMPI_COMM_WORLD_LOCAL_RANK="1", OMPI_COMM_WORLD_RANK="3")
    assert status == 0 and allowed == "0"
    host, local, core, seen, rank = parse_pin_lines(err)[0]
    assert (local, core, seen, rank) == (1, 0, "0", "3")


@pytest.mark.parametrize("env", [{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
                                 {"PMI_RANK": "2", "MPI_LOCALRANKID": "1"},
                                 {"SLURM_PROCID": "2", "SLURM_LOCALID": "1"}])
def test_by_rank_the_job_wide_number_chooses_under_each_launcher(tmp_path, env):
    status, err, allowed = pin("rank", "0,0,1,0", tmp_path, **env)
    assert status == 0 and allowed == "1"
    assert parse_pin_lines(err)[0][1:] == (1, 1, "1", "2")


def test_a_rank_without_a_number_or_a_core_stops(tmp_path):
    status, err, _ = pin("rank", "0,1", tmp_path, OMPI_COMM_WORLD_LOCAL_RANK="0")
    assert status == 2 and "the launcher set no rank number" in err.read_text()
    status, err, _ = pin("rank", "0,1", tmp_path, OMPI_COMM_WORLD_RANK="2")
    assert status == 2 and "no core for rank 2 in 0,1" in err.read_text()


def test_round_robin_is_checked_from_the_hosts_the_ranks_report():
    dealt = [(0, "n1"), (1, "n2"), (2, "n1"), (3, "n2")]
    assert round_robin_errors(dealt, 2) == ""
    assert round_robin_errors([(0, "n1"), (1, "n1"), (2, "n2"), (3, "n2")], 2)       # filled, not dealt
    assert round_robin_errors([(0, "n1"), (1, "n1"), (2, "n1"), (3, "n1")], 2)       # one node


def test_a_mapping_is_each_nodes_cores_for_its_ranks():
    nodes = node_cores("1,0,2,3/0,1,2,3")
    assert nodes == [[1, 0, 2, 3], [0, 1, 2, 3]]
    assert round_robin_cores(nodes) == [1, 0, 0, 1, 2, 2, 3, 3]      # rank r on node r % 2
    assert rank_table(nodes)[(1, 0)] == 2 and rank_table(nodes)[(2, 3)] == 7
    for bad in ("0,1/0", "0,0/0,1", "0,x/0,1"):
        with pytest.raises(ValueError):
            node_cores(bad)


def test_a_role_is_a_core_only_where_the_inventory_names_it():
    irq = {"core": 2, "socket_cores": [0, 2]}
    assert role_core(3, irq) == (3, None) and role_core("5", None) == (5, None)
    assert role_core("irq", irq) == (2, None) and role_core("irq_sibling", irq) == (0, None)
    for role in ("irq", "irq_sibling"):
        core, why = role_core(role, None)
        assert core is None and "names no interrupt core" in why
