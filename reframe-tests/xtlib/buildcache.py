"""Kernels built once for what they are built from, then used by every later build of the same.

A CMake build of bench/ costs 3-8 s of CPU, and a run makes one per partition and environment
(the test suite about forty, on two cores). The key is what the binaries depend on: bench/'s files,
the environment's name, compilers, flags, variables and modules, the CMake options, and the
compilers found on PATH (their real path, size and time: an upgraded MPI or GCC is another key).
An entry is complete when it exists: it is filled under a temporary name, then renamed.
``rm -rf build/cache/bench`` forgets them all.
"""
import hashlib
import os
import shutil
import uuid
from pathlib import Path

from crosstalk import REPO_ROOT

CACHE_ROOT = REPO_ROOT / "build" / "cache" / "bench"
#: what a build leaves that the tests run (libxtcommon.a is linked into each)
KERNELS = "xt-*"


def _compiler(name):
    found = shutil.which(name) if name else None
    if found is None:
        return f"{name}=?"
    real = os.path.realpath(found)
    st = os.stat(real)
    return f"{name}={real}:{st.st_size}:{st.st_mtime_ns}"


def key(sources, environ, options):
    """``<environment>-<digest>`` of the sources directory, the ReFrame environment and the options."""
    digest = hashlib.sha256()
    sources = Path(sources)
    for path in sorted(p for p in sources.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes() + b"\0")
    described = (environ.name, environ.cc, environ.cxx, environ.cppflags, environ.cflags, environ.cxxflags,
                 environ.ldflags, sorted(environ.env_vars.items()), list(environ.modules), list(options),
                 [_compiler(tool) for tool in (environ.cc, environ.cxx, "cc")])
    digest.update(repr(described).encode())
    return f"{environ.name}-{digest.hexdigest()[:20]}"


def lookup(entry):
    """The entry's directory if its kernels were built before, else None."""
    path = CACHE_ROOT / entry
    return path if (path / "xt-stream").is_file() else None


def store(build_dir, entry):
    """Keep a finished build's kernels under ``entry``; a concurrent build's copy may win."""
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    partial = CACHE_ROOT / f".{entry}.{uuid.uuid4().hex[:8]}"
    partial.mkdir()
    try:
        for kernel in Path(build_dir).glob(KERNELS):
            shutil.copy2(kernel, partial / kernel.name)
        os.rename(partial, CACHE_ROOT / entry)
    except OSError:             # the entry exists already (another run's build): keep that one
        shutil.rmtree(partial, ignore_errors=True)
