"""Planning a machine balance (crosstalk.vcluster.balance): the CPU share per node for a target's
network-to-memory ratio, its limits, and the line status and the report show (pure)."""
import pytest

from crosstalk.errors import CrosstalkError
from crosstalk.vcluster.balance import MIN_SHARE, describe, plan

CORE = {"triad_Bps": 12.5e9, "dgemm_flops": 40e9}


def test_share_gives_the_ratio_if_triad_scales_with_it():
    # 500 Mbit/s = 62.5 MB/s of link; 0.1 B/B wants 625 MB/s of Triad: 5 % of a 12.5 GB/s core
    assert plan({"id": "m", "network_to_memory": 0.1}, 500_000_000, CORE) == pytest.approx(0.05)


@pytest.mark.parametrize("ratio, rate, problem", [
    (0.0001, 500_000_000, "cores per node at this link rate (500 Mbit/s): lower vcluster_link_rate"),
    (1.0, 10_000_000, "of a core per node at this link rate (10 Mbit/s): raise vcluster_link_rate"),
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


def test_machines_come_from_the_transcribed_tables_with_their_ratio():
    from crosstalk.machines import all_machines, load, ratios
    westmere = load("groves2017-westmere-800-mhz")
    # Table 2.2: QDR IB at 32 Gbit/s (4 GB/s) over 12.8 GB/s of peak DRAM, 4 cores
    assert ratios(westmere) == {"network_to_memory": 4 / 12.8, "network_to_compute": None, "cores": 4}
    assert len(all_machines()) == 11 and westmere["paper"] == "groves2017"


@pytest.mark.parametrize("bad", ["nonesuch", "../etc/passwd", "Groves2017-Westmere-800-MHz"])
def test_an_unknown_machine_is_a_one_line_error_naming_the_tables(bad):
    from crosstalk.errors import InputError
    from crosstalk.machines import load
    with pytest.raises(InputError) as err:
        load(bad)
    assert "groves2017_table2_2_architectures.csv: machine: " in str(err.value) and "\n" not in str(err.value)
