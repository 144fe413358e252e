"""``crosstalk run``: render the configuration, record provenance, run ReFrame on the right node."""
import datetime as dt
import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from crosstalk import REPO_ROOT, __version__, results_root
from crosstalk.configrender import config_path, render
from crosstalk.doctor import probe_all
from crosstalk.errors import CrosstalkError, InputError
from crosstalk.hostclass import host_class
from crosstalk.inventory import load_system, resolve_inventory
from crosstalk.references import calibrate_command, reference_file
from crosstalk.specs import PROFILES, all_specs

TESTS_DIR = REPO_ROOT / "reframe-tests"
VERSIONED = ("MPI", "Slurm", "Compiler")


def _git(*args):
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def new_run_id(now=None):
    now = now or dt.datetime.now(dt.timezone.utc)
    sha = _git("rev-parse", "--short=8", "HEAD") or "nogit"
    return f"{now:%Y%m%dT%H%M%SZ}-{sha}"


def test_module(spec_name):
    return TESTS_DIR / f"{spec_name.replace('-', '_')}.py"


def select_experiments(names):
    specs = {s.name: s for s in all_specs()}
    if names:
        unknown = [n for n in names if n not in specs]
        if unknown:
            raise InputError("--experiments", None,
                             f"unknown experiment {unknown[0]!r} (known: {', '.join(sorted(specs))})")
        chosen = [specs[n] for n in names]
    else:
        chosen = list(specs.values())
    return [s for s in chosen if test_module(s.name).exists()]


def provenance(system, profile, specs, run_id, extra=None):
    """What a reader needs to trust or reproduce a run (stored as provenance.json)."""
    import reframe
    findings = probe_all()
    return {
        "run_id": run_id,
        "system": system,
        "profile": profile,
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "crosstalk": __version__,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "specs": {s.name: {"path": str(s.path.relative_to(REPO_ROOT)), "sha256": s.sha256} for s in specs},
        "versions": {"reframe": reframe.VERSION,
                     **{f.name: f.detail for f in findings if f.name in VERSIONED}},
        "machine": {f.name: {"present": f.present, "detail": f.detail} for f in findings},
        **(extra or {}),
    }


def _vcluster(inventory):
    """The virtual cluster an inventory of kind vcluster builds, up (brought up if needed)."""
    from crosstalk.vcluster import VCluster
    cluster = VCluster.from_inventory(inventory)
    cluster.up()
    if not cluster.visible_on_nodes(results_root()):
        raise InputError("CROSSTALK_RESULTS_DIR", None,
                         f"{results_root()} is invisible on the virtual cluster's nodes (each has a "
                         f"private /tmp and /dev/shm): use a directory under the repository")
    return cluster


def default_system():
    """The embedded virtual cluster when this user can build it, else this machine alone."""
    if os.geteuid() == 0 and shutil.which("unshare") and (REPO_ROOT / "inventories" / "vcluster").is_dir():
        return "vcluster", None
    why = "not root" if os.geteuid() != 0 else "no virtual cluster inventory or no unshare"
    return "local", f"using system 'local' (one node): the virtual cluster needs root ({why})"


def reference_note(system, host, run_id, gate):
    """One line on the references this run is checked against, or how to get some."""
    path = reference_file(system, host["id"])
    if path:
        return f"references: {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}"
    what = ("--gate fails every value without a reference" if gate else
            "host-specific values are recorded, not checked (explore mode); sanity checks apply")
    return (f"no references for {system} on host class {host['id']} ({host['label']}): {what}. "
            f"To gate here: {calibrate_command(system, [run_id])}")


def run(system, profile="quick", experiments=(), gate=False, partitions=(), reframe_args=(),
        out=sys.stdout):
    if profile not in PROFILES:
        raise InputError("--profile", None, f"unknown profile {profile!r}")
    inventory = resolve_inventory(system)
    description = load_system(inventory)
    system = description["name"]
    render(inventory)
    specs = select_experiments(experiments)
    if not specs:
        raise CrosstalkError("no experiment has a ReFrame test module yet")
    cluster = _vcluster(inventory) if description["kind"] == "vcluster" else None
    host = host_class(description.get("network"))
    run_id = new_run_id()
    run_dir = results_root() / system / "runs" / run_id
    run_dir.mkdir(parents=True)

    extra = {"kind": description["kind"], "host_class": host}
    if cluster is not None:
        extra.update(nodes=list(cluster.nodes), link_state=cluster.link_state())
    (run_dir / "provenance.json").write_text(
        json.dumps(provenance(system, profile, specs, run_id, extra), indent=2) + "\n")

    targets = [f"{system}:{p}" for p in partitions] or [system]
    argv = [str(Path(sys.executable).with_name("reframe")), "-C", str(config_path(system))]
    for spec in specs:
        argv += ["-c", str(test_module(spec.name))]
    for target in targets:
        argv += ["--system", target]
    if gate:
        argv += ["-S", "require_reference=true"]
    argv += [f"--exec-policy={description.get('exec_policy', 'async')}"]
    argv += ["-r", *reframe_args]
    env = dict(os.environ, CROSSTALK_RUN_DIR=str(run_dir), CROSSTALK_PROFILE=profile,
               CROSSTALK_HOST_CLASS=host["id"],
               CROSSTALK_STAGE_DIR=str(REPO_ROOT / "build" / "reframe" / system / "stage" / run_id),
               PYTHONUNBUFFERED="1")
    note = reference_note(system, host, run_id, gate)
    print(f"crosstalk: run {run_id} on {', '.join(targets)} ({profile} profile), host class "
          f"{host['id']} ({host['label']}); results in {run_dir}", file=out, flush=True)
    print(f"crosstalk: {note}", file=out, flush=True)
    if cluster is not None:
        try:
            proc = cluster.exec(cluster.nodes[0], argv, env=env, cwd=str(REPO_ROOT))
        finally:
            # Jobs restore their own changes; this covers killed ones, under the links lock so a
            # job of a concurrent run keeps its shaping.
            with open(cluster.links_lock, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                cluster.restore_links()
    else:
        proc = subprocess.run(argv, env=env, cwd=str(REPO_ROOT))
    (run_dir / "exit_status").write_text(f"{proc.returncode}\n")
    print(f"crosstalk: run {run_id} finished (exit {proc.returncode}); {note}", file=out, flush=True)
    return proc.returncode, run_dir


def _cmd_run(args):
    system = args.system
    if system is None:
        system, note = default_system()
        if note:
            print(f"crosstalk: {note}", file=sys.stderr)
    status, _ = run(system, args.profile, args.experiments, args.gate, args.partition,
                    args.reframe_args)
    return status


def register(subparsers):
    p = subparsers.add_parser("run", help="run the experiment suite with ReFrame")
    p.add_argument("--system", "-s", help="inventory name (default: vcluster if root, else local)")
    p.add_argument("--profile", "-p", choices=PROFILES, default="quick")
    p.add_argument("--experiments", "-e", type=lambda s: [x for x in s.split(",") if x], default=[],
                   help="comma-separated spec names (default: all)")
    p.add_argument("--partition", action="append", default=[], help="restrict to a partition (repeatable)")
    p.add_argument("--gate", action="store_true",
                   help="fail on missing references and on violations (CI acceptance)")
    p.add_argument("reframe_args", nargs="*", metavar="-- REFRAME_ARGS",
                   help="extra arguments passed to reframe after --")
    p.set_defaults(func=_cmd_run)
