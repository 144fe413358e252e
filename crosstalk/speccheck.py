"""``crosstalk spec check SPEC...``: validate experiment specs before running them.

A SPEC is a spec file (``my-exp.yaml``: anything with ``/`` or a ``.yaml``/``.yml`` suffix), a
directory (every ``*.yaml`` in it) or the name of a shipped experiment (``stream``). Each valid spec
prints one line on stdout with the cases each profile sweeps; each broken one prints one line on
stderr naming the file and the field. Exit status 2 if any spec is broken.
"""
import re
import sys
from pathlib import Path

from crosstalk.errors import InputError
from crosstalk.specs import EXPERIMENTS_DIR, PROFILES, load_spec_file

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def spec_files(item):
    """The spec files ``item`` (a path, a directory or a shipped experiment's name) stands for."""
    if "/" in item or item.endswith((".yaml", ".yml")) or item in (".", ".."):
        path = Path(item)
        if path.is_dir():
            found = sorted(path.glob("*.yaml"))
            if not found:
                raise InputError(item, None, "no *.yaml spec in this directory")
            return found
        return [path]
    known = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))
    if not _NAME.match(item) or item not in known:
        raise InputError(repr(item), "experiment", f"unknown experiment (known: {', '.join(known)}; "
                         "give a path with '/' for a spec file elsewhere)")
    return [EXPERIMENTS_DIR / f"{item}.yaml"]


def summary(spec, profiles):
    parts = [f"{p} {len(spec.sweep(p)) * spec.repeats(p)} cases" for p in profiles]
    return f"{spec.path}: ok ({spec.name}: {', '.join(parts)})"


def _checked(item):
    """(spec or None, error or None) for each spec file ``item`` stands for."""
    try:
        paths = spec_files(item)
    except InputError as err:
        yield None, err
        return
    for path in paths:
        try:
            yield load_spec_file(path), None
        except InputError as err:
            yield None, err


def _cmd_check(args):
    profiles = [args.profile] if args.profile else list(PROFILES)
    broken = 0
    for item in args.specs:
        for spec, error in _checked(item):
            if error:
                print(f"crosstalk: error: {error}", file=sys.stderr)
                broken += 1
            else:
                print(summary(spec, profiles))
    return 2 if broken else 0


def register(subparsers):
    spec = subparsers.add_parser("spec", help="validate experiment specs")
    sub = spec.add_subparsers(dest="spec_command", required=True, metavar="ACTION")
    p = sub.add_parser("check", help="validate spec files (or shipped experiments) against the schema")
    p.add_argument("specs", nargs="+", metavar="SPEC",
                   help="spec file, directory of specs, or name of a shipped experiment")
    p.add_argument("--profile", "-p", choices=PROFILES,
                   help="count the cases of this profile only (default: every profile)")
    p.set_defaults(func=_cmd_check)
