"""Why a claim's magnitude differs here: the platform's balance beside the paper's machines',
computed from the run's provenance (link rate, NIC kind) and its measurements (Triad), never typed in.

A claim names the balance that governs its magnitude (``balance:`` in the spec):

* ``network_to_memory``: bytes a node's link can inject per byte of memory bandwidth (Groves 2017
  §2.2.4 explains NiMC's spread across machines by this ratio), against Groves' machines (Table
  2.2), and how much of Triad the link could take at the paper's 14 B/B (Fig 2.21b).
"""
import numpy as np

from crosstalk.claims.operands import Missing, values
from crosstalk.models.papers import load_paper_table

#: Where a platform's memory bandwidth is read: STREAM Triad at the most threads, else NiMC's
#: no-injection Triad on all cores.
_TRIAD = ({"metric": "triad_bw", "experiment": "stream", "select": {"threads": "@max"}},
          {"metric": "triad_bw", "experiment": "nimc-stream", "select": {"injection": "off", "cores": "all"}})


def _triad_mbps(table):
    for operand in _TRIAD:
        try:
            return float(np.median(values(operand, table, operand["experiment"])))
        except Missing:
            continue
    return None


def network_to_memory(table, facts):
    link, triad = facts.get("link_gbit"), _triad_mbps(table)
    if not link or not triad:
        return None
    link_mbps = link * 1e3 / 8
    machines = load_paper_table("groves2017_table2_2_architectures")
    ratio = machines["network_gbit"] * 1e3 / 8 / (machines["dram_GBps"] * 1e3)
    onload = ratio[machines["nic"] == "onload"]
    throttling = load_paper_table("groves2017_fig2_21b_throttling").set_index("quantity")["value"]
    slope = float(throttling["dram_bw_lost_per_rdma_bw"])
    text = (f"balance: a {link:g} Gbit/s link per node against {triad / 1e3:.3g} GB/s of Triad, "
            f"{link_mbps / triad:.2g} B of network per B of memory; Groves' machines "
            f"{ratio.min():.2g}-{ratio.max():.2g}, onload {onload.min():.2g}-{onload.max():.2g} (Table 2.2). "
            f"At the paper's {slope:g} B/B the link could take at most {min(1.0, slope * link_mbps / triad):.1%} of Triad here")
    if facts.get("nic") in ("tcp", "onload"):
        text += f"; the host's cores also run the network protocol (nic: {facts['nic']}), so injection takes CPU from STREAM too"
    return text


BALANCES = {"network_to_memory": network_to_memory}


def note(claim, table, facts):
    """The balance note of a claim on one platform, or None (no balance named, or not measured)."""
    name = claim.get("balance")
    return BALANCES[name](table, facts or {}) if name else None
