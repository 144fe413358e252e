"""E7 core mapping (experiments/core-mapping.yaml) against Narayanaswamy 2008: the full profile's
mappings are Table 3.2 as printed, the quick profile's reduce them keeping what the thesis swaps;
the claims read the streaming bandwidth of the interrupt core against the other core of its
socket, and A against A', B against B'; runs of the older parameters (a ping-pong CoreBandwidth,
compact/scatter mappings) are drawn apart and decide nothing."""
import json
import subprocess
import sys

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from xt_testing import REPO, venv_tool

from crosstalk.claims import judge_claim
from crosstalk.claims.operands import Table
from crosstalk.models.papers import load_paper_table
from crosstalk.specs import load_spec

sys.path.insert(0, str(REPO / "reframe-tests"))
from xtlib.pinning import node_cores, rank_table  # noqa: E402

SPEC = load_spec("core-mapping")
CLAIMS = {c["id"]: c for c in SPEC.data["claims"]}
CLUSTER = {"kind": "cluster"}


def mapping(name, profile):
    return node_cores(SPEC.setting(f"cores_{name.lower()}", profile))


def test_the_spec_checks():
    proc = subprocess.run([venv_tool("crosstalk"), "spec", "check", "core-mapping"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "ok (core-mapping" in proc.stdout, proc.stdout + proc.stderr


def test_the_full_profile_is_table_3_2_as_printed():
    paper = load_paper_table("narayanaswamy2008_table3_2_lammps_mappings.csv")
    for name in SPEC.parameter("mapping", "full"):
        want = {(int(r.machine), int(r.core)): int(r.rank)
                for r in paper[paper["mapping"] == name.replace("_prime", "'")].itertuples()}
        assert len(want) == 8 and rank_table(mapping(name, "full")) == want, name


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_each_profile_keeps_the_swaps_and_their_reason(profile):
    """A' is round robin over the cores in order; A swaps ranks 0 and 2 on machine 1 and B' swaps
    machine 1's first and last ranks of B; in A' and B' the two ranks on core 0 (the thesis's
    interrupt core) talk to each other across the nodes (LAMMPS' off-node partners r, r+1 for even
    r, as dealt round robin), in A and B they do not."""
    tables = {m: rank_table(mapping(m, profile)) for m in SPEC.parameter("mapping", profile)}
    nodes = len(mapping("A", profile))
    assert nodes == SPEC.setting("nodes", profile) == 2
    per_node = len(tables["A"]) // nodes
    assert all(tables["A_prime"][(m, c)] == c * nodes + m - 1 for m in (1, 2) for c in range(per_node))
    last = 2 * (per_node - 1)                                   # machine 1's last rank: 6 of 0..7
    for before, after, swapped in (("A", "A_prime", {0, 2}), ("B", "B_prime", {0, last})):
        changed = {k for k in tables[before] if tables[before][k] != tables[after][k]}
        assert {tables[before][k] for k in changed} == swapped and {m for m, _ in changed} == {1}
        for name, partners in ((before, False), (after, True)):
            on_core0 = sorted(tables[name][(m, 0)] for m in (1, 2))
            assert (on_core0[0] % 2 == 0 and on_core0[1] == on_core0[0] + 1) == partners, (profile, name)


def perf_rows(rows, test="CoreStreamBandwidth"):
    """rows: (params, metric, sample, value) -> tidy rows of one cluster platform."""
    return [{"experiment": "core-mapping", "metric": metric, "params": json.dumps(params, sort_keys=True),
             "value": float(value), "unit": "u", "run_id": "r", "partition": "p", "environ": "e",
             "repeat": 0, "sample": sample, "round": 0,
             "case": f"{test} " + " ".join(f"%{k}={v}" for k, v in params.items()),
             "system": "s", "platform": "s@h", "origin": "user"} for params, metric, sample, value in rows]


def judge(claim_id, rows, facts=CLUSTER):
    perf = pd.DataFrame(rows)
    cases = perf[["experiment", "params", "environ"]].drop_duplicates().assign(result="pass", reason=None)
    return judge_claim(SPEC, CLAIMS[claim_id], Table(perf), cases, facts)


def bandwidth(irq, sibling):
    return perf_rows([({"core": c, "repeat": 0}, "bandwidth", s, v * (1 + 0.01 * s))
                      for s in range(6) for c, v in (("irq", irq), ("irq_sibling", sibling), (0, 9.0))])


def test_the_asymmetry_claim_is_the_other_core_of_its_socket_over_the_interrupt_core():
    out = judge("nara-core-choice-changes-bandwidth", bandwidth(2.0, 3.0))
    assert out["verdict"] == "reproduced" and out["groups"][0]["estimate"] == pytest.approx(1.5)
    # core 0 (9.0) is the fastest core here: it is neither role, so it does not decide
    assert judge("nara-core-choice-changes-bandwidth", bandwidth(2.0, 2.1))["verdict"] == "contradicted"
    vcluster = judge("nara-core-choice-changes-bandwidth", bandwidth(2.0, 3.0), {"kind": "vcluster"})
    assert vcluster["verdict"] == "not applicable"


def test_where_the_inventory_names_no_interrupt_core_the_asymmetry_claim_is_not_applicable():
    from crosstalk.skips import platform_reason
    rows = perf_rows([({"core": c, "repeat": 0}, "bandwidth", s, 2.0) for s in range(6) for c in (0, 1)])
    why = platform_reason("the inventory names no interrupt core (network.interrupt_core)")
    role = ("irq", "irq_sibling")
    cases = pd.DataFrame([{"experiment": "core-mapping", "params": json.dumps({"core": c, "repeat": 0}, sort_keys=True),
                           "environ": "e", "result": "skip" if c in role else "pass",
                           "reason": why if c in role else None} for c in (0, 1, *role)])
    out = judge_claim(SPEC, CLAIMS["nara-core-choice-changes-bandwidth"], Table(pd.DataFrame(rows)), cases, CLUSTER)
    assert out["verdict"] == "not applicable" and "names no interrupt core" in out["groups"][0]["reason"]


def test_the_asymmetry_claim_reads_no_core_numbers_and_no_ping_pong():
    old = perf_rows([({"core": c, "repeat": 0}, "bandwidth", s, v) for s in range(6) for c, v in ((0, 2.0), (1, 3.0))],
                    test="CoreBandwidth")
    assert judge("nara-core-choice-changes-bandwidth", old)["verdict"] == "not run"


@pytest.mark.parametrize("claim_id, pair", [("nara-core-order-changes-comm-twofold", ("A", "A_prime")),
                                            ("nara-scatter-order-changes-comm-twofold", ("B", "B_prime"))])
def test_the_mapping_claims_compare_a_mapping_with_its_swap(claim_id, pair):
    def comm(values):
        return perf_rows([({"mapping": m, "repeat": 0}, "comm_s", s, v) for s in range(6) for m, v in values.items()],
                         test="CoreMappingLammps")
    others = {m: 50.0 for m in ("A", "A_prime", "B", "B_prime") if m not in pair}
    out = judge(claim_id, comm({pair[0]: 1.0, pair[1]: 2.5, **others}))
    assert out["verdict"] == "reproduced" and out["groups"][0]["estimate"] == pytest.approx(2.5)
    assert judge(claim_id, comm({pair[0]: 1.0, pair[1]: 1.2, **others}))["verdict"] == "contradicted"
    # the older runs' mappings are none of Table 3.2's
    old = comm({"compact": 1.0, "compact_swapped": 2.5, "scatter": 1.0, "scatter_swapped": 2.5})
    assert judge(claim_id, old)["verdict"] == "not run"


def test_the_figures_draw_the_thesis_names_and_keep_older_runs_apart():
    from crosstalk.figures.narayanaswamy import narayanaswamy_fig3_1, narayanaswamy_table3_2
    new = perf_rows([({"core": c, "repeat": 0}, "bandwidth", 0, v) for c, v in ((0, 2.0), (1, 3.0), ("irq", 2.0),
                                                                               ("irq_sibling", 3.0))])
    old = perf_rows([({"core": 0, "repeat": 0}, "bandwidth", 0, 1.2)], test="CoreBandwidth")
    lammps = perf_rows([({"mapping": m, "repeat": 0}, metric, 0, v) for m in ("A", "A_prime", "B", "B_prime", "compact")
                        for metric, v in (("time_s", 2.0), ("comm_s", 1.0))], test="CoreMappingLammps")
    perf = pd.DataFrame(new + old + lammps)
    fig, caption = narayanaswamy_fig3_1(perf, None)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    # the thesis's Intel cores 0-3 on the same axis
    assert ticks == ["0", "1", "2", "3", "interrupt core", "other core of its socket"]
    assert "ping-pong, older runs core 0: 1.200" in caption and "streaming core irq: 2.000" in caption
    # the claim's quantity with the claim's own operands: the sibling over the interrupt core
    assert "other core of its socket / interrupt core: 1.50" in caption
    plt.close(fig)
    fig, caption = narayanaswamy_table3_2(perf, None)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["A", "A\u2032", "B", "B\u2032", "compact*"]      # the star: not Table 3.2's
    assert "compact*: 2.00 s" in caption and "Mappings marked * are not Table 3.2's" in caption
    plt.close(fig)
