"""Committed Spack lock files: ``crosstalk spack concretise`` makes them, ``crosstalk spack check``
(and the fast tests) check that they still fit what the inventories render.

Every inventory that defines ``crosstalk_spack`` is Spack-enabled. Its environment is rendered into
``build/spack/<system>/`` with the spack-packages checkout named on the command line, concretised
there by the Spack checkout named on the command line (``spack concretize --fresh``), and Spack's
``spack.lock`` is written to ``spack-envs/locks/<system>/spack.lock`` (Spack's content in a fixed
order, see ``canonical_lock``), with ``concretised.yaml`` beside it saying which Spack,
spack-packages and clingo made it. Spack's configuration outside
the environment is kept out (its user and system scopes are empty directories under build/), so
the lock depends on the inventory, the two checkouts and the host's OS and libc only.
"""
import json
import os
import re
import shutil
import time
from pathlib import Path

import yaml

from crosstalk import CACHE_DIR, REPO_ROOT
from crosstalk.errors import CrosstalkError, InputError
from crosstalk.proc import run
from crosstalk.site.inventory import INVENTORIES, load_system, load_vars, resolve_inventory
from crosstalk.site.spackenv import (
    BUILTIN_IN_CHECKOUT,
    SPACK_DIR,
    SPACK_VAR,
    check_builtin,
    load_spack_settings,
    load_specs,
    render_spack_env,
    spack_env,
)

LOCKS_DIR = SPACK_DIR / "locks"
WORK_DIR = REPO_ROOT / "build" / "spack"
META = "concretised.yaml"
#: Seconds for ``spack concretize`` (the shipped environments took 60-400 s on 2 shared cores)
#: and for the small commands (git, ``spack --version``, ``spack python``).
CONCRETISE_TIMEOUT = 1800
SHORT_TIMEOUT = 120
_LANGUAGES = ("c", "cxx", "fortran")
_TOKEN = re.compile(r"[@+~]?[^@+~\s]+")
_NAME_VERSION = re.compile(r"^[^@+~\s]+(@[^@+~\s]+)?")


def spack_inventories():
    """The shipped inventories that define ``crosstalk_spack``, by name."""
    return [p.name for p in sorted(INVENTORIES.iterdir())
            if p.is_dir() and SPACK_VAR in load_vars(resolve_inventory(p))]


def lock_dir(system_name, locks=LOCKS_DIR):
    return Path(locks) / system_name


def spec_tokens(spec):
    """A spec's parts regardless of spacing and order (``hpccg@1.0 +mpi`` = ``hpccg@1.0+mpi``)."""
    return tuple(sorted(_TOKEN.findall(spec)))


# ---------------------------------------------------------------------------------------------
# Does a lock fit the rendering?

def _provider(nodes, virtual):
    """The node providing ``virtual`` to any node of the lock (None if nothing needs it)."""
    for node in nodes.values():
        for dep in node.get("dependencies", []):
            if virtual in dep["parameters"]["virtuals"]:
                return nodes[dep["hash"]]
    return None


def _external_problem(node, env_packages, what):
    """Why ``node`` is not one of the rendered externals of its package (None if it is)."""
    name = f"{node['name']}@{node['version']}"
    if "external" not in node:
        return f"{what} {name} is built by Spack, the inventory makes it an external"
    externals = env_packages.get(node["name"], {}).get("externals", [])
    if not any(_NAME_VERSION.match(e["spec"]).group(0) == name and e["prefix"] == node["external"]["path"]
               for e in externals):
        found = ", ".join(_NAME_VERSION.match(e["spec"]).group(0) + " at " + e["prefix"] for e in externals)
        return (f"{what} is {name} at {node['external']['path']}, the inventory renders "
                f"{found or 'no such external'}")
    return None


def lock_problems(inventory, lock=None):
    """Why the committed lock of ``inventory`` no longer fits what the inventory renders today
    (roots, the MPI provider, the compilers, the externals, the target, the builtin repository's
    commit); [] if it fits."""
    inventory = resolve_inventory(inventory)
    name = load_system(inventory)["name"]
    lock = Path(lock or lock_dir(name) / "spack.lock")
    if not lock.is_file():
        return [f"{lock}: missing (run `crosstalk spack concretise`)"]
    settings = load_spack_settings(inventory)
    env = spack_env(settings, load_specs(), lock.parent)["spack"]
    packages = env["packages"]
    data = json.loads(lock.read_text())
    nodes = data["concrete_specs"]
    problems = []
    roots = sorted(r["spec"] for r in data["roots"])
    if sorted(map(spec_tokens, roots)) != sorted(map(spec_tokens, env["specs"])):
        problems.append(f"roots {roots} are not the specs of spack-envs/specs.yaml")
    mpi = _provider(nodes, "mpi")
    wanted_mpi = packages["mpi"]["require"][0]
    if mpi is None or mpi["name"] != wanted_mpi:
        problems.append(f"MPI is {mpi and mpi['name']}, the inventory requires {wanted_mpi}")
    else:
        problems.append(_external_problem(mpi, packages, "MPI"))
    for language in _LANGUAGES:
        node = _provider(nodes, language)
        wanted = packages.get(language, {}).get("require", [None])[0]
        if node is None:
            continue
        if node["name"] != wanted:
            problems.append(f"the {language} compiler is {node['name']}, the inventory renders {wanted}")
        else:
            problems.append(_external_problem(node, packages, f"the {language} compiler"))
    for node in nodes.values():
        if node["name"] in packages and "externals" in packages[node["name"]]:
            problems.append(_external_problem(node, packages, node["name"]))
    target = next((r.split("=", 1)[1] for r in packages["all"].get("require", [])
                   if r.startswith("target=")), None)
    if target:
        off = sorted({n["name"] for n in nodes.values() if "external" not in n
                      and (n["arch"]["target"] if isinstance(n["arch"]["target"], str)
                           else n["arch"]["target"]["name"]) != target})
        if off:
            problems.append(f"{', '.join(off)} not built for target {target}")
    meta_path = lock.parent / META
    meta = yaml.safe_load(meta_path.read_text()) if meta_path.is_file() else {}
    pinned = settings["builtin_repo"].get("commit")
    made = (meta.get("spack_packages") or {}).get("commit")
    if pinned and made != pinned:
        problems.append(f"{meta_path.name}: made with spack-packages {made}, the inventory pins {pinned}")
    return [p for p in problems if p]


# ---------------------------------------------------------------------------------------------
# Concretise

def canonical_lock(text, specs):
    """Spack's lock with the roots in the order of ``specs``, the concrete specs by hash and one
    field a line. Spack 1.1 orders both through sets, differently from one run to the next; the
    content is Spack's (Spack reads the file as it reads its own)."""
    data = json.loads(text)
    order = {spec_tokens(s): i for i, s in enumerate(specs)}
    data["roots"].sort(key=lambda r: order.get(spec_tokens(r["spec"]), len(order)))
    data["concrete_specs"] = dict(sorted(data["concrete_specs"].items()))
    return json.dumps(data, indent=1) + "\n"


def _spack_checkout(path):
    spack = Path(path) / "bin" / "spack"
    if not os.access(spack, os.X_OK):
        raise InputError(path, "--spack", "not a Spack checkout (no executable bin/spack)")
    return spack


def _git(checkout, *args):
    out = run(["git", "-C", str(checkout), *args], SHORT_TIMEOUT, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def _spack_env(work):
    """Environment of every Spack command: its user and system configuration scopes are empty
    directories of ours (a site's packages.yaml could otherwise change the concretisation), its
    caches ours, Python's string hashing fixed (Spack orders the roots through sets)."""
    config = work / "config"
    for scope in ("user", "system"):
        (config / scope).mkdir(parents=True, exist_ok=True)
    # No bootstrapping (it downloads): clingo must be importable by the Python Spack runs.
    (config / "user" / "bootstrap.yaml").write_text("bootstrap:\n  enable: false\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPACK_") or k == "SPACK_PYTHON"}
    env.update(SPACK_USER_CONFIG_PATH=str(config / "user"),
               SPACK_SYSTEM_CONFIG_PATH=str(config / "system"),
               SPACK_USER_CACHE_PATH=str(CACHE_DIR / "spack"), PYTHONHASHSEED="0")
    return env


def _spack_versions(spack, env):
    out = run([str(spack), "--version"], SHORT_TIMEOUT, capture_output=True, text=True, env=env)
    match = re.match(r"^(\S+)(?: \(([0-9a-f]{40})\))?", out.stdout.strip())
    if out.returncode or not match:
        raise CrosstalkError(f"`{spack} --version` failed: {(out.stderr or out.stdout).strip()[:200]}")
    clingo = run([str(spack), "python", "-c", "import clingo; print(clingo.__version__)"],
                 SHORT_TIMEOUT, capture_output=True, text=True, env=env)
    if clingo.returncode:
        raise CrosstalkError("the Python that Spack runs (SPACK_PYTHON, else python3 on PATH) "
                             "cannot import clingo: `pip install clingo` into a venv and set "
                             "SPACK_PYTHON to its python")
    return match.group(1), match.group(2), clingo.stdout.strip()


def concretise(inventory, spack, builtin, work=WORK_DIR, locks=LOCKS_DIR, timeout=CONCRETISE_TIMEOUT,
               versions=None):
    """Render and concretise ``inventory``'s environment; write its lock and ``concretised.yaml``
    into ``<locks>/<system>/``. Returns the metadata written."""
    inventory = resolve_inventory(inventory)
    system = load_system(inventory)["name"]
    settings = load_spack_settings(inventory)
    env_dir = work / "envs" / system
    shutil.rmtree(env_dir, ignore_errors=True)
    render_spack_env(inventory, env_dir, builtin=Path(builtin).resolve())
    env = _spack_env(work)
    spack_version, spack_commit, clingo = versions or _spack_versions(spack, env)
    log = env_dir / "concretize.log"
    argv = [str(spack), "-c", f"config:install_tree:root:{work / 'store'}",
            "-c", f"config:build_stage:{work / 'stage'}",
            "-e", str(env_dir), "concretize", "--fresh"]
    start = time.monotonic()
    with log.open("w") as out:
        proc = run(argv, timeout, f"spack -e {env_dir} concretize --fresh", stdout=out,
                   stderr=out, env=env)
    seconds = round(time.monotonic() - start)
    if proc.returncode:
        last = [ln for ln in log.read_text().splitlines() if ln.strip()][-1:] or [""]
        raise CrosstalkError(f"{system}: `spack concretize` failed with exit status "
                             f"{proc.returncode} ({last[0].strip()[:200]}); whole output: {log}")
    text = canonical_lock((env_dir / "spack.lock").read_text(), load_specs())
    data = json.loads(text)
    nodes = data["concrete_specs"]
    mpi = _provider(nodes, "mpi")
    compilers = sorted({f"{n['name']}@{n['version']}" for n in
                        (_provider(nodes, lang) for lang in _LANGUAGES) if n})
    meta = {
        "inventory": str(inventory.relative_to(REPO_ROOT)) if inventory.is_relative_to(REPO_ROOT)
        else str(inventory),
        "spack": {"version": spack_version, "commit": spack_commit,
                  "pinned": settings["spack"]["version"]},
        "spack_packages": {"commit": _git(builtin, "rev-parse", "HEAD"),
                           "tags": sorted((_git(builtin, "tag", "--points-at", "HEAD") or "").split())},
        "clingo": clingo,
        "command": "spack concretize --fresh",
        "seconds": seconds,
        "packages": len(nodes),
        "built": sum("external" not in n for n in nodes.values()),
        "mpi": mpi and f"{mpi['name']}@{mpi['version']}",
        "compilers": compilers,
    }
    out_dir = lock_dir(system, locks)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "spack.lock").write_text(text)
    (out_dir / META).write_text(
        "# How spack.lock beside this file was made: `crosstalk spack concretise` (docs/spack.md).\n"
        + yaml.safe_dump(meta, sort_keys=False, width=100))
    return meta


def _cmd_concretise(args):
    spack = _spack_checkout(args.spack)
    check_builtin(args.spack_packages, "--spack-packages", args.spack_packages)
    names = args.inventory or spack_inventories()
    env = _spack_env(args.work)
    versions = _spack_versions(spack, env)
    print(f"Spack {versions[0]} ({versions[1]}), clingo {versions[2]}, spack-packages "
          f"{_git(args.spack_packages, 'rev-parse', 'HEAD')}", flush=True)
    for name in names:
        meta = concretise(name, spack, args.spack_packages, args.work, args.locks, args.timeout,
                          versions)
        print(f"{name}: {meta['packages']} packages ({meta['built']} built), MPI {meta['mpi']}, "
              f"{meta['seconds']} s -> {lock_dir(load_system(name)['name'], args.locks)}/spack.lock",
              flush=True)
    return 0


def _cmd_check(args):
    stale = 0
    for name in args.inventory or spack_inventories():
        problems = lock_problems(name)
        stale += bool(problems)
        print(f"{name}: " + ("; ".join(problems) if problems else "the lock fits"))
    return 1 if stale else 0


def register(subparsers):
    spack = subparsers.add_parser("spack", help="concretise the Spack environments, check the locks")
    sub = spack.add_subparsers(dest="spack_command", required=True, metavar="ACTION")
    conc = sub.add_parser("concretise", help="render and concretise every Spack-enabled inventory "
                          "and rewrite spack-envs/locks/<system>/spack.lock")
    conc.add_argument("--spack", required=True, type=Path, help="a Spack checkout (bin/spack)")
    conc.add_argument("--spack-packages", required=True, type=Path,
                      help=f"a spack-packages checkout ({BUILTIN_IN_CHECKOUT})")
    conc.add_argument("--inventory", "-i", action="append",
                      help="only this inventory (repeatable; default: every one with crosstalk_spack)")
    conc.add_argument("--timeout", type=float, default=CONCRETISE_TIMEOUT,
                      help="seconds for each concretisation (default: %(default)s)")
    conc.add_argument("--locks", type=Path, default=LOCKS_DIR,
                      help="write <locks>/<system>/spack.lock (default: %(default)s)")
    conc.add_argument("--work", type=Path, default=WORK_DIR,
                      help="scratch: environments, Spack's configuration scopes (default: %(default)s)")
    conc.set_defaults(func=_cmd_concretise)
    check = sub.add_parser("check", help="do the committed locks fit what the inventories render?")
    check.add_argument("--inventory", "-i", action="append",
                       help="only this inventory (repeatable; default: every one with crosstalk_spack)")
    check.set_defaults(func=_cmd_check)
