"""One placement, said in each launcher's and each MPI's own words (reframe-tests/xtlib/placement.py):
srun's --distribution, Open MPI's --map-by/--max-vm-size/-x, MPICH Hydra's -ppn/-hosts (Hydra
forwards the whole environment)."""
import ast
import sys
from types import SimpleNamespace

import pytest
from xt_testing import REPO

sys.path.insert(0, str(REPO / "reframe-tests"))
from xtlib.placement import RANK_HOSTS, mpirun_hosts, mpirun_options, rank_options, step_prefix  # noqa: E402


def fake_test(mpi, env_vars=None, cpus=2, launcher="mpirun"):
    return SimpleNamespace(current_environ=SimpleNamespace(name=f"gnu-{mpi}", extras={"mpi": mpi}),
                           current_partition=SimpleNamespace(processor=SimpleNamespace(num_cpus=cpus),
                                                             local_env=SimpleNamespace(env_vars=env_vars or {}),
                                                             extras={},
                                                             launcher_type=SimpleNamespace(registered_name=launcher)))


@pytest.mark.parametrize("args, openmpi, mpich", [
    ({}, ["--bind-to", "none"], ["-bind-to", "none"]),
    ({"map_by": "node"}, ["--bind-to", "none", "--map-by", "node"], ["-bind-to", "none", "-ppn", "1"]),
    ({"map_by": "slot"}, ["--bind-to", "none", "--map-by", "slot"], ["-bind-to", "none", "-ppn", "2"]),
    ({"map_by": 3}, ["--bind-to", "none", "--map-by", "ppr:3:node"], ["-bind-to", "none", "-ppn", "3"]),
    ({"export": ["UCX_TLS"]}, ["--bind-to", "none", "-x", "UCX_TLS"], ["-bind-to", "none"]),
])
def test_each_mpi_gets_its_own_words(args, openmpi, mpich):
    assert mpirun_options(fake_test("openmpi"), **args) == openmpi
    assert mpirun_options(fake_test("mpich"), **args) == mpich


def test_the_first_nodes_come_from_either_hostfile(tmp_path):
    hydra = tmp_path / "hostfile-mpich"
    hydra.write_text("n1:1\nn2:1\nn3:1\n")
    ompi = tmp_path / "hostfile"
    ompi.write_text("n1 slots=2\nn2 slots=2\n")
    test = fake_test("mpich", {"HYDRA_HOST_FILE": str(hydra)})
    assert mpirun_options(test, "node", nodes=2) == ["-bind-to", "none", "-ppn", "1", "-hosts", "n1,n2"]
    assert mpirun_hosts(fake_test("openmpi", {"OMPI_MCA_orte_default_hostfile": str(ompi)})) == (["n1", "n2"], None)
    assert mpirun_options(fake_test("openmpi"), "slot", nodes=2)[-2:] == ["--max-vm-size", "2"]


def test_mpich_cannot_place_on_the_first_nodes_without_a_hostfile():
    with pytest.raises(ValueError, match="no mpirun hostfile"):
        mpirun_options(fake_test("mpich"), "node", nodes=2)


@pytest.mark.parametrize("how, srun, openmpi", [
    ({}, [], ["--bind-to", "none"]),
    ({"spread": "node"}, ["--distribution=plane=1"], ["--bind-to", "none", "--map-by", "node"]),
    ({"spread": "per-node", "block": 2}, ["--distribution=block"], ["--bind-to", "none", "--map-by", "ppr:2:node"]),
    ({"spread": "fill", "nodes": 2}, ["--distribution=block"], ["--bind-to", "none", "--map-by", "slot",
                                                               "--max-vm-size", "2"]),
    ({"spread": "node", "first": 2, "unbound": True},
     ["--nodes=2", "--ntasks=2", "--distribution=plane=1", "--cpu-bind=none"],
     ["--bind-to", "none", "--map-by", "node"]),
    ({"export": ["UCX_TLS"]}, [], ["--bind-to", "none", "-x", "UCX_TLS"]),
])
def test_one_spread_in_each_launchers_words(how, srun, openmpi):
    assert rank_options(fake_test("openmpi", launcher="srun"), **how) == srun
    for launcher in ("mpirun", "mpiexec", "local"):     # one kind: mpirun from the job's first node
        assert rank_options(fake_test("openmpi", launcher=launcher), **how) == openmpi


def test_blocks_of_ranks_round_robin_under_each_mpirun(tmp_path):
    """spread=node with block=2 (a GPCNeT node's PPort ranks kept together, the nodes round robin
    over 3 hosts): srun says plane=2; Open MPI reads one host per rank (its sequential mapper) and
    Hydra cycles through host:2 lines, from a file in the stage directory."""
    hydra, ompi = tmp_path / "hostfile-mpich", tmp_path / "hostfile"
    hydra.write_text("n1:1\nn2:1\nn3:1\nn4:1\n")
    ompi.write_text("n1 slots=2\nn2 slots=2\nn3 slots=2\nn4 slots=2\n")
    env = {"HYDRA_HOST_FILE": str(hydra), "OMPI_MCA_orte_default_hostfile": str(ompi)}
    how = {"spread": "node", "block": 2, "nodes": 3, "unbound": True}
    assert rank_options(fake_test("openmpi", launcher="srun"), **how) == ["--distribution=plane=2", "--cpu-bind=none"]
    for mpi, words, lines in (
            ("openmpi", ["--bind-to", "none", "--mca", "rmaps", "seq", "--hostfile", RANK_HOSTS],
             ["n1", "n1", "n2", "n2", "n3", "n3", "n1", "n1", "n2", "n2"]),
            ("mpich", ["-bind-to", "none", "-f", RANK_HOSTS], ["n1:2", "n2:2", "n3:2"])):
        stage = tmp_path / mpi
        stage.mkdir()
        test = fake_test(mpi, env)
        test.stagedir, test.num_tasks = str(stage), 10
        assert rank_options(test, **how) == words
        assert (stage / RANK_HOSTS).read_text().split() == lines


def test_blocks_on_one_host_need_no_file_and_no_hostfile(tmp_path):
    """One host (a partition without a hostfile, e.g. a workstation) holds every block: plain words."""
    test = fake_test("openmpi")
    test.stagedir, test.num_tasks = str(tmp_path), 8
    assert rank_options(test, spread="node", block=2, nodes=1) == ["--bind-to", "none"]
    assert not (tmp_path / RANK_HOSTS).exists()


def test_an_unknown_spread_is_refused():
    with pytest.raises(ValueError, match="spread must be one of"):
        rank_options(fake_test("openmpi"), spread="diagonal")


def test_slurm_node_names_sort_with_their_numbers_as_numbers():
    """job_nodes maps a job's k-th node to the k-th name: Slurm's node-table order (n2 before n10),
    whatever order sinfo lists them in."""
    from xtlib.placement import _natural
    assert sorted(["n10", "n2", "n1", "n12", "n3"], key=_natural) == ["n1", "n2", "n3", "n10", "n12"]


LAUNCHER_WORDS = {"srun", "mpirun", "mpiexec"}


def launcher_branches(path):
    """Lines of ``path`` that decide on the launcher: a comparison with a launcher's name, or a
    call of launcher_kind."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value in LAUNCHER_WORDS for o in operands):
                found.append(node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "launcher_kind":
            found.append(node.lineno)
    return found


def test_every_launcher_branch_is_in_the_placement_layer():
    """Test modules and mixins say what they need (slurm_steps, step_prefix, rank_options, ...);
    only placement.py says it in srun's or mpirun's words."""
    modules = sorted((REPO / "reframe-tests").rglob("*.py"))
    assert REPO / "reframe-tests" / "xtlib" / "placement.py" in modules
    assert launcher_branches(REPO / "reframe-tests" / "xtlib" / "placement.py")    # the check sees them
    outside = {str(p.relative_to(REPO)): lines for p in modules if p.name != "placement.py"
               and (lines := launcher_branches(p))}
    assert outside == {}


def test_a_step_on_a_relative_node_needs_srun():
    with pytest.raises(ValueError, match="relative nodes"):
        step_prefix(fake_test("openmpi"), tasks=1, relative_node=1)
    words = step_prefix(fake_test("openmpi", launcher="srun"), tasks=2, nodes=2, relative_node=1, step_name="x")
    assert words[:2] == ["srun", "--overlap"] and "--relative=1" in words and "--job-name=x" in words
