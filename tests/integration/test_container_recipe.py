"""The image recipe, proven without Apptainer.

containers/crosstalk.def's %post runs only containers/install.sh. Here the same script runs inside a
Debian bookworm rootfs made by mmdebstrap (as a customize hook, in a chroot), with %files' copies
done the same way; then charliecloud's ch-run runs xt-stream and the def's own %test in that rootfs.
The rootfs is cached under build/containers/, keyed by the hash of everything that goes into it.
"""
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from xt_testing import REPO

from crosstalk.site.containers import DEF_FILE, lint_def

pytestmark = [pytest.mark.slow, pytest.mark.root]

CACHE = REPO / "build" / "containers"
SOURCES = [REPO / "containers" / "install.sh", REPO / "bench"]


def _inputs_hash():
    digest = hashlib.sha256()
    for source in SOURCES:
        files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
        for path in files:
            if "build" in path.relative_to(REPO).parts[1:]:
                continue                       # a developer's in-tree build, not an input
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _copies(sections):
    """%files pairs (source relative to the repo, destination in the image)."""
    return [text.split() for _, text in sections["files"] if text.strip() and not text.strip().startswith("#")]


def _remove_tree(path):
    """rmtree that first unmounts what a killed mmdebstrap left mounted inside (its chroot binds
    /proc, /sys, /dev/pts and /dev/shm): deleting through those would reach the host's files."""
    path = Path(path).resolve()
    with open("/proc/mounts") as mounts:
        inside = [Path(line.split()[1]) for line in mounts]
    for mount in sorted((m for m in inside if path in m.parents), key=lambda m: -len(m.parts)):
        subprocess.run(["umount", "--lazy", str(mount)], check=True, timeout=60)
    shutil.rmtree(path, ignore_errors=True)


def _build_rootfs(dest, copies, log):
    tmp = dest.with_name(dest.name + ".tmp")
    _remove_tree(tmp)
    hooks = []
    for source, target in copies:
        parent = os.path.dirname(target)
        hooks += ["--customize-hook", f'mkdir -p "$1{parent}"',
                  "--customize-hook", f"copy-in {REPO / source} {parent}"]
        if os.path.basename(source) != os.path.basename(target):
            hooks += ["--customize-hook", f'mv "$1{parent}/{os.path.basename(source)}" "$1{target}"']
    hooks += ["--customize-hook", 'chroot "$1" /bin/sh /opt/crosstalk/src/install.sh /opt/crosstalk/src']
    # without fsync while it is built (mmdebstrap's own hook; it takes itself out of the rootfs after
    # install.sh's apt-get): about 19 000 files
    hooks += ["--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata"]
    with open(log, "w") as out:
        proc = subprocess.run(["mmdebstrap", "--variant=apt", "--mode=root", *hooks, "bookworm", str(tmp)],
                              stdout=out, stderr=subprocess.STDOUT, timeout=900)
    assert proc.returncode == 0, f"mmdebstrap failed, see {log}:\n" + log.read_text()[-3000:]
    tmp.rename(dest)


@pytest.fixture(scope="module")
def rootfs():
    for tool in ("mmdebstrap", "ch-run"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed (playbooks/provision.yml installs it)")
    if os.geteuid() != 0:
        pytest.skip("mmdebstrap --mode=root needs root")
    if not (REPO / "bench" / "CMakeLists.txt").exists():
        pytest.fail("bench/CMakeLists.txt missing: nothing to install")
    _, sections, _ = lint_def(DEF_FILE)
    dest = CACHE / f"rootfs-{_inputs_hash()}"
    if not (dest / "opt" / "crosstalk" / "versions.txt").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        for stale in CACHE.glob("rootfs-*"):
            _remove_tree(stale)
        start = time.monotonic()
        _build_rootfs(dest, _copies(sections), CACHE / "mmdebstrap.log")
        print(f"rootfs built in {time.monotonic() - start:.0f} s: {dest}")
    return dest, sections


def _ch_run(root, argv, **kwargs):
    env = dict(os.environ, USER=os.environ.get("USER", "root"), OMP_NUM_THREADS="1")
    return subprocess.run(["ch-run", "--unset-env=*", "--set-env=PATH=/opt/crosstalk/bin:/usr/bin:/bin",
                           "--set-env=OMP_NUM_THREADS=1", str(root), "--", *argv],
                          capture_output=True, text=True, env=env, timeout=300, **kwargs)


def test_xt_stream_validates_inside_the_rootfs(rootfs):
    root, _ = rootfs
    proc = _ch_run(root, ["/opt/crosstalk/bin/xt-stream", "--threads", "1", "--size", "2000000",
                          "--ntimes", "3"])
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert all(r["kernel"] == "xt-stream" for r in records)
    validations = [r for r in records if r["type"] == "validation"]
    assert validations and all(v["passed"] is True for v in validations), validations
    triad = [r for r in records if r["type"] == "result" and r["metric"].startswith("triad")]
    assert triad and all(r["value"] > 0 and r["unit"] == "MB/s" for r in triad)


def test_def_test_section_passes_inside_the_rootfs(rootfs):
    root, sections = rootfs
    script = "set -e\n" + "\n".join(text for _, text in sections["test"])
    proc = _ch_run(root, ["/bin/sh", "-c", script])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"validation"' in proc.stdout


def test_image_records_installed_versions(rootfs):
    root, _ = rootfs
    versions = dict(line.split(" ", 1) for line in
                    (root / "opt" / "crosstalk" / "versions.txt").read_text().splitlines())
    assert versions["org.crosstalk.installed.openmpi-bin"].startswith("4.1.4")
    assert versions["org.crosstalk.installed.debian"].startswith("12.")
    assert versions["org.crosstalk.installed.mpich"].startswith("4.0")
    for tool in ("mpirun", "lmp", "hpcc", "ib_write_bw"):
        assert _ch_run(root, ["/bin/sh", "-c", f"command -v {tool}"]).returncode == 0, tool


@pytest.mark.parametrize("bin_dir, library", [("/opt/crosstalk/bin", "libmpi.so.40"),
                                              ("/opt/crosstalk/mpich/bin", "libmpich.so.12")])
def test_each_kernel_build_links_its_own_mpi(rootfs, bin_dir, library):
    """The hybrid bind model replaces the image's MPI library by the host's of the same ABI: the
    MPICH build must load libmpich.so.12 (the MPICH ABI), the default build Open MPI's."""
    root, _ = rootfs
    proc = _ch_run(root, ["ldd", f"{bin_dir}/xt-rmamt"])
    assert proc.returncode == 0, proc.stderr
    assert library in proc.stdout, proc.stdout
