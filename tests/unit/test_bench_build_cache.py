"""The kernels' build cache (reframe-tests/xtlib/buildcache.py): a build is used again only for the
same sources, environment and compilers, and an entry is whole or absent."""
import os
import sys
from types import SimpleNamespace

import pytest
from reframe.core.environments import Environment, ProgEnvironment
from xt_testing import REPO

sys.path.insert(0, str(REPO / "reframe-tests"))
from xtlib import buildcache  # noqa: E402

OPTIONS = ["-DCMAKE_BUILD_TYPE=Release"]


@pytest.fixture
def sources(tmp_path):
    src = tmp_path / "bench"
    (src / "src").mkdir(parents=True)
    (src / "CMakeLists.txt").write_text("project(x C)\n")
    (src / "src" / "xt-stream.c").write_text("int main(void) { return 0; }\n")
    return src


@pytest.fixture
def compiler(tmp_path, monkeypatch):
    """A compiler command ``xtcc`` on PATH: its file is what an upgrade would replace."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cc = bin_dir / "xtcc"
    cc.write_text("#!/bin/sh\nexec cc \"$@\"\n")
    cc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return cc


def environ(**kw):
    return ProgEnvironment("gnu-openmpi", **{"cc": "xtcc", "cxx": "xtcc", **kw})


def test_the_key_follows_sources_environment_and_compiler(sources, compiler):
    first = buildcache.key(sources, environ(), OPTIONS)
    assert first == buildcache.key(sources, environ(), OPTIONS) and first.startswith("gnu-openmpi-")
    assert buildcache.key(sources, environ(cflags=["-O0"]), OPTIONS) != first
    assert buildcache.key(sources, environ(), ["-DCMAKE_BUILD_TYPE=Debug"]) != first
    assert buildcache.key(sources, ProgEnvironment("gnu-mpich", cc="xtcc", cxx="xtcc"), OPTIONS) != first
    assert buildcache.key(sources, environ(modules=["openmpi/4.1"]), OPTIONS) is None   # not seen here: not kept
    (sources / "src" / "xt-stream.c").write_text("int main(void) { return 1; }\n")
    edited = buildcache.key(sources, environ(), OPTIONS)
    assert edited != first
    stat = compiler.stat()
    os.utime(compiler, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))   # an upgraded compiler
    assert buildcache.key(sources, environ(), OPTIONS) != edited


def partition(**env_vars):
    return SimpleNamespace(local_env=Environment("part", env_vars=env_vars), prepare_cmds=[])


def test_partitions_that_build_alike_share_a_key_and_others_do_not(sources, compiler, tmp_path, monkeypatch):
    # Two clusters' partitions: launch settings and a PATH entry that holds no compiler differ.
    launch = tmp_path / "launch"
    launch.mkdir()
    (launch / "mpirun").write_text("#!/bin/sh\n")
    first = buildcache.key(sources, environ(), OPTIONS, partition(
        OMPI_MCA_orte_default_hostfile="/run/a/hostfile", SLURM_CONF="/run/a/slurm.conf",
        HYDRA_HOST_FILE="/run/a/hosts", PATH=f"{launch}:$PATH"))
    assert first == buildcache.key(sources, environ(), OPTIONS, partition(
        OMPI_MCA_orte_default_hostfile="/run/b/hostfile", SLURM_CONF="/run/b/slurm.conf"))
    # A variable a compiler wrapper reads, or another compiler first on the build's PATH, is another build.
    assert buildcache.key(sources, environ(), OPTIONS, partition(OMPI_CFLAGS="-O0")) != first
    other = tmp_path / "other"
    other.mkdir()
    (other / "xtcc").write_text("#!/bin/sh\nexec cc -O0 \"$@\"\n")
    (other / "xtcc").chmod(0o755)
    assert buildcache.key(sources, environ(), OPTIONS, partition(PATH=f"{other}:$PATH")) != first
    assert buildcache.key(sources, environ(), OPTIONS,
                          SimpleNamespace(local_env=Environment("p"), prepare_cmds=["module load x"])) is None
    # The environment's variables apply on top of the partition's, referring to them as a shell would.
    on_top = ProgEnvironment("gnu-openmpi", cc="xtcc", cxx="xtcc", env_vars={"OMPI_CFLAGS": "$OMPI_CFLAGS -O2"})
    assert buildcache.key(sources, on_top, OPTIONS, partition(OMPI_CFLAGS="-march=haswell")) != \
        buildcache.key(sources, on_top, OPTIONS, partition(OMPI_CFLAGS="-march=znver3"))
    on_path = environ(env_vars={"PATH": "/nowhere:$PATH"})
    assert buildcache.key(sources, on_path, OPTIONS, partition(PATH=f"{other}:$PATH")) != \
        buildcache.key(sources, on_path, OPTIONS, partition(PATH=f"{launch}:$PATH"))
    via = buildcache.key(sources, environ(), OPTIONS, partition(XTBIN=str(other), PATH="$XTBIN:$PATH"))
    stat = (other / "xtcc").stat()
    os.utime(other / "xtcc", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))   # upgraded where $XTBIN points
    assert buildcache.key(sources, environ(), OPTIONS, partition(XTBIN=str(other), PATH="$XTBIN:$PATH")) != via
    assert buildcache.key(sources, environ(), OPTIONS, partition(OMPI_CFLAGS="$(pkg-config --cflags x)")) is None
    # Another CPU (a clone on a shared file system, a -march=native build) is another build.
    assert buildcache._cpu() and "MHz" not in str(buildcache._cpu())
    monkeypatch.setattr(buildcache, "_cpu", lambda: [("model name", "another CPU")])
    assert buildcache.key(sources, environ(), OPTIONS, partition()) != first


def test_an_entry_is_kept_whole_and_the_first_copy_wins(tmp_path, monkeypatch):
    monkeypatch.setattr(buildcache, "CACHE_ROOT", tmp_path / "cache")
    assert buildcache.lookup("gnu-openmpi-abc") is None
    build = tmp_path / "build"
    (build / "CMakeFiles").mkdir(parents=True)
    for name, text in (("xt-stream", "first"), ("xt-inject", "first"), ("libxtcommon.a", "lib")):
        (build / name).write_text(text)
    buildcache.store(build, "gnu-openmpi-abc")
    found = buildcache.lookup("gnu-openmpi-abc")
    assert found == tmp_path / "cache" / "gnu-openmpi-abc"
    assert sorted(p.name for p in found.iterdir()) == ["xt-inject", "xt-stream"]   # the kernels only
    (build / "xt-stream").write_text("second")
    buildcache.store(build, "gnu-openmpi-abc")              # a concurrent build of the same key
    assert (found / "xt-stream").read_text() == "first"
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["gnu-openmpi-abc"]   # no partial copy
