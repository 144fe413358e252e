"""Kernels built once for what they are built from, then copied into every later build of the same.

A CMake build of bench/ costs 3-8 s of CPU, and a run makes one per partition and environment
(the test suite about forty, on two cores). The key is what the binaries depend on: bench/'s files,
the machine type and CPU (a -march=native build runs only where it was made), the environment's
compilers and flags, the CMake options, the variables the build sees (the shell's build variables,
CFLAGS, OMPI_CC, ..., then the partition's and the environment's but those only a launch reads,
OMPI_MCA_*, SLURM_*, ..., each expanded as ReFrame's exports are), and the compilers and cmake the
build's PATH finds (real path, size and time: an upgraded MPI or GCC is another key). The system's
name is not part of it: partitions and systems that build alike on one host share their kernels.
Where modules, a partition's prepare commands or a command in a variable set the build's
environment, which no file here shows, nothing is cached. An entry is complete when it exists: it
is filled under a temporary name, then renamed; storing is best effort.
"""
import hashlib
import os
import platform
import re
import shutil
import uuid
from pathlib import Path

from crosstalk import REPO_ROOT

CACHE_ROOT = REPO_ROOT / "build" / "cache" / "bench"
#: what a build leaves that the tests run (libxtcommon.a is linked into each)
KERNELS = "xt-*"


def _tool(name, path):
    found = shutil.which(name, path=path) if name else None
    if found is None:
        return f"{name}=?"
    real = os.path.realpath(found)
    st = os.stat(real)
    return f"{name}={real}:{st.st_size}:{st.st_mtime_ns}"


def _cpu():
    """The first CPU's description (Linux: model, feature flags, ...; not its clock, which moves),
    else what the platform says."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    fields = (line.split(":", 1) for line in text.split("\n\n", 1)[0].splitlines() if ":" in line)
    return sorted((name.strip(), value.strip()) for name, value in fields
                  if not any(word in name.lower() for word in ("processor", "mhz", "bogomips")))


#: variables of the shell that CMake, the compilers or the MPI wrappers read
INHERITED = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "CPATH", "C_INCLUDE_PATH",
             "LIBRARY_PATH", "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "OMPI_CC", "OMPI_CFLAGS", "OMPI_LDFLAGS",
             "MPICH_CC", "MPICH_CFLAGS", "MPICH_LDFLAGS")
#: variables a partition or environment sets for launching jobs, which no build reads (PATH counts
#: through the tools it finds)
LAUNCH_ONLY = ("SLURM_", "HYDRA_", "OMPI_MCA_", "OMPI_ALLOW_RUN_AS_ROOT", "PRTE_MCA_", "PMIX_MCA_")
_REFERENCE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def _build_environment(*sources):
    """The variables the build script sees: the shell's, then each of ``sources`` in turn (the
    partition's, then the environment's, as ReFrame exports them), a value's ``$NAME`` read from
    what came before; None where a value runs a command (its output is not known here)."""
    env = dict(os.environ)
    for variables in sources:
        for name, value in variables.items():
            value = str(value)
            if "$(" in value or "`" in value:
                return None
            env[name] = _REFERENCE.sub(lambda m: env.get(m.group(1) or m.group(2), ""), value)
    return env


def key(sources, environ, options, partition=None):
    """``<environment>-<digest>`` of the sources directory, the ReFrame environment (and partition)
    and the options; None where modules, prepare commands or a command in a variable make the
    build's environment."""
    local = partition.local_env if partition is not None else None
    if environ.modules or (local is not None and local.modules) or (partition is not None and partition.prepare_cmds):
        return None
    set_here = [local.env_vars if local is not None else {}, environ.env_vars]
    env = _build_environment(*set_here)
    if env is None:
        return None
    digest = hashlib.sha256()
    sources = Path(sources)
    for path in sorted(p for p in sources.rglob("*") if p.is_file() and "build" not in p.relative_to(sources).parts):
        digest.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes() + b"\0")
    names = {name for name in set(INHERITED).union(*set_here) if name != "PATH" and not name.startswith(LAUNCH_ONLY)}
    described = (platform.machine(), _cpu(), environ.name, environ.cc, environ.cxx, environ.cppflags,
                 environ.cflags, environ.cxxflags, environ.ldflags, list(options),
                 [(name, env.get(name)) for name in sorted(names)],
                 [_tool(tool, env.get("PATH", "")) for tool in (environ.cc, environ.cxx, "cc", "gcc", "cmake")])
    digest.update(repr(described).encode())
    return f"{environ.name}-{digest.hexdigest()[:20]}"


def lookup(entry):
    """The entry's directory if its kernels were built before, else None."""
    path = CACHE_ROOT / entry
    return path if (path / "xt-stream").is_file() else None


def store(build_dir, entry):
    """Keep a finished build's kernels under ``entry``, best effort: a concurrent build's copy may
    win, and a cache that cannot be written (permissions, a full disk) leaves the build as it is."""
    partial = CACHE_ROOT / f".{entry}.{uuid.uuid4().hex[:8]}"
    try:
        partial.mkdir(parents=True)
        for kernel in Path(build_dir).glob(KERNELS):
            shutil.copy2(kernel, partial / kernel.name)
        os.rename(partial, CACHE_ROOT / entry)
    except OSError:             # e.g. the entry exists already (another run's build): keep that one
        shutil.rmtree(partial, ignore_errors=True)
