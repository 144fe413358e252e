"""xt-hpccg, HPCCG's method where HPCCG itself is not installed, run for real with MPI.

Its problem is HPCCG 1.0's: the upstream fixture (tests/fixtures/upstream/hpccg, real test_HPCCG
output for 2 ranks of 40^3) starts from the same residual, ||b|| = 1322.09, and stops after the
same 149 iterations. The solve is checked by its true residual, not by its own recurrence."""
import math
import re
import subprocess

import pytest
from xt_bench import REPO, json_lines, mpirun_cmd, results

#: Kernel tests: CMake builds (release and ASan) and many MPI jobs; minutes, so not in the fast tier.
pytestmark = pytest.mark.slow

KERNEL = "xt-hpccg"
UPSTREAM = REPO / "tests" / "fixtures" / "upstream" / "hpccg" / "hpccg_np2_local_40x40x40.stdout.txt"


def run(xt_bin, env, np, *args):
    out = subprocess.run(mpirun_cmd(np, xt_bin / KERNEL, *args), env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json_lines(out.stdout)


def value(records, metric, stat):
    (found,) = results(records, metric=metric, stat=stat)
    return found["value"]


def test_same_problem_as_upstream_hpccg(bench_bin, mpi_env):
    upstream = UPSTREAM.read_text()
    initial = float(re.search(r"Initial Residual = (\S+)", upstream).group(1))
    iterations = int(re.search(r"Number of iterations: (\d+)", upstream).group(1))
    records = run(bench_bin, mpi_env, 2)
    start = [r for r in records if r["type"] == "sample" and r["iteration"] == 0]
    # b is A times the all-ones vector, so ||b|| depends on the grid, the stencil and the
    # decomposition; upstream prints it to 6 digits.
    assert start[0]["value"] == pytest.approx(initial, rel=1e-5)
    assert value(records, "iterations", "count") == iterations
    (check,) = [r for r in records if r["type"] == "validation"]
    assert check["passed"] and check["true_residual"] < 1e-6 * initial, check


def test_residual_falls_and_every_figure_is_reported(bench_bin, mpi_env):
    records = run(bench_bin, mpi_env, 3, "--nx", "12", "--ny", "10", "--nz", "8", "--max-iter", "40")
    residuals = [r["value"] for r in records if r["type"] == "sample" and r["metric"] == "residual"]
    assert residuals == sorted(residuals, reverse=True) and residuals[-1] < 1e-6 * residuals[0]
    for phase in ("total", "ddot", "waxpby", "sparsemv"):
        assert value(records, "time", phase) > 0 and value(records, "mflops", phase) > 0
    # 2 flops per stored entry per product: 39 iterations + the initial product over the 3 ranks'
    # 12 x 10 x 24 grid, whose entries are the product of (3 inside, 2 on a face) per direction
    entries = sum(3 if 0 < i < 11 else 2 for i in range(12)) * \
        sum(3 if 0 < i < 9 else 2 for i in range(10)) * sum(3 if 0 < i < 23 else 2 for i in range(24))
    assert value(records, "flops", "sparsemv") == 2 * entries * 40
    assert value(records, "ddot_allreduce_time", "min") <= value(records, "ddot_allreduce_time", "max")
    assert all(r.get("method") == "HPCCG 1.0's problem and method, not HPCCG" for r in results(records))


def test_a_solve_stopped_early_is_valid_but_not_converged(bench_bin, mpi_env):
    records = run(bench_bin, mpi_env, 2, "--nx", "8", "--ny", "8", "--nz", "8", "--max-iter", "4")
    (check,) = [r for r in records if r["type"] == "validation"]
    assert check["passed"] and "not converged" in check["detail"]
    assert value(records, "iterations", "count") == 3 and not math.isnan(value(records, "final_residual", "final"))


def test_rounds_solve_the_same_system_again(bench_bin, mpi_env):
    """--rounds 2: the same solve twice from the same start in one run (the same iterations and
    residual), each round's results and validation tagged; the residual samples only once."""
    records = run(bench_bin, mpi_env, 2, "--nx", "10", "--ny", "10", "--nz", "6", "--max-iter", "30",
                  "--rounds", "2")
    by_round = [{(r["metric"], r["stat"]): r["value"] for r in results(records) if r["round"] == k}
                for k in (0, 1)]
    assert by_round[0][("iterations", "count")] == by_round[1][("iterations", "count")] == 29
    assert by_round[0][("final_residual", "final")] == pytest.approx(by_round[1][("final_residual", "final")], rel=1e-6)
    assert all(by[("time", "total")] > 0 for by in by_round)
    assert [r["round"] for r in records if r["type"] == "validation" and r["passed"]] == [0, 1]
    assert [r["iteration"] for r in records if r["type"] == "sample"][0] == 0
    assert len([r for r in records if r["type"] == "sample" and r["iteration"] == 0]) == 1
