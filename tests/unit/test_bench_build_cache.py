"""The kernels' build cache (reframe-tests/xtlib/buildcache.py): a build is used again only for the
same sources, environment and compilers, and an entry is whole or absent."""
import os
import sys

import pytest
from reframe.core.environments import ProgEnvironment
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
