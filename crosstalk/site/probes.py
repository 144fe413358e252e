"""What this machine has: one probe per capability (CPU topology, MPI, Slurm, RDMA, cpufreq, an
energy meter, Apptainer, Spack, network namespaces), read by ``crosstalk doctor``, the host class and
every run's provenance.

Every probe reads the real interface (sysfs, the tool itself); nothing is assumed from the
inventory, so a wrong inventory shows up as a disagreement in ``crosstalk doctor``.
"""
import functools
import glob
import os
import shutil
from dataclasses import dataclass

from crosstalk.errors import CrosstalkError
from crosstalk.proc import run
from crosstalk.site import mpich


@dataclass
class Finding:
    name: str
    present: bool
    detail: str


#: Seconds a probe (``mpirun --version`` & co.) may take.
PROBE_TIMEOUT = 20


def _output(argv):
    """What a probe prints (stdout, else stderr); None if it cannot be started."""
    try:
        out = run(argv, PROBE_TIMEOUT, capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout or out.stderr


def _first_line(argv):
    lines = (_output(argv) or "").strip().splitlines()
    return lines[0].strip() if lines else None


def _version_line(argv, marker):
    return next((ln.strip() for ln in (_output(argv) or "").splitlines() if marker in ln), None)


def _probe(label=None):
    """A probe whose tool hangs finds it absent and says which command hung (``label``:
    the finding's name, default the probe's first argument)."""
    def wrap(probe):
        @functools.wraps(probe)
        def guarded(*args):
            try:
                return probe(*args)
            except CrosstalkError as err:
                return Finding(label or args[0], False, str(err))
        return guarded
    return wrap


@_probe("MPI")
def probe_mpi():
    found = []
    for argv, marker, label in ((["mpirun", "--version"], "Open MPI", "Open MPI"),
                                ([mpich.tool("mpichversion") or "mpichversion", "-v"], "Version:", "MPICH")):
        if shutil.which(argv[0]):
            line = _version_line(argv, marker) or ""
            found.append(f"{label} {line.split()[-1]}" if line else label)
    return Finding("MPI", bool(found), "; ".join(found) or "no mpirun on PATH")


@_probe("Slurm")
def probe_slurm():
    if not shutil.which("srun"):
        return Finding("Slurm", False, "no srun on PATH")
    version = _version_line(["srun", "--version"], "slurm")
    return Finding("Slurm", True, version or "srun installed, no slurm.conf here (no controller)")


def probe_rdma():
    devices = sorted(os.path.basename(p) for p in glob.glob("/sys/class/infiniband/*"))
    if devices:
        return Finding("RDMA devices", True, ", ".join(devices))
    return Finding("RDMA devices", False, "/sys/class/infiniband has no device (no verbs NIC, no rxe/siw)")


def probe_cpufreq():
    policies = glob.glob("/sys/devices/system/cpu/cpufreq/policy*") or \
        glob.glob("/sys/devices/system/cpu/cpu0/cpufreq")
    if not policies:
        return Finding("cpufreq", False, "no /sys/devices/system/cpu/*/cpufreq (frequency cannot be set)")
    governors = ""
    path = os.path.join(policies[0], "scaling_available_governors")
    if os.path.exists(path):
        with open(path) as fp:
            governors = fp.read().strip()
    return Finding("cpufreq", True, f"{len(policies)} policies; governors: {governors or '?'}")


def probe_energy():
    zones = sorted(glob.glob("/sys/class/powercap/intel-rapl:*/energy_uj"))
    if zones:
        return Finding("energy meter", True, f"RAPL/powercap: {len(zones)} zones")
    if os.path.isdir("/sys/cray/pm_counters"):
        return Finding("energy meter", True, "/sys/cray/pm_counters")
    return Finding("energy meter", False,
                   "no RAPL/powercap zone and no /sys/cray/pm_counters (energy will be modelled, Eq 6.2)")


@_probe()
def probe_tool(label, names):
    for name in names:
        if shutil.which(name):
            return Finding(label, True, _first_line([name, "--version"]) or name)
    return Finding(label, False, f"none of {', '.join(names)} on PATH")


@_probe("virtual cluster")
def probe_namespaces():
    if os.geteuid() != 0:
        return Finding("virtual cluster", False, "needs root (network namespaces, tc, Slurm daemons)")
    if not shutil.which("unshare") or not shutil.which("tc"):
        return Finding("virtual cluster", False, "unshare or tc missing (util-linux, iproute2)")
    ok = run(["unshare", "--net", "true"], PROBE_TIMEOUT, capture_output=True).returncode == 0
    return Finding("virtual cluster", ok, "root and network namespaces available" if ok
                   else "cannot create network namespaces here")


def last_level_cache_bytes():
    """Size of the highest cache level of cpu0 (sysfs; sysconf reports 0 on some VMs)."""
    best = (0, 0)
    for index in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(f"{index}/level") as fp:
                level = int(fp.read())
            with open(f"{index}/size") as fp:
                text = fp.read().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 1024, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        size = int(text.rstrip("KMG")) * scale
        best = max(best, (level, size))
    return best[1]


def probe_topology():
    cpus = os.cpu_count() or 0
    model = "?"
    try:
        with open("/proc/cpuinfo") as fp:
            for line in fp:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    numa = len(glob.glob("/sys/devices/system/node/node[0-9]*")) or 1
    llc = last_level_cache_bytes()
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return Finding("CPU topology", cpus > 0,
                   f"{cpus} CPUs ({model}), {numa} NUMA node(s), LLC {llc // 1024} KiB, {mem_gib:.0f} GiB")


def probe_all():
    return [probe_topology(), probe_tool("Compiler", ["gcc", "cc"]), probe_mpi(), probe_slurm(), probe_rdma(),
            probe_cpufreq(), probe_energy(),
            probe_tool("Apptainer", ["apptainer", "singularity"]), probe_tool("Spack", ["spack"]),
            probe_tool("ib_write_bw (perftest)", ["ib_write_bw"]), probe_namespaces()]


def detected_capabilities(findings):
    by_name = {f.name: f.present for f in findings}
    return {
        "rdma": by_name["RDMA devices"],
        "cpufreq": by_name["cpufreq"],
        "rapl": by_name["energy meter"],
        "apptainer": by_name["Apptainer"],
        "spack": by_name["Spack"],
        "link_control": by_name["virtual cluster"],
        "multinode": by_name["virtual cluster"],
    }
