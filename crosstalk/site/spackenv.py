"""Render a system's Spack environment (``spack-envs/<system>/spack.yaml``) from its inventory.

The inventory variable ``crosstalk_spack`` (group_vars/all/spack.yml) says which compilers and MPI
the system already has (declared as externals, never rebuilt), the target and the mirrors; the specs
come from the one common list ``spack-envs/specs.yaml``. The output is deterministic: the same
inventory gives the same bytes, so a diff of the file is a diff of the build.

Spack's builtin package repository is the inventory's too: ``builtin_repo.path`` (a spack-packages
checkout the site has) or the managed checkout ``<root>/spack-packages`` that playbooks/spack.yml
clones from ``builtin_repo.git_url``. Our own recipes are the repository ``spack-envs/repo/
spack_repo/crosstalk`` (package API v2.0), listed first so that our gpcnet hides builtin's.
"""
import argparse
import os
import re
import sys
from pathlib import Path

import yaml

from crosstalk import REPO_ROOT
from crosstalk.errors import CrosstalkError, InputError
from crosstalk.site.inventory import defining_file, load_system, load_variable, resolve_inventory

SPACK_VAR = "crosstalk_spack"
SPACK_DIR = REPO_ROOT / "spack-envs"
SPECS_FILE = SPACK_DIR / "specs.yaml"
LOCAL_REPO = SPACK_DIR / "repo" / "spack_repo" / "crosstalk"
#: The builtin repository inside a spack-packages checkout.
BUILTIN_IN_CHECKOUT = "repos/spack_repo/builtin"
#: Package name at the start of a spec (``openmpi@4.1.4 +cuda`` -> ``openmpi``).
_NAME = re.compile(r"^([a-z0-9][a-z0-9_-]*)(?=$|[@%+~ ])")
#: (inventory key, Spack language virtual, token in ``languages:=``)
_LANGUAGES = (("cc", "c", "c"), ("cxx", "cxx", "c++"), ("fortran", "fortran", "fortran"))
#: Names that are not packages: an external of that name would corrupt packages.yaml.
RESERVED = {"all", "mpi", "c", "cxx", "fortran"}
#: Root spec -> the packages of its DAG that compile Fortran (the committed locks show them; a test
#: checks this against them). The compiler that builds everything must have ``fortran``.
NEEDS_FORTRAN = {"stream": ["stream"], "lammps": ["fftw"]}

_PIN = {
    "type": "object", "additionalProperties": False, "required": ["version"],
    "properties": {"git_url": {"type": ["string", "null"]},
                   "version": {"type": "string", "minLength": 1},
                   "commit": {"type": ["string", "null"], "pattern": "^[0-9a-f]{40}$"}},
}
_EXTERNAL = {
    "type": "object", "additionalProperties": False, "required": ["spec", "prefix"],
    "properties": {"spec": {"type": "string", "pattern": _NAME.pattern},
                   "prefix": {"type": "string", "pattern": "^/"}},
}
_BUILTIN = {**_PIN, "properties": {
    **_PIN["properties"],
    # An existing spack-packages checkout; without it, the managed one under `root`.
    "path": {"type": ["string", "null"], "pattern": "^/"}}}
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["spack", "builtin_repo", "root", "compilers", "mpi"],
    "properties": {
        "spack": _PIN,
        "builtin_repo": _BUILTIN,
        "root": {"type": "string", "pattern": "^/"},
        "install_tree": {"type": ["string", "null"], "pattern": "^/"},
        "target": {"type": ["string", "null"], "pattern": "^[a-z0-9_]+$"},
        "compilers": {"type": "array", "minItems": 1, "items": {
            "type": "object", "additionalProperties": False, "required": ["spec", "prefix", "cc"],
            "properties": {"spec": {"type": "string", "pattern": _NAME.pattern},
                           "prefix": {"type": "string", "pattern": "^/"},
                           "cc": {"type": "string", "pattern": "^/"},
                           "cxx": {"type": "string", "pattern": "^/"},
                           "fortran": {"type": "string", "pattern": "^/"}}}},
        "mpi": _EXTERNAL,
        "externals": {"type": "array", "items": _EXTERNAL},
        "mirrors": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
        # A directory made by `spack bootstrap mirror` (clingo etc. for clusters without internet).
        "bootstrap_mirror": {"type": ["string", "null"], "pattern": "^/"},
    },
}


def package_name(spec):
    return _NAME.match(spec).group(1)


def load_spack_settings(inventory_dir):
    """The validated ``crosstalk_spack`` of an inventory."""
    return load_variable(inventory_dir, SPACK_VAR, SCHEMA, "Spack in group_vars/all/spack.yml")[1]


def load_specs(path=SPECS_FILE):
    """The common list of specs every environment installs."""
    data = yaml.safe_load(Path(path).read_text())
    specs = data.get("specs") if isinstance(data, dict) else None
    if not isinstance(specs, list) or not specs:
        raise InputError(path, "specs", "must be a non-empty list of Spack specs")
    for i, spec in enumerate(specs):
        if not isinstance(spec, str) or not _NAME.match(spec):
            raise InputError(path, f"specs[{i}]", f"not a Spack spec: {spec!r}")
    return specs


def builtin_checkout(settings):
    """(spack-packages checkout, the inventory field that names it) of ``crosstalk_spack``."""
    path = settings["builtin_repo"].get("path")
    if path:
        return Path(path), f"{SPACK_VAR}.builtin_repo.path"
    return Path(settings["root"]) / "spack-packages", f"{SPACK_VAR}.root"


def check_builtin(checkout, field, source):
    """InputError (naming ``source`` and ``field``) unless ``checkout`` holds the builtin repo.
    Without it Spack blames the first of our recipes that imports from it ("No module named
    'spack_repo'"), not the missing repository."""
    if not (Path(checkout) / BUILTIN_IN_CHECKOUT / "repo.yaml").is_file():
        managed = " (the managed checkout: playbooks/spack.yml clones builtin_repo.git_url there)" \
            if field.endswith(".root") else ""
        raise InputError(source, field, f"no spack-packages checkout at {checkout}{managed}: "
                         f"{BUILTIN_IN_CHECKOUT}/repo.yaml is missing")


def _check_fortran(compilers, specs, where):
    """The first compiler builds everything: refuse one without Fortran if a spec needs it."""
    if "fortran" in compilers[0]:
        return
    needing = [f"{pkg} (for {root})" if pkg != root else pkg
               for root, pkgs in NEEDS_FORTRAN.items()
               if any(package_name(s) == root for s in specs) for pkg in pkgs]
    if needing:
        raise InputError(*where, "no 'fortran' compiler, but this compiler builds everything and "
                         f"{', '.join(needing)} compile Fortran")


def _compiler_external(compiler):
    langs = [(key, virtual, token) for key, virtual, token in _LANGUAGES if key in compiler]
    return {
        "spec": f"{compiler['spec']} languages:='{','.join(token for *_, token in langs)}'",
        "prefix": compiler["prefix"],
        "extra_attributes": {"compilers": {virtual: compiler[key] for key, virtual, _ in langs}},
    }


def _add_external(packages, external, where):
    name = package_name(external["spec"])
    if name in RESERVED:
        raise InputError(*where, f"{name!r} cannot be an external (a virtual or 'all')")
    entry = packages.setdefault(name, {"externals": [], "buildable": False})
    entry["externals"].append(external)


def spack_env(settings, specs, env_dir, source="inventory", builtin=None):
    """The spack.yaml content (a dict) for one system's settings and the common specs.
    ``builtin``: a spack-packages checkout instead of the inventory's (``crosstalk spack``)."""
    compilers = settings["compilers"]
    _check_fortran(compilers, specs, (source, f"{SPACK_VAR}.compilers[0].fortran"))
    mpi_name = package_name(settings["mpi"]["spec"])
    packages = {"all": {"providers": {"mpi": [mpi_name]}}}
    if settings.get("target"):
        packages["all"]["require"] = [f"target={settings['target']}"]
    # The first compiler builds everything: the language virtuals require it.
    first = package_name(compilers[0]["spec"])
    for key, virtual, _ in _LANGUAGES:
        if key in compilers[0]:
            packages[virtual] = {"require": [first]}
    for i, compiler in enumerate(compilers):
        _add_external(packages, _compiler_external(compiler), (source, f"{SPACK_VAR}.compilers[{i}]"))
    mpi = settings["mpi"]
    _add_external(packages, {"spec": mpi["spec"], "prefix": mpi["prefix"]}, (source, f"{SPACK_VAR}.mpi"))
    # A requirement, not only a preference: another MPI visible to Spack (a site's packages.yaml)
    # would otherwise be taken without a word.
    packages["mpi"] = {"buildable": False, "require": [mpi_name]}
    for i, ext in enumerate(settings.get("externals") or []):
        _add_external(packages, {"spec": ext["spec"], "prefix": ext["prefix"]},
                      (source, f"{SPACK_VAR}.externals[{i}]"))

    root = settings["root"]
    # Relative to the environment so the file is the same wherever the repo is checked out.
    local_repo = "$env/" + os.path.relpath(LOCAL_REPO, env_dir)
    checkout = builtin or builtin_checkout(settings)[0]
    env = {
        "specs": list(specs),
        "view": True,
        "concretizer": {"unify": True, "reuse": False},
        "repos": {"crosstalk": local_repo, "builtin": f"{checkout}/{BUILTIN_IN_CHECKOUT}"},
        "packages": packages,
        "config": {"install_tree": {"root": settings.get("install_tree") or f"{root}/opt"}},
    }
    if settings.get("mirrors"):
        env["mirrors"] = dict(sorted(settings["mirrors"].items()))
    return {"spack": env}


def spack_env_text(inventory_dir, out_dir, builtin=None, require_builtin=False):
    """The bytes ``render_spack_env`` writes to ``<out_dir>/spack.yaml``. ``require_builtin``:
    refuse an inventory whose spack-packages checkout is missing (where Spack is to run)."""
    inventory = resolve_inventory(inventory_dir)
    system = load_system(inventory)
    settings = load_spack_settings(inventory)
    source = defining_file(inventory, SPACK_VAR)
    if require_builtin and builtin is None:
        check_builtin(*builtin_checkout(settings), source=source)
    env = spack_env(settings, load_specs(), Path(out_dir).resolve(), source, builtin)
    try:
        shown = inventory.relative_to(REPO_ROOT)
    except ValueError:
        shown = inventory
    header = (f"# Spack environment of system '{system['name']}', generated by `crosstalk config render`\n"
              f"# from {shown} (crosstalk_spack) and spack-envs/specs.yaml. Edit those, not this file.\n")
    return header + yaml.safe_dump(env, sort_keys=False, width=100)


def render_spack_env(inventory_dir, out_dir, builtin=None, require_builtin=False):
    """Write ``<out_dir>/spack.yaml`` for the inventory's system; returns its path."""
    target = Path(out_dir).resolve() / "spack.yaml"
    text = spack_env_text(inventory_dir, target.parent, builtin, require_builtin)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_text() != text:   # keep mtime: Spack re-reads on change
        target.write_text(text)
    return target


def main(argv=None):
    """``python -m crosstalk.site.spackenv -i INVENTORY [-o DIR] [--check]``: print ``changed``/``ok``.

    playbooks/spack.yml uses the word to report idempotently (and --check in check mode).
    """
    parser = argparse.ArgumentParser(prog="python -m crosstalk.site.spackenv", description=main.__doc__)
    parser.add_argument("--inventory", "-i", required=True)
    parser.add_argument("--output", "-o", type=Path, help="default: spack-envs/<system>")
    parser.add_argument("--check", action="store_true", help="report only, write nothing")
    parser.add_argument("--require-builtin", action="store_true",
                        help="refuse an inventory whose spack-packages checkout is missing")
    args = parser.parse_args(argv)
    try:
        out_dir = args.output or SPACK_DIR / load_system(args.inventory)["name"]
        target = Path(out_dir).resolve() / "spack.yaml"
        text = spack_env_text(args.inventory, target.parent, require_builtin=args.require_builtin)
        changed = not target.exists() or target.read_text() != text
        if changed and not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    except CrosstalkError as err:
        print(f"crosstalk: error: {err}", file=sys.stderr)
        return 2
    print(f"{'changed' if changed else 'ok'} {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
