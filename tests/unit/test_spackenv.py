"""Spack environments rendered from inventories, the common spec list and our package repo."""
import ast
import shutil
import subprocess
import sys

import pytest
import yaml
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.site.spackenv import (
    LOCAL_REPO,
    SPECS_FILE,
    load_specs,
    package_name,
    render_spack_env,
    spack_env,
)

SHIPPED = ["local", "example-slurm"]
REPO_PACKAGES = REPO / "spack-envs" / "repo" / "spack_repo" / "crosstalk" / "packages"
#: Packages upstream Spack (spack-packages) has; everything else must be in our repo.
UPSTREAM = {"stream", "osu-micro-benchmarks", "lammps", "hpccg", "gpcnet"}


def env_of(path):
    return yaml.safe_load(path.read_text())["spack"]


def recipes():
    """Package name -> package.py of our repository (API v2.0: directories are module names)."""
    return {p.parent.name.replace("_", "-"): p for p in sorted(REPO_PACKAGES.glob("*/package.py"))}


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
    # g) our repository first: builtin's gpcnet must not hide ours
    assert list(env["repos"]) == ["crosstalk", "builtin"]


def test_local_repo_path_resolves_from_any_output_dir(tmp_path):
    for out_dir in (tmp_path / "a", tmp_path / "deep" / "er" / "b", REPO / "build" / "test-spackenv"):
        env = env_of(render_spack_env("local", out_dir))
        local = env["repos"]["crosstalk"]
        assert local.startswith("$env/")
        assert (out_dir / local[len("$env/"):]).resolve() == LOCAL_REPO.resolve()
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
    ours = recipes()
    for spec in load_specs(SPECS_FILE):
        name = package_name(spec)
        assert name in UPSTREAM or name in ours, f"{name}: no recipe in spack-envs/repo"
    for name in ours.keys() - {"crosstalk-bench"}:   # crosstalk-bench builds from this checkout
        versions = list(_versions(ours[name]))
        assert versions, name
        for version, kwargs in versions:
            commit = kwargs.get("commit", "")
            assert len(commit) == 40 and int(commit, 16) >= 0, f"{name}@{version} not pinned"


def test_spec_versions_exist_in_our_recipes():
    ours = recipes()
    for spec in load_specs():
        name = package_name(spec)
        if name in ours and "@" in spec:
            wanted = spec.split("@", 1)[1].split()[0]
            assert wanted in {v for v, _ in _versions(ours[name])}, spec


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


# a) The builtin repository comes from the inventory: a checkout it names, or the managed one.

def test_builtin_repo_is_the_managed_checkout_or_the_inventorys_path(inventory_copy, tmp_path):
    env = env_of(render_spack_env("example-slurm", tmp_path / "managed"))
    assert env["repos"]["builtin"] == "/opt/crosstalk/spack/spack-packages/repos/spack_repo/builtin"
    inv = inventory_copy()
    edit_spack(inv, lambda s: s["builtin_repo"].update(path="/srv/spack-packages"))
    env = env_of(render_spack_env(inv, tmp_path / "path"))
    assert env["repos"]["builtin"] == "/srv/spack-packages/repos/spack_repo/builtin"
    env = env_of(render_spack_env(inv, tmp_path / "given", builtin=tmp_path / "sp"))
    assert env["repos"]["builtin"] == f"{tmp_path}/sp/repos/spack_repo/builtin"


@pytest.mark.parametrize("path, field", [
    (None, "crosstalk_spack.root"), ("/nonexistent/spack-packages", "crosstalk_spack.builtin_repo.path")])
def test_missing_builtin_repo_is_one_line_naming_the_field(inventory_copy, tmp_path, path, field):
    inv = inventory_copy()
    spack_yml = edit_spack(inv, lambda s: s["builtin_repo"].update(path=path))
    render_spack_env(inv, tmp_path / "out")           # rendering elsewhere (a controller) is fine
    with pytest.raises(InputError) as err:
        render_spack_env(inv, tmp_path / "out", require_builtin=True)
    assert (err.value.path, err.value.field) == (str(spack_yml), field)
    assert "repos/spack_repo/builtin/repo.yaml is missing" in err.value.problem
    assert "\n" not in str(err.value)


def test_require_builtin_accepts_a_checkout_and_the_cli_refuses_none(inventory_copy, tmp_path):
    checkout = tmp_path / "spack-packages"
    (checkout / "repos" / "spack_repo" / "builtin").mkdir(parents=True)
    (checkout / "repos" / "spack_repo" / "builtin" / "repo.yaml").write_text("repo: {namespace: builtin}\n")
    inv = inventory_copy()
    edit_spack(inv, lambda s: s["builtin_repo"].update(path=str(checkout)))
    render_spack_env(inv, tmp_path / "out", require_builtin=True)
    bad = subprocess.run([sys.executable, "-m", "crosstalk.site.spackenv", "-i", "local", "-o",
                          str(tmp_path / "env"), "--require-builtin"], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert bad.stderr.startswith(f"crosstalk: error: {REPO}/inventories/local/group_vars/all/spack.yml: "
                                 "crosstalk_spack.root: no spack-packages checkout at /opt/crosstalk")


# b) The inventory's MPI is a requirement, not a preference another MPI can beat.

@pytest.mark.parametrize("name", SHIPPED)
def test_mpi_is_required(name, tmp_path):
    pkgs = env_of(render_spack_env(name, tmp_path))["packages"]
    assert pkgs["mpi"] == {"buildable": False, "require": ["openmpi"]}


def test_another_mpi_is_required_too(inventory_copy, tmp_path):
    inv = inventory_copy()
    edit_spack(inv, lambda s: s.update(mpi={"spec": "mpich@4.0.2", "prefix": "/usr"}))
    pkgs = env_of(render_spack_env(inv, tmp_path))["packages"]
    assert pkgs["mpi"]["require"] == ["mpich"] and pkgs["mpich"]["buildable"] is False


# c) The compiler that builds everything must compile Fortran: stream and lammps's fftw need it.

def test_compiler_without_fortran_is_refused_at_render_time(inventory_copy, tmp_path):
    inv = inventory_copy()
    path = edit_spack(inv, lambda s: s["compilers"][0].pop("fortran"))
    with pytest.raises(InputError) as err:
        render_spack_env(inv, tmp_path)
    assert (err.value.path, err.value.field) == (str(path), "crosstalk_spack.compilers[0].fortran")
    assert "stream, fftw (for lammps) compile Fortran" in err.value.problem
    assert "\n" not in str(err.value)


def test_compiler_without_fortran_is_fine_when_nothing_needs_fortran(inventory_copy):
    from crosstalk.site.spackenv import load_spack_settings
    settings = load_spack_settings(inventory_copy())
    settings["compilers"][0].pop("fortran")
    env = spack_env(settings, ["osu-micro-benchmarks", "hpccg@1.0 +mpi"], REPO / "spack-envs" / "x")
    assert "fortran" not in env["spack"]["packages"]
    assert env["spack"]["packages"]["gcc"]["externals"][0]["spec"].startswith("gcc@12.2.0 languages:='c,c++'")


# d) Our repository is in the package API v2.0 layout; crosstalk-bench finds its checkout.

def test_repository_is_api_v2():
    assert LOCAL_REPO == REPO / "spack-envs" / "repo" / "spack_repo" / "crosstalk"
    meta = yaml.safe_load((LOCAL_REPO / "repo.yaml").read_text())["repo"]
    assert meta == {"namespace": "crosstalk", "api": "v2.0"}
    assert not (REPO / "spack-envs" / "repo" / "packages").exists()
    assert not (REPO / "spack-envs" / "repo" / "repo.yaml").exists()
    for package_py in recipes().values():
        assert package_py.parent.name.isidentifier(), package_py   # a Python module name


def _checkout_function():
    """crosstalk-bench's ``_checkout`` (the recipe itself imports Spack)."""
    source = recipes()["crosstalk-bench"].read_text()
    (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "_checkout"]
    return ast.get_source_segment(source, node)


@pytest.mark.parametrize("where", ["here", "deeper", "outside"])
def test_crosstalk_bench_finds_its_checkout_wherever_the_recipe_sits(tmp_path, where):
    recipe = recipes()["crosstalk-bench"]
    if where == "here":
        path, expected = recipe, REPO
    elif where == "deeper":   # a layout change inside the repository: still the checkout
        fake = tmp_path / "checkout"
        (fake / "bench").mkdir(parents=True)
        (fake / "bench" / "CMakeLists.txt").write_text("")
        path = fake / "spack-envs" / "a" / "b" / "c" / "d" / "e" / "package.py"
        path.parent.mkdir(parents=True)
        expected = fake
    else:                     # a copy outside any checkout (Spack's provenance of an install)
        path = tmp_path / "copy" / "package.py"
        path.parent.mkdir(parents=True)
        expected = path.parent
    scope = {"Path": __import__("pathlib").Path, "__file__": str(path)}
    exec(_checkout_function(), scope)
    assert scope["_checkout"]() == str(expected.resolve())


# e) Recipes pass Spack's audits: a homepage each, lines of at most 99 characters.

def test_recipes_have_a_homepage_and_short_lines():
    for name, package_py in recipes().items():
        tree = ast.parse(package_py.read_text())
        (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        attrs = {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        if name != "gpcnet":      # subclasses builtin's, which has one
            assert "homepage" in attrs, f"{name}: no homepage (spack audit packages-https crashes)"
        for number, line in enumerate(package_py.read_text().splitlines(), 1):
            assert len(line) <= 99, f"{package_py}:{number}: {len(line)} characters"


# f) The local inventory takes Debian's rdma-core and build tools instead of building them.

def test_local_uses_debians_rdma_core_and_build_tools(tmp_path):
    pkgs = env_of(render_spack_env("local", tmp_path))["packages"]
    for name in ("rdma-core", "cmake", "gmake", "autoconf", "automake", "m4", "findutils"):
        (ext,) = pkgs[name]["externals"]
        assert ext["prefix"] == "/usr" and pkgs[name]["buildable"] is False, name
    assert pkgs["rdma-core"]["externals"][0]["spec"] == "rdma-core@44.0"
