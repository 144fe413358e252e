"""The committed Spack locks (spack-envs/locks/<system>/) fit what the inventories render today;
``crosstalk spack concretise`` makes them (with a real Spack, when one is on PATH)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from xt_testing import REPO

from crosstalk.site.spackenv import NEEDS_FORTRAN, load_spack_settings, load_specs
from crosstalk.site.spacklock import LOCKS_DIR, META, canonical_lock, lock_problems, spack_inventories

SHIPPED = ["example-slurm", "local"]


def lock_of(name):
    return json.loads((LOCKS_DIR / name / "spack.lock").read_text())


def meta_of(name):
    return yaml.safe_load((LOCKS_DIR / name / META).read_text())


def crosstalk(*args, **kw):
    return subprocess.run([sys.executable, "-m", "crosstalk.cli", *args], capture_output=True, text=True,
                          timeout=300, **kw)


@pytest.fixture
def inventory_copy(tmp_path):
    def make(name, change):
        dest = tmp_path / "inv" / name
        shutil.copytree(REPO / "inventories" / name, dest)
        path = dest / "group_vars" / "all" / "spack.yml"
        data = yaml.safe_load(path.read_text())
        change(data["crosstalk_spack"])
        path.write_text(yaml.safe_dump(data))
        return dest
    return make


def test_every_spack_inventory_has_a_lock():
    assert spack_inventories() == SHIPPED
    assert sorted(p.name for p in LOCKS_DIR.iterdir()) == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_committed_lock_fits_the_rendering(name):
    assert lock_problems(name) == []


@pytest.mark.parametrize("name", SHIPPED)
def test_lock_was_made_by_a_real_spack_with_the_pinned_builtin_repo(name):
    lock, meta = lock_of(name), meta_of(name)
    settings = load_spack_settings(name)
    assert lock["_meta"]["file-type"] == "spack-lockfile"
    assert lock["spack"]["version"] == meta["spack"]["version"]
    assert lock["spack"]["commit"] == meta["spack"]["commit"] and len(meta["spack"]["commit"]) == 40
    assert meta["spack"]["version"].startswith("1.1")
    assert meta["spack"]["pinned"] == settings["spack"]["version"]
    assert meta["spack_packages"]["commit"] == settings["builtin_repo"]["commit"]
    assert meta["packages"] == len(lock["concrete_specs"])
    assert meta["mpi"] == "openmpi@4.1.4" and meta["compilers"] == ["gcc@12.2.0"]
    assert meta["command"] == "spack concretize --fresh"


@pytest.mark.parametrize("change, words", [
    (lambda s: s.update(mpi={"spec": "mpich@4.0.2", "prefix": "/usr"}), "MPI is openmpi, the inventory requires mpich"),
    (lambda s: s["mpi"].update(spec="openmpi@5.0.3"),
     "MPI is openmpi@4.1.4 at /usr, the inventory renders openmpi@5.0.3"),
    (lambda s: s["compilers"][0].update(spec="gcc@13.2.0"), "the c compiler is gcc@12.2.0"),
    (lambda s: s["compilers"].insert(0, {"spec": "clang@16.0.6", "prefix": "/usr", "cc": "/usr/bin/clang",
                                         "cxx": "/usr/bin/clang++", "fortran": "/usr/bin/gfortran"}),
     "the c compiler is gcc, the inventory renders clang"),
    (lambda s: s.update(target="zen3"), "not built for target zen3"),
    (lambda s: s["builtin_repo"].update(commit="0" * 40), "made with spack-packages 119680a"),
])
def test_a_rendering_the_lock_no_longer_fits_is_named(inventory_copy, change, words):
    problems = lock_problems(inventory_copy("example-slurm", change))
    assert any(words in p for p in problems), problems


@pytest.mark.parametrize("name", SHIPPED)
def test_lock_is_spacks_content_in_a_fixed_order(name):
    """Spack 1.1 orders roots and concrete specs differently from run to run (seen here: three
    runs, three orders); the committed lock is in the order canonical_lock gives, whatever Spack's."""
    text = (LOCKS_DIR / name / "spack.lock").read_text()
    assert canonical_lock(text, load_specs()) == text
    data = json.loads(text)
    data["roots"].reverse()
    data["concrete_specs"] = dict(reversed(list(data["concrete_specs"].items())))
    spacks = json.dumps(data, separators=(",", ":"))       # as Spack writes it: one line
    assert canonical_lock(spacks, load_specs()) == text
    assert [r["spec"].split("@")[0].split("+")[0] for r in json.loads(text)["roots"]] == [
        s.split("@")[0].split()[0] for s in load_specs()]


def test_changed_spec_list_is_named(tmp_path):
    other = tmp_path / "spack.lock"
    lock = lock_of("local")
    lock["roots"] = lock["roots"][1:]
    other.write_text(json.dumps(lock))
    shutil.copy(LOCKS_DIR / "local" / META, tmp_path / META)
    (problem,) = lock_problems("local", other)
    assert problem.startswith("roots [") and "are not the specs of spack-envs/specs.yaml" in problem


def test_needs_fortran_is_what_the_locks_say():
    """The render-time refusal of a compiler without Fortran names the packages the locks show."""
    wanted = {pkg for pkgs in NEEDS_FORTRAN.values() for pkg in pkgs}
    for name in SHIPPED:
        nodes = lock_of(name)["concrete_specs"].values()
        fortran = {n["name"] for n in nodes for d in n.get("dependencies", [])
                   if "fortran" in d["parameters"]["virtuals"]} - {"openmpi"}   # external: not built
        assert fortran == wanted, name


def test_local_builds_no_debian_package():
    """f): rdma-core and the build tools come from Debian; only what Debian 12 lacks is built."""
    nodes = lock_of("local")["concrete_specs"].values()
    external = {n["name"] for n in nodes if "external" in n}
    built = {n["name"] for n in nodes if "external" not in n}
    assert {"rdma-core", "cmake", "autoconf", "automake", "m4", "gmake", "openmpi", "gcc"} <= external
    assert not built & {"rdma-core", "libnl", "bison", "flex", "python", "py-cython", "cmake", "perl"}
    assert meta_of("local")["packages"] <= 30


def test_check_command_says_the_locks_fit():
    proc = crosstalk("spack", "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "example-slurm: the lock fits\nlocal: the lock fits\n"


@pytest.mark.parametrize("args, message", [
    (["--spack", "/nonexistent", "--spack-packages", "/tmp"],
     "crosstalk: error: /nonexistent: --spack: not a Spack checkout (no executable bin/spack)\n"),
    (["--spack", "{fake}", "--spack-packages", "/nonexistent"],
     "crosstalk: error: /nonexistent: --spack-packages: no spack-packages checkout at /nonexistent: "
     "repos/spack_repo/builtin/repo.yaml is missing\n"),
])
def test_concretise_refuses_what_is_not_a_checkout(tmp_path, args, message):
    fake = tmp_path / "spack"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "spack").write_text("#!/bin/sh\nexit 1\n")
    (fake / "bin" / "spack").chmod(0o755)
    proc = crosstalk("spack", "concretise", *[a.format(fake=fake) for a in args])
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, message, "")


def _spack_checkouts():
    """(Spack checkout, spack-packages checkout), or the reason to skip."""
    spack = shutil.which("spack")
    if not spack:
        return None, "spack is not on PATH"
    builtin = os.environ.get("CROSSTALK_SPACK_PACKAGES")
    if not builtin:
        return None, "spack is on PATH, CROSSTALK_SPACK_PACKAGES (a spack-packages checkout) is not set"
    return (Path(spack).resolve().parent.parent, Path(builtin)), None


@pytest.mark.slow
def test_concretise_with_the_spack_on_path_writes_the_committed_locks(tmp_path):
    checkouts, reason = _spack_checkouts()
    if reason:
        pytest.skip(reason)
    spack, builtin = checkouts
    proc = crosstalk("spack", "concretise", "--spack", str(spack), "--spack-packages", str(builtin),
                     "--locks", str(tmp_path / "locks"), "--work", str(tmp_path / "work"),
                     "--timeout", "1500", timeout=3600)
    assert proc.returncode == 0, proc.stderr
    for name in SHIPPED:
        new = tmp_path / "locks" / name / "spack.lock"
        assert lock_problems(name, new) == []
        made, committed = json.loads(new.read_text()), lock_of(name)
        assert sorted(r["spec"] for r in made["roots"]) == sorted(r["spec"] for r in committed["roots"])
        assert len(made["concrete_specs"]) == len(committed["concrete_specs"])
        if made["spack"] == committed["spack"]:   # same Spack: the same packages, hashes aside from
            names = sorted(n["name"] for n in made["concrete_specs"].values())   # crosstalk-bench's commit
            assert names == sorted(n["name"] for n in committed["concrete_specs"].values())
