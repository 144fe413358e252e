"""Why a claim's magnitude differs here: the platform's balance beside the paper's machines',
computed from the run's provenance (link rate, NIC kind) and its measurements (Triad), never typed in.

A claim names the balance that governs its magnitude (``balance:`` in the spec):

* ``network_to_memory``: bytes a node's link can inject per byte of memory bandwidth (Groves 2017
  §2.2.4 explains NiMC's spread across machines by this ratio), against Groves' machines (Table
  2.2), and how much of Triad the link could take at the paper's 14 B/B (Fig 2.21b).
* ``communication_share``: the part of a run's time that is link time, from the same run at full
  and quarter bandwidth (t = compute + bytes / bandwidth), against the same share of SAND2012-1750's
  applications (Table 6.2 at 1/4), and the paper machine the system was shaped like, if any.
"""
from functools import lru_cache

import numpy as np

from crosstalk import REPO_ROOT
from crosstalk.claims.operands import Missing, values
from crosstalk.errors import CrosstalkError
from crosstalk.models.papers import load_paper_table
from crosstalk.site.inventory import load_vars

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
            f"At the paper's {slope:g} B/B the link could take at most "
            f"{min(1.0, slope * link_mbps / triad):.1%} of Triad here")
    if facts.get("nic") in ("tcp", "onload"):
        text += (f"; the host's cores also run the network protocol (nic: {facts['nic']}), so injection "
                 "takes CPU from STREAM too")
    if facts.get("kind") == "vcluster":
        text += ("; the virtual cluster's nodes share one host's cores, so the injector's origin node "
                 "takes its share of them from STREAM's node as well (docs/claims.md)")
    return text


def communication_share(table, facts):
    """E6: with t = c + m/b, a quarter of the bandwidth adds 3 m/b, so link time at full bandwidth
    is (t_1X - t_4X) / 3 of t_4X; Table 6.2 gives the same for the paper's applications."""
    try:
        t4, t1 = (float(np.median(values({"metric": "time_s", "select": {"link": link, "cpu_freq": "default"}},
                                         table, "energy"))) for link in ("4X", "1X"))
    except Missing:
        return None
    share = max(0.0, (t1 - t4) / (3 * t4))
    paper = load_paper_table("sandia2012_table6_2_network_bandwidth")["quarter_rt_pct"].clip(lower=0) / 100 / 3
    text = (f"balance: {share:.0%} of the full-bandwidth run time is link time here ({t4:.3g} s at 4X, "
            f"{t1:.3g} s at 1X; t = compute + bytes / bandwidth); the paper's applications "
            f"{paper.min():.0%}-{paper.max():.0%} (Table 6.2 at 1/4 bandwidth)")
    if facts.get("like"):
        achieved = facts.get("network_to_memory")
        text += (f"; this system is shaped like {facts['like']}"
                 + (f", {achieved:.2g} B of network per B of memory reached" if achieved else ""))
    elif share > 0.5:
        text += "; the link, not compute, sets the time here"
    return text


BALANCES = {"network_to_memory": network_to_memory, "communication_share": communication_share}


@lru_cache(maxsize=None)
def shaped_like(machine):
    """Names of the shipped inventories whose systems are shaped like ``machine`` (a virtual
    cluster's ``vcluster_like``, a site's ``crosstalk_system.like``); read once per process, not
    once per claim and platform."""
    found = []
    for inventory in sorted(p for p in (REPO_ROOT / "inventories").iterdir() if p.is_dir()):
        try:
            variables = load_vars(inventory)
        except CrosstalkError:
            continue
        like = variables.get("vcluster_like") or (variables.get("crosstalk_system") or {}).get("like")
        if like == machine:
            found.append(inventory.name)
    return tuple(found)


def needed_balance(like, facts, experiment):
    """Where a platform is not shaped like the machine an experiment needs (its spec's ``like``):
    what it needs and the command that runs it on an inventory shaped like it, or None."""
    if not like or facts.get("like") == like:
        return None
    here = f"like {facts['like']}" if facts.get("like") else "not shaped"
    text = f"this experiment needs a system shaped like {like} and this one is {here}"
    inventories = shaped_like(like)
    if inventories:
        text += f": `crosstalk run --system {inventories[0]} -e {experiment}` runs it on one that is"
    error = ((facts.get("moved") or {}).get(experiment) or {}).get("error")
    if error:
        text += f"; the main job could not: {error}"
    return text


def note(claim, table, facts, like=None, experiment=None):
    """The balance note of a claim on one platform, or None (no balance named, or not measured);
    ``like``: the machine the claim's experiment needs (its spec's), said where this platform is
    shaped otherwise."""
    name = claim.get("balance")
    text = BALANCES[name](table, facts or {}) if name else None
    needed = needed_balance(like, facts or {}, experiment) if name else None
    return "; ".join(filter(None, [text, needed])) or None
