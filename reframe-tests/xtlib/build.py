"""Where the crosstalk kernels come from on a partition: CMake here, Spack or the image elsewhere.

The partition's ``extras.build_origin`` (rendered from the inventory) chooses; tests only ever ask
the fixture for ``bin_dir``. CMake builds are kept (xtlib.buildcache): a later build of the same
sources with the same environment uses them.
"""
import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function

from crosstalk import REPO_ROOT
from xtlib import buildcache
from xtlib.launch import container_prefix

CMAKE_OPTIONS = ["-DCMAKE_BUILD_TYPE=Release"]


class BenchBuild(rfm.CompileOnlyRegressionTest):
    """Build (or locate) the xt-* kernels once per partition and environment."""

    descr = "crosstalk kernels (bench/)"
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    build_locally = True
    sourcesdir = str(REPO_ROOT / "bench")
    build_time_limit = "15m"

    @property
    def origin(self):
        return self.current_partition.extras.get("build_origin", "cmake")

    #: the kernels' build-cache entry (cmake; None: not cached), and its directory when they were
    #: built before
    cache_entry = None
    cached_dir = None

    @run_before("compile")
    def choose_build(self):
        if self.origin == "cmake":
            self.cache_entry = buildcache.key(self.sourcesdir, self.current_environ, CMAKE_OPTIONS,
                                              self.current_partition)
            found = buildcache.lookup(self.cache_entry) if self.cache_entry else None
            if found is not None:
                # copied into the stage: the kernels run from it, as built ones do (a run's
                # leftovers are found by their stage path)
                self.cached_dir = str(found)
                self.sourcesdir = None
                self.build_system = "CustomBuild"
                self.build_system.commands = [f"mkdir -p build && cp -p {shlex.quote(self.cached_dir)}/xt-* build/"]
                return
            self.build_system = "CMake"
            self.build_system.builddir = "build"
            self.build_system.config_opts = list(CMAKE_OPTIONS)
            self.build_system.max_concurrency = 2
        elif self.origin == "spack":
            # The environment rendered from the inventory (playbooks/spack.yml installs it).
            env = self.current_partition.extras.get(
                "spack_env", str(REPO_ROOT / "spack-envs" / self.current_system.name))
            self.sourcesdir = None
            self.build_system = "CustomBuild"
            self.build_system.commands = [
                f"spack -e {shlex.quote(env)} location -i crosstalk-bench > bench_prefix.txt"]
        else:   # container: the kernels are inside the image already
            self.sourcesdir = None
            self.build_system = "CustomBuild"
            self.build_system.commands = [f"echo {shlex.quote(container_prefix(self))} > bench_prefix.txt"]

    @run_before("sanity")
    def keep_kernels(self):
        built = self.bin_dir
        if self.cache_entry and self.cached_dir is None and os.path.isfile(os.path.join(built, "xt-stream")):
            buildcache.store(built, self.cache_entry)

    @sanity_function
    def built(self):
        if self.origin == "cmake":
            return sn.path_isfile(os.path.join(self.bin_dir, "xt-stream"))
        return sn.path_isfile(os.path.join(self.stagedir, "bench_prefix.txt"))

    @property
    def bin_dir(self):
        if self.origin == "cmake":
            return os.path.join(self.stagedir, "build")
        if self.origin == "container":          # a path inside the image, known without running
            return os.path.join(container_prefix(self), "bin")
        if self.is_dry_run():                   # Spack was not asked: a placeholder in the job scripts
            return os.path.join("spack-location-of-crosstalk-bench", "bin")
        with open(os.path.join(self.stagedir, "bench_prefix.txt")) as fp:
            return os.path.join(fp.read().strip(), "bin")
