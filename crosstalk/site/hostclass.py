"""Host classes: which hardware a run measured, so numbers of different machines are never pooled.

A *fingerprint* is what the run's host is made of (CPU model, sockets, cores, memory, NUMA nodes,
fabric and link rates, MPI and its version, kernel). The *host class* is a short stable id over the
fields that set performance (everything but the kernel and the host name) plus a readable label.
References, the tidy table, the report, ``compare`` and ``refs calibrate`` are keyed by system and
host class. ``CROSSTALK_HOST_CLASS`` pins the id (a site whose login node differs from its compute
nodes names the class of the nodes; tests fake a foreign host with it).
"""
import glob
import hashlib
import json
import os
import platform
import re

from crosstalk.errors import InputError
from crosstalk.site.probes import probe_mpi

#: Fields that decide the class; the kernel is recorded but a kernel update is the same hardware.
CLASS_FIELDS = ("cpu_model", "sockets", "cores", "memory_gib", "numa_nodes", "fabric", "link_rate",
                "rdma", "mpi")
OVERRIDE_VAR = "CROSSTALK_HOST_CLASS"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _read(path):
    try:
        with open(path) as fp:
            return fp.read()
    except OSError:
        return ""


def _cpuinfo():
    """(model name, sockets, logical CPUs) from /proc/cpuinfo and sysfs."""
    model, packages = None, set()
    for line in _read("/proc/cpuinfo").splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model", "cpu model") and not model:
            model = value
        elif key == "physical id":
            packages.add(value)
    if not packages:
        packages = {_read(p).strip() for p in
                    glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id")}
    return model or platform.processor() or platform.machine(), max(1, len(packages)), os.cpu_count()


def memory_gib():
    match = re.search(r"^MemTotal:\s+(\d+) kB", _read("/proc/meminfo"), re.M)
    return round(int(match.group(1)) / 2**20) if match else None


def _numa_nodes():
    return len(glob.glob("/sys/devices/system/node/node[0-9]*")) or 1


def _rdma_ports():
    """['mlx5_0/1 100 Gb/sec (4X EDR)', ...]: every verbs port and its rate."""
    ports = []
    for rate in sorted(glob.glob("/sys/class/infiniband/*/ports/*/rate")):
        device, port = rate.split("/")[4], rate.split("/")[6]
        ports.append(f"{device}/{port} {_read(rate).strip()}")
    return ports


def _mpi():
    found = probe_mpi()
    return found.detail if found.present else None


def fingerprint(network=None):
    """This host's hardware; ``network`` is the inventory's fabric description (fabric,
    link_rate): a veth or a site's fabric is what the inventory says it is, RDMA ports are read."""
    network = network or {}
    model, sockets, cores = _cpuinfo()
    return {
        "cpu_model": re.sub(r"\s+", " ", model).strip(),
        "sockets": sockets,
        "cores": cores,
        "memory_gib": memory_gib(),
        "numa_nodes": _numa_nodes(),
        "fabric": network.get("fabric"),
        "link_rate": network.get("link_rate"),
        "rdma": _rdma_ports(),
        "mpi": _mpi(),
        "kernel": platform.release(),
    }


def class_id(fp):
    """Eight hex digits over the class fields: the same hardware gives the same id anywhere."""
    canonical = json.dumps({k: fp.get(k) for k in CLASS_FIELDS}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


def label(fp):
    """'Intel(R) Xeon(R) Processor, 2 cores, 24 GiB, veth 1gbit, Open MPI 4.1.4'."""
    cpu = fp.get("cpu_model") or "unknown CPU"
    sockets = fp.get("sockets") or 1
    parts = [f"{sockets}x {cpu}" if sockets > 1 else cpu, f"{fp.get('cores', '?')} cores"]
    if fp.get("memory_gib"):
        parts.append(f"{fp['memory_gib']} GiB")
    if fp.get("fabric") or fp.get("link_rate"):
        parts.append(" ".join(str(x) for x in (fp.get("fabric"), fp.get("link_rate")) if x))
    if fp.get("mpi"):
        parts.append(str(fp["mpi"]).split(";")[0])
    return ", ".join(parts)


def checked_override(value):
    """The pinned id, or ValueError: it names a file (references/<system>/<id>.yaml)."""
    if not _ID.match(value):
        raise ValueError(f"{value!r}: use letters, digits, '_', '.', '-' (up to 64 characters)")
    return value


def host_class(network=None):
    """``{'id', 'label', 'fingerprint', 'pinned'}`` of this host (``CROSSTALK_HOST_CLASS`` wins)."""
    fp = fingerprint(network)
    pinned = os.environ.get(OVERRIDE_VAR)
    try:
        hc_id = checked_override(pinned) if pinned else class_id(fp)
    except ValueError as err:
        raise InputError(OVERRIDE_VAR, None, str(err)) from None
    return {"id": hc_id, "label": label(fp) + (" (host class pinned)" if pinned else ""),
            "fingerprint": fp, "pinned": bool(pinned)}


def from_provenance(prov):
    """The host class a run recorded; for runs recorded before fingerprints existed, derived from
    what their provenance does say (CPU topology line, MPI, link state), labelled as such."""
    if prov.get("host_class"):
        return prov["host_class"]
    machine = prov.get("machine") or {}
    topology = (machine.get("CPU topology") or {}).get("detail") or ""
    match = re.match(r"(\d+) CPUs \((.*?)\), (\d+) NUMA node\(s\).*?, (\d+) GiB", topology)
    links = prov.get("link_state") or {}
    first = next(iter(links.values()), {}) if isinstance(links, dict) else {}
    fp = {
        "cpu_model": match.group(2) if match else None,
        "sockets": None,
        "cores": int(match.group(1)) if match else None,
        "memory_gib": int(match.group(4)) if match else None,
        "numa_nodes": int(match.group(3)) if match else None,
        "fabric": "veth" if links else None,
        "link_rate": first.get("rate") if isinstance(first, dict) else None,
        "rdma": [],
        "mpi": (prov.get("versions") or {}).get("MPI"),
        "kernel": prov.get("kernel"),
    }
    if not match:
        return {"id": "unknown", "label": "unknown host (run recorded no hardware)",
                "fingerprint": fp, "pinned": False}
    return {"id": class_id(fp), "label": label(fp) + " (from a pre-fingerprint provenance)",
            "fingerprint": fp, "pinned": False}
