"""The papers' machines as balance targets (``crosstalk vcluster up --like ID``).

Read from the transcribed tables in results/papers (each cites its paper). A machine gives the
virtual cluster one or both of:
- a node balance: ``network_to_memory``, bytes of node link per byte of memory bandwidth (peak
  injection over peak DRAM, as the papers print peak rates), and ``cores`` per node; set by a CPU
  quota per node. Groves 2017 Table 2.2 and the SAND2012-1750 Red Storm node.
- a fabric balance: ``fabric`` = the topology kind and its global (or uplink) bandwidth over the
  injection bandwidth below it; set on the routed topologies' switch links. GPCNeT Table 1.
``network_to_compute`` is None: no table gives a flop rate.
"""
import re
from functools import lru_cache
from types import SimpleNamespace

from crosstalk.errors import InputError
from crosstalk.models.papers import PAPERS_DIR, paper_table_rows

_ID = re.compile(r"^[a-z0-9-]+$")


def _slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _node(row, injection_GBps, memory_source):
    return {"name": row.machine, "cores": int(row.cores), "memory_GBps": float(row.dram_GBps),
            "memory_source": memory_source, "injection_GBps": injection_GBps, "network": row.network,
            "fabric": None}


def _groves(row):
    return {**_node(row, float(row.network_gbit) / 8, "peak DRAM"), "nic": row.nic}


def _red_storm(row):
    return _node(row, float(row.injection_GBps), "peak DRAM (the parts' rate)")


def _gpcnet(row):
    groups = int(row.groups) if row.groups else None
    return {"name": row.system, "cores": None, "memory_GBps": None, "injection_GBps": None,
            "network": row.interconnect, "nodes": int(row.nodes),
            "fabric": {"topology": row.topology, "global_to_injection": float(row.global_to_injection),
                       "groups": groups}}


#: table -> how one of its rows becomes a machine
TABLES = {"groves2017_table2_2_architectures": _groves,
          "sandia2012_red_storm_node": _red_storm,
          "chunduri2019_gpcnet_table1_systems": _gpcnet}


@lru_cache(maxsize=None)
def all_machines():
    """{id: machine} over every table: id ``<paper>-<machine slug>``."""
    found = {}
    for table, machine_of in TABLES.items():
        rows, attrs = paper_table_rows(table)
        for row in rows:
            machine = machine_of(SimpleNamespace(**row))
            machine_id = f"{attrs['paper']}-{_slug(machine['name'])}"
            found[machine_id] = {"id": machine_id, "paper": attrs["paper"], "source": attrs["citation"], **machine}
    return found


def load(machine_id):
    """One machine, or InputError naming the tables and the known ids."""
    machines = all_machines()
    if not _ID.match(str(machine_id)) or machine_id not in machines:
        where = ", ".join(str(PAPERS_DIR / f"{t}.csv") for t in TABLES)
        raise InputError(where, "machine", f"{machine_id!r} is not a known machine (known: {', '.join(machines)})")
    return machines[machine_id]


def ratios(machine):
    """The balance a virtual cluster can take from ``machine`` (None where the machine gives none)."""
    memory = machine["memory_GBps"]
    return {"network_to_memory": machine["injection_GBps"] / memory if memory else None,
            "network_to_compute": None, "cores": machine["cores"], "fabric": machine["fabric"]}
