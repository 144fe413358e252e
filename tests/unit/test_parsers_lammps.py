"""LAMMPS log / screen parser on the real fixtures (tests/fixtures/upstream/lammps)."""
import pytest
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.parsers import lammps

DIR = REPO / "tests" / "fixtures" / "upstream" / "lammps"


def get(recs, metric, stat="value"):
    [v] = [r["value"] for r in recs if r["metric"] == metric and r["stat"] == stat]
    return v


@pytest.mark.parametrize("stem, grid, loop, tps, cpu", [("lj_melt_32k_np1_n1", "1x1x1", 1.66486, 60.065, 100.0),
                                                        ("lj_melt_32k_np2_n1n2", "1x1x2", 1.92116, 52.052, 47.7)])
def test_log_and_screen_agree(stem, grid, loop, tps, cpu):
    log, screen = lammps.parse(DIR / f"{stem}.log.lammps"), lammps.parse(DIR / f"{stem}.stdout.txt")
    assert log == screen
    assert get(log, "loop_time") == loop and get(log, "timesteps_per_s") == tps and get(log, "cpu_use") == cpu
    # 100 steps / 1.92116 s = 52.052 timesteps/s (np2)
    assert 100 / loop == pytest.approx(tps, abs=5e-4)
    r = log[0]
    assert (r["grid"], r["steps"], r["atoms"], r["version"]) == (grid, 100, 32000, "29 Sep 2021 - Update 2")


def test_breakdown():
    recs = lammps.parse(DIR / "lj_melt_32k_np2_n1n2.log.lammps")
    assert get(recs, "comm_time", "max") == 0.41296 and get(recs, "comm_pct") == 20.82
    assert get(recs, "other_time", "avg") == 0.00455 and get(recs, "total_wall_time") == 2
    assert [r["mpi_tasks"] for r in recs if r["metric"] == "pair_time"] == [2, 2, 2]


@pytest.mark.parametrize("name", ["lj_melt_32k_np2_n1n2.log.lammps", "lj_melt_32k_np1_n1.stdout.txt"])
def test_every_truncation_is_an_input_error(name):
    text = (DIR / name).read_text()
    ends = [i + 1 for i, c in enumerate(text) if c == "\n"][:-1]
    for i in ends + [len(text) - 5]:
        with pytest.raises(InputError):
            lammps.parse(DIR / name, text[:i])


def test_malformed():
    path = DIR / "lj_melt_32k_np1_n1.log.lammps"
    with pytest.raises(InputError, match="not LAMMPS output"):
        lammps.parse(path, "hello\n")
    text = path.read_text()
    with pytest.raises(InputError, match="truncated: missing timesteps_per_s"):
        lammps.parse(path, text.replace("Performance:", "Perf:"))


def test_two_runs_in_one_log():
    # a second "run 100" appends another Loop time / Performance / breakdown block: records carry run 0, 1
    text = (DIR / "lj_melt_32k_np2_n1n2.log.lammps").read_text()
    head, tail = text.split("Total wall time")
    run = head[head.index("run             100"):]
    second = run.replace("Loop time of 1.92116", "Loop time of 2.5").replace("52.052 timesteps/s", "40.000 timesteps/s")
    recs = lammps.parse("two.log", head + second + "Total wall time" + tail)
    loops = [(r["run"], r["value"]) for r in recs if r["metric"] == "loop_time"]
    assert loops == [(0, 1.92116), (1, 2.5)]
    assert [r["value"] for r in recs if r["metric"] == "timesteps_per_s"] == [52.052, 40.0]
