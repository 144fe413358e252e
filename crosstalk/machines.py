"""The papers' machines as balance targets (``crosstalk vcluster up --like ID``).

Read from the transcribed tables in results/papers (each cites its paper); one machine per row of
Groves 2017 Table 2.2 so far. A machine's balance is what the virtual cluster can be shaped to:
``network_to_memory``, bytes of node link per byte of memory bandwidth (Table 2.2's network rate
over its peak DRAM rate; peak, not STREAM, is what the paper prints), and ``cores`` per node.
``network_to_compute`` is None: the table gives no flop rate.
"""
import re
from functools import lru_cache

from crosstalk.errors import InputError
from crosstalk.models.papers import PAPERS_DIR, load_paper_table

TABLES = ("groves2017_table2_2_architectures",)
_ID = re.compile(r"^[a-z0-9-]+$")


def _slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@lru_cache(maxsize=None)
def all_machines():
    """{id: machine} over every table: id ``<paper>-<machine slug>``."""
    found = {}
    for table in TABLES:
        df = load_paper_table(table)
        paper = df.attrs["paper"]
        for row in df.itertuples(index=False):
            machine_id = f"{paper}-{_slug(row.machine)}"
            found[machine_id] = {
                "id": machine_id, "name": row.machine, "paper": paper, "source": df.attrs["citation"],
                "cores": int(row.cores), "memory_GBps": float(row.dram_GBps), "memory_source": "peak DRAM",
                "injection_GBps": float(row.network_gbit) / 8, "network": row.network, "nic": row.nic}
    return found


def load(machine_id):
    """One machine, or InputError naming the tables and the known ids."""
    machines = all_machines()
    if not _ID.match(str(machine_id)) or machine_id not in machines:
        where = ", ".join(str(PAPERS_DIR / f"{t}.csv") for t in TABLES)
        raise InputError(where, "machine", f"{machine_id!r} is not a known machine (known: {', '.join(machines)})")
    return machines[machine_id]


def ratios(machine):
    """The balance a virtual cluster can take from ``machine``."""
    return {"network_to_memory": machine["injection_GBps"] / machine["memory_GBps"],
            "network_to_compute": None, "cores": machine["cores"]}
