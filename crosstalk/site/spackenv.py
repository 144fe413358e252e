"""Render a system's Spack environment (``spack-envs/<system>/spack.yaml``) from its inventory.

The inventory variable ``crosstalk_spack`` (group_vars/all/spack.yml) says which compilers and MPI
the system already has (declared as externals, never rebuilt), the target and the mirrors; the specs
come from the one common list ``spack-envs/specs.yaml``. The output is deterministic: the same
inventory gives the same bytes, so a diff of the file is a diff of the build.
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
LOCAL_REPO = SPACK_DIR / "repo"
#: Package name at the start of a spec (``openmpi@4.1.4 +cuda`` -> ``openmpi``).
_NAME = re.compile(r"^([a-z0-9][a-z0-9_-]*)(?=$|[@%+~ ])")
#: (inventory key, Spack language virtual, token in ``languages:=``)
_LANGUAGES = (("cc", "c", "c"), ("cxx", "cxx", "c++"), ("fortran", "fortran", "fortran"))
#: Names that are not packages: an external of that name would corrupt packages.yaml.
RESERVED = {"all", "mpi", "c", "cxx", "fortran"}

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
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["spack", "builtin_repo", "root", "compilers", "mpi"],
    "properties": {
        "spack": _PIN,
        "builtin_repo": _PIN,
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


def spack_env(settings, specs, env_dir, source="inventory"):
    """The spack.yaml content (a dict) for one system's settings and the common specs."""
    compilers = settings["compilers"]
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
    packages["mpi"] = {"buildable": False}
    for i, ext in enumerate(settings.get("externals") or []):
        _add_external(packages, {"spec": ext["spec"], "prefix": ext["prefix"]},
                      (source, f"{SPACK_VAR}.externals[{i}]"))

    root = settings["root"]
    # Relative to the environment so the file is the same wherever the repo is checked out.
    local_repo = "$env/" + os.path.relpath(LOCAL_REPO, env_dir)
    env = {
        "specs": list(specs),
        "view": True,
        "concretizer": {"unify": True, "reuse": False},
        "repos": {"crosstalk": local_repo,
                  "builtin": f"{root}/spack-packages/repos/spack_repo/builtin"},
        "packages": packages,
        "config": {"install_tree": {"root": settings.get("install_tree") or f"{root}/opt"}},
    }
    if settings.get("mirrors"):
        env["mirrors"] = dict(sorted(settings["mirrors"].items()))
    return {"spack": env}


def spack_env_text(inventory_dir, out_dir):
    """The bytes ``render_spack_env`` writes to ``<out_dir>/spack.yaml``."""
    inventory = resolve_inventory(inventory_dir)
    system = load_system(inventory)
    settings = load_spack_settings(inventory)
    env = spack_env(settings, load_specs(), Path(out_dir).resolve(), defining_file(inventory, SPACK_VAR))
    try:
        shown = inventory.relative_to(REPO_ROOT)
    except ValueError:
        shown = inventory
    header = (f"# Spack environment of system '{system['name']}', generated by `crosstalk config render`\n"
              f"# from {shown} (crosstalk_spack) and spack-envs/specs.yaml. Edit those, not this file.\n")
    return header + yaml.safe_dump(env, sort_keys=False, width=100)


def render_spack_env(inventory_dir, out_dir):
    """Write ``<out_dir>/spack.yaml`` for the inventory's system; returns its path."""
    target = Path(out_dir).resolve() / "spack.yaml"
    text = spack_env_text(inventory_dir, target.parent)
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
    args = parser.parse_args(argv)
    try:
        out_dir = args.output or SPACK_DIR / load_system(args.inventory)["name"]
        target = Path(out_dir).resolve() / "spack.yaml"
        text = spack_env_text(args.inventory, target.parent)
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
