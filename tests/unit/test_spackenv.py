"""Spack environments rendered from inventories, the common spec list and our package repo."""
import ast
import shutil
import subprocess
import sys

import pytest
import yaml
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.site.spackenv import SPECS_FILE, load_specs, package_name, render_spack_env

SHIPPED = ["local", "example-slurm"]
REPO_PACKAGES = REPO / "spack-envs" / "repo" / "packages"
#: Packages upstream Spack (spack-packages) has; everything else must be in our repo.
UPSTREAM = {"stream", "osu-micro-benchmarks", "lammps", "hpccg", "gpcnet"}


def env_of(path):
    return yaml.safe_load(path.read_text())["spack"]


@pytest.fixture
def inventory_copy(tmp_path):
    def make(name="local"):
        dest = tmp_path / "inv" / name
        shutil.copytree(REPO / "inventories" / name, dest)
        return dest
    return make


def edit_spack(inventory, change):
    path = inventory / "group_vars" / "all" / "spack.yml"
    data = yaml.safe_load(path.read_text())
    change(data["crosstalk_spack"])
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("name", SHIPPED)
def test_render_externals_and_common_specs(name, tmp_path):
    out = render_spack_env(REPO / "inventories" / name, tmp_path / "envs" / name)
    assert out == tmp_path / "envs" / name / "spack.yaml"
    env = env_of(out)
    assert env["specs"] == load_specs()
    pkgs = env["packages"]
    (gcc,) = pkgs["gcc"]["externals"]
    assert gcc["spec"].startswith("gcc@12.2.0 languages:='c,c++,fortran'")
    assert gcc["extra_attributes"]["compilers"] == {
        "c": "/usr/bin/gcc", "cxx": "/usr/bin/g++", "fortran": "/usr/bin/gfortran"}
    assert pkgs["openmpi"]["externals"][0]["spec"].startswith("openmpi@4.1.4")
    assert pkgs["openmpi"]["externals"][0]["prefix"] == "/usr"
    assert pkgs["openmpi"]["buildable"] is False and pkgs["mpi"]["buildable"] is False
    assert pkgs["all"]["providers"]["mpi"] == ["openmpi"]
    assert pkgs["c"]["require"] == ["gcc"]


def test_local_repo_path_resolves_from_any_output_dir(tmp_path):
    for out_dir in (tmp_path / "a", tmp_path / "deep" / "er" / "b", REPO / "build" / "test-spackenv"):
        env = env_of(render_spack_env("local", out_dir))
        local = env["repos"]["crosstalk"]
        assert local.startswith("$env/")
        assert (out_dir / local[len("$env/"):]).resolve() == (REPO / "spack-envs" / "repo").resolve()
    shutil.rmtree(REPO / "build" / "test-spackenv")


def test_render_is_deterministic(tmp_path):
    first = render_spack_env("example-slurm", tmp_path / "one" / "x").read_bytes()
    second = render_spack_env("example-slurm", tmp_path / "two" / "x").read_bytes()
    assert first == second
    assert render_spack_env("example-slurm", tmp_path / "one" / "x").read_bytes() == first


def test_example_slurm_target_and_site_externals(tmp_path):
    env = env_of(render_spack_env("example-slurm", tmp_path))
    assert env["packages"]["all"]["require"] == ["target=x86_64_v3"]
    for name in ("rdma-core", "ucx", "slurm"):
        assert env["packages"][name]["buildable"] is False
    assert "mirrors" not in env      # none configured: Spack's defaults


def test_mirrors_are_sorted(inventory_copy, tmp_path):
    inv = inventory_copy()
    edit_spack(inv, lambda s: s.update(mirrors={"site": "file:///m/site", "cache": "file:///m/c"}))
    env = env_of(render_spack_env(inv, tmp_path / "out"))
    assert list(env["mirrors"]) == ["cache", "site"]


@pytest.mark.parametrize("change, field, problem", [
    (lambda s: s["mpi"].update(prefix="usr"), "crosstalk_spack.mpi.prefix", "does not match"),
    (lambda s: s.pop("compilers"), "crosstalk_spack", "'compilers' is a required property"),
    (lambda s: s["compilers"][0].update(spec="@12"), "crosstalk_spack.compilers[0].spec", "match"),
    (lambda s: s["builtin_repo"].update(commit="v1"), "crosstalk_spack.builtin_repo.commit", "match"),
    (lambda s: s.update(externals=[{"spec": "mpi@3", "prefix": "/usr"}]),
     "crosstalk_spack.externals[0]", "cannot be an external"),
    (lambda s: s.update(target="x86-64 v3; rm"), "crosstalk_spack.target", "does not match"),
])
def test_bad_spack_settings_name_file_and_field(inventory_copy, tmp_path, change, field, problem):
    inv = inventory_copy()
    path = edit_spack(inv, change)
    with pytest.raises(InputError) as err:
        render_spack_env(inv, tmp_path / "out")
    assert err.value.path == str(path)
    assert err.value.field == field
    assert problem in err.value.problem
    assert "\n" not in str(err.value)


def test_missing_spack_settings(inventory_copy, tmp_path):
    inv = inventory_copy()
    (inv / "group_vars" / "all" / "spack.yml").unlink()
    with pytest.raises(InputError, match="crosstalk_spack: missing"):
        render_spack_env(inv, tmp_path / "out")


@pytest.mark.parametrize("text, field", [
    ("specs: []\n", "specs"),
    ("nospecs: [stream]\n", "specs"),
    ("specs: [stream, '+openmp']\n", "specs[1]"),
])
def test_bad_spec_list(tmp_path, text, field):
    path = tmp_path / "specs.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_specs(path)
    assert (err.value.path, err.value.field) == (str(path), field)


def _versions(package_py):
    """(version name, keyword arguments) of every ``version(...)`` directive in a recipe."""
    tree = ast.parse(package_py.read_text(), str(package_py))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "version":
            yield node.args[0].value, {k.arg: k.value.value for k in node.keywords}


def test_every_spec_has_a_recipe_and_ours_are_pinned():
    ours = {p.name for p in REPO_PACKAGES.iterdir() if (p / "package.py").is_file()}
    for spec in load_specs(SPECS_FILE):
        name = package_name(spec)
        assert name in UPSTREAM or name in ours, f"{name}: no recipe in spack-envs/repo"
    for name in ours - {"crosstalk-bench"}:   # crosstalk-bench builds from this checkout
        versions = list(_versions(REPO_PACKAGES / name / "package.py"))
        assert versions, name
        for version, kwargs in versions:
            commit = kwargs.get("commit", "")
            assert len(commit) == 40 and int(commit, 16) >= 0, f"{name}@{version} not pinned"


def test_spec_versions_exist_in_our_recipes():
    ours = {p.name for p in REPO_PACKAGES.iterdir() if (p / "package.py").is_file()}
    for spec in load_specs():
        name = package_name(spec)
        if name in ours and "@" in spec:
            wanted = spec.split("@", 1)[1].split()[0]
            assert wanted in {v for v, _ in _versions(REPO_PACKAGES / name / "package.py")}, spec


def test_cli_reports_changed_then_ok_and_check_writes_nothing(tmp_path):
    def cli(*extra):
        return subprocess.run([sys.executable, "-m", "crosstalk.site.spackenv", "-i", "local",
                               "-o", str(tmp_path / "env"), *extra], capture_output=True, text=True)

    target = tmp_path / "env" / "spack.yaml"
    assert cli("--check").stdout == f"changed {target}\n" and not target.exists()
    assert cli().stdout == f"changed {target}\n" and target.exists()
    assert cli().stdout == f"ok {target}\n"
    assert cli("--check").stdout == f"ok {target}\n"
    bad = subprocess.run([sys.executable, "-m", "crosstalk.site.spackenv", "-i", "nosuch"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("crosstalk: error: nosuch: inventory: no such inventory")
