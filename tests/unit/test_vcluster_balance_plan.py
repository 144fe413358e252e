"""Planning a machine balance (crosstalk.vcluster.balance): the CPU share per node for a target's
network-to-memory ratio, its limits, and the line status and the report show (pure)."""
import pytest

from crosstalk.errors import CrosstalkError
from crosstalk.vcluster.balance import MIN_SHARE, describe, plan

CORE = {"triad_Bps": 12.5e9, "dgemm_flops": 40e9}


def test_share_gives_the_ratio_if_triad_scales_with_it():
    # 500 Mbit/s = 62.5 MB/s of link; 0.1 B/B wants 625 MB/s of Triad: 5 % of a 12.5 GB/s core
    share, limited = plan({"id": "m", "network_to_memory": 0.1}, 500_000_000, CORE)
    assert share == pytest.approx(0.05) and limited is None


def test_a_share_below_the_floor_is_held_there_and_says_so():
    # 1 B/B at 10 Mbit/s wants 1.25 MB/s of Triad: 0.01 % of a core, far below the floor
    share, limited = plan({"id": "m", "network_to_memory": 1.0}, 10_000_000, CORE)
    assert share == MIN_SHARE and "floor" in limited and "0.01% wanted" in limited


@pytest.mark.parametrize("ratio, rate, problem", [
    (0.0001, 500_000_000, "cores per node at this link rate (500 Mbit/s): lower vcluster_link_rate"),
    (None, 500_000_000, "no network-to-memory ratio"),
])
def test_shares_outside_what_a_node_can_have_are_refused(ratio, rate, problem):
    with pytest.raises(CrosstalkError) as err:
        plan({"id": "m", "network_to_memory": ratio}, rate, CORE)
    assert problem in str(err.value) and "\n" not in str(err.value)
    assert MIN_SHARE > 0


def test_describe_puts_achieved_beside_target():
    line = describe({"like": "m", "share": 0.05, "target": {"network_to_memory": 0.1, "network_to_compute": 0.02},
                     "achieved": {"network_to_memory": 0.104, "network_to_compute": 0.031}})
    assert line == ("like m: 5.0% of a core per node; network/memory 0.104 B/B (target 0.1), "
                    "network/compute 0.031 B/flop (target 0.02)")


def test_describe_names_a_fabric_target_and_a_shortfall():
    fabric = {"topology": "dragonfly", "global_to_injection": 0.55, "groups": None}
    line = describe({"like": "theta", "share": None, "target": {"network_to_memory": None, "fabric": fabric}})
    assert line == "like theta: dragonfly global:injection 0.55 (configured)"
    short = describe({"like": "rs", "share": 0.01, "limited": "the share is held at its floor",
                      "target": {"network_to_memory": 0.5}, "achieved": {"network_to_memory": 0.31}})
    assert short.endswith("network/memory 0.31 B/B (target 0.5) [the share is held at its floor]")


def test_machines_come_from_the_transcribed_tables_with_their_ratio():
    from crosstalk.site.machines import all_machines, load, ratios
    westmere = load("groves2017-westmere-800-mhz")
    # Table 2.2: QDR IB at 32 Gbit/s (4 GB/s) over 12.8 GB/s of peak DRAM, 4 cores
    assert ratios(westmere) == {"network_to_memory": 4 / 12.8, "network_to_compute": None, "cores": 4,
                                "fabric": None}
    assert westmere["paper"] == "groves2017"
    # SAND2012-1750's Red Storm node: 3.2 GB/s of HyperTransport injection over 6.4 GB/s DDR-400,
    # 2 ranks per node as in Table 6.2 (4096 cores on 2048 nodes)
    red_storm = ratios(load("sand2012-red-storm-dual-core-node"))
    assert (red_storm["network_to_memory"], red_storm["cores"]) == (0.5, 2)
    # GPCNeT Table 1: a fabric balance only (no memory or injection rate printed)
    theta = ratios(load("chunduri2019-theta"))
    assert theta["network_to_memory"] is None
    assert theta["fabric"] == {"topology": "dragonfly", "global_to_injection": 0.55, "groups": None}
    assert load("chunduri2019-sierra")["fabric"]["topology"] == "fattree"
    papers = [m["paper"] for m in all_machines().values()]
    assert (papers.count("groves2017"), papers.count("sand2012"), papers.count("chunduri2019")) == (11, 1, 7)


@pytest.mark.parametrize("bad", ["nonesuch", "../etc/passwd", "Groves2017-Westmere-800-MHz"])
def test_an_unknown_machine_is_a_one_line_error_naming_the_tables(bad):
    from crosstalk.errors import InputError
    from crosstalk.site.machines import load
    with pytest.raises(InputError) as err:
        load(bad)
    text = str(err.value)
    assert "groves2017_table2_2_architectures.csv, " in text and "sandia2012_red_storm_node.csv, " in text
    assert "chunduri2019_gpcnet_table1_systems.csv: machine: " in text and "\n" not in text


def test_vcluster_machines_lists_every_target_with_its_balance_and_source():
    import json
    import subprocess

    from xt_testing import venv_tool

    from crosstalk.site.machines import all_machines
    out = subprocess.run([venv_tool("crosstalk"), "vcluster", "machines", "--json"], capture_output=True,
                         text=True, timeout=60)
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    assert set(rows) == set(all_machines())
    assert rows["sand2012-red-storm-dual-core-node"]["balance"] == "network/memory 0.5 B/B, 2 cores"
    assert rows["chunduri2019-theta"]["balance"] == "dragonfly global:injection 0.55"
    assert rows["chunduri2019-theta"]["source"] == "Chunduri et al. SC19, Table 1"


def test_the_quota_is_spread_over_the_shortest_period_the_kernel_allows():
    # CFS takes quotas of at least 1 ms; the period is as short as that allows (>= 10 ms), so a
    # node's CPU time comes in thin slices, not one burst per 100 ms.
    from crosstalk.vcluster.balance import quota_and_period
    assert quota_and_period(0.01) == (1000, 100_000)
    assert quota_and_period(0.0616) == (1000, 16_234)
    assert quota_and_period(0.5) == (5000, 10_000)
    for share in (0.01, 0.02, MIN_SHARE, 0.0616, 0.3, 1.0):
        quota, period = quota_and_period(share)
        assert quota >= 1000 and 10_000 <= period <= 100_000 and abs(quota / period - share) < 0.001
