"""``crosstalk run``: render the configuration, record provenance, run ReFrame on the right node."""
import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from crosstalk import REPO_ROOT, __version__, reference_file, results_root, userfiles
from crosstalk.analysis.references import calibrate_command
from crosstalk.errors import CrosstalkError, InputError
from crosstalk.run import resume as resume_mod, runstatus, uselock
from crosstalk.run.session import Session, parse_duration, test_module
from crosstalk.site.configrender import render
from crosstalk.site.hostclass import host_class
from crosstalk.site.inventory import load_system, partition_capabilities, resolve_inventory
from crosstalk.site.probes import probe_all
from crosstalk.specs import PROFILES, SPECS_DIR_ENV, all_specs

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
        "specs": {s.name: {"path": str(s.path.relative_to(REPO_ROOT) if s.path.is_relative_to(REPO_ROOT)
                                       else s.path), "sha256": s.sha256} for s in specs},
        "versions": {"reframe": reframe.VERSION,
                     **{f.name: f.detail for f in findings if f.name in VERSIONED}},
        "machine": {f.name: {"present": f.present, "detail": f.detail} for f in findings},
        **(extra or {}),
    }


#: {inventory: cluster} of the virtual clusters this process brought up (they were down before):
#: taken down at the end with --take-down, else named with the command that takes them down.
BROUGHT_UP = {}


def _vcluster(inventory):
    """The virtual cluster an inventory of kind vcluster builds, up (brought up if needed)."""
    from crosstalk.vcluster import VCluster
    cluster = VCluster.from_inventory(inventory)
    was_up = cluster.is_up()
    cluster.up()
    if not was_up:
        BROUGHT_UP.setdefault(str(inventory), cluster)
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


def _prepare(inventory_name, profile, experiments, out, partitions=()):
    if profile not in PROFILES:
        raise InputError("--profile", None, f"unknown profile {profile!r}")
    inventory = resolve_inventory(inventory_name)
    description = load_system(inventory)
    known = [p["name"] for p in description["partitions"]]
    for partition in partitions:
        if partition not in known:
            raise InputError(repr(partition), "--partition", f"not a partition of system "
                             f"{description['name']} (known: {', '.join(known)})")
    specs = select_experiments(experiments)
    if not specs:
        raise CrosstalkError("no experiment has a ReFrame test module yet")
    render(inventory)     # after every argument is checked: a refused run writes nothing
    cluster = _vcluster(inventory) if description["kind"] == "vcluster" else None
    return inventory, description, specs, cluster


@contextlib.contextmanager
def _locked(session, what):
    """The system (one run per virtual cluster or local machine) and the run itself (one attempt
    at a time, also on a real cluster); the run directory must exist."""
    path = session.use_lock()
    with uselock.held(path, what) if path else contextlib.nullcontext():
        session.run_dir.mkdir(parents=True, exist_ok=True)
        with uselock.held(session.run_dir / ".lock", what):
            yield


def _partition_names(description, targets):
    names = [t.split(":", 1)[1] for t in targets if ":" in t]
    return names or [p["name"] for p in description["partitions"]]


#: The main job's time budget per profile (first stage and second stage together): what
#: ``crosstalk run`` takes when no experiment, partition or ReFrame argument narrows it.
DEFAULT_BUDGET = {"quick": "15m"}


def default_budget(profile, experiments, partitions, reframe_args):
    """Seconds of the default budget, or None: a narrowed run (experiments, partitions, ReFrame
    arguments) asked for exactly those cases, so it gets a second stage only with --budget."""
    if experiments or partitions or reframe_args or profile not in DEFAULT_BUDGET:
        return None
    return parse_duration(DEFAULT_BUDGET[profile])


def run(system, profile="quick", experiments=(), gate=False, partitions=(), reframe_args=(),
        out=sys.stdout, budget_s=None, at_balance=None):
    """A new run of the suite; (exit status, run directory). ``budget_s``: seconds for the whole
    run, first stage included; what the first stage leaves goes to a second stage
    (crosstalk.run.secondstage). ``at_balance`` (default: for the whole suite, not for a narrowed
    run, which runs exactly what it names): on a virtual cluster, an experiment that needs another
    machine's balance runs on an inventory shaped like it (crosstalk.run.balanced), after this
    system's first stage, with half of what that left."""
    started = time.monotonic()
    inventory, description, specs, cluster = _prepare(system, profile, experiments, out, partitions)
    # imported once the arguments are checked: they import the claims (pandas, numpy, about 1 s)
    from crosstalk.run.balanced import destinations, plan_moves, staying
    from crosstalk.run.secondstage import run_second_stage
    if at_balance is None:
        at_balance = not (experiments or partitions or reframe_args)
    moves = plan_moves(cluster, specs) if at_balance else {}
    specs = staying(specs, moves)
    system = description["name"]
    host = host_class(description.get("network"))
    run_id = new_run_id()
    run_dir = results_root() / system / "runs" / run_id
    session = Session(inventory, description, specs, profile, host, run_id, run_dir, gate,
                      list(reframe_args), cluster, out)
    targets = [f"{system}:{p}" for p in partitions] or [system]
    with _locked(session, f"crosstalk run {run_id}"):
        extra = {"kind": description["kind"], "host_class": host, "targets": targets, "gate": gate,
                 "reframe_args": list(reframe_args), "inventory": _inventory_arg(inventory),
                 "specs_dir": os.environ.get(SPECS_DIR_ENV),
                 "topology": (description.get("network") or {}).get("topology"),
                 "capabilities": {p["name"]: partition_capabilities(description, p)
                                  for p in description["partitions"]}}
        if cluster is not None:
            extra.update(nodes=list(cluster.nodes), link_state=cluster.link_state(), balance=cluster.balance())
        if moves:
            extra["moved"] = moves
        prov = provenance(system, profile, specs, run_id, extra)
        _write_provenance(run_dir, prov)
        note = reference_note(system, host, run_id, gate)
        print(f"crosstalk: run {run_id} on {', '.join(targets)} ({profile} profile), host class "
              f"{host['id']} ({host['label']}); results in {run_dir}", file=out, flush=True)
        print(f"crosstalk: {note}", file=out, flush=True)
        for name, move in moves.items():
            where = f"runs on inventory {move['inventory']}" if move["inventory"] else f"runs here: {move['error']}"
            print(f"crosstalk: {name} needs a system shaped like {move['like']}; it {where}", file=out, flush=True)
        partition_names = _partition_names(description, targets)
        attempt = runstatus.begin_attempt(run_dir, partition_names)
        outcome = session.run_reframe(targets, run_dir, session.stage_root, len(partition_names))
        state = runstatus.end_attempt(run_dir, attempt, outcome)
        exit_status = outcome.exit_status
        stopped = False
        if state != "interrupted" and destinations(moves):
            left = None if budget_s is None else (budget_s - (time.monotonic() - started)) / 2
            moved_status, stopped = _run_moved(prov, run_dir, profile, gate, out, left)
            exit_status = exit_status or moved_status
        if budget_s and state != "interrupted" and not stopped:
            second = run_second_stage(session, run_dir, partition_names, budget_s - (time.monotonic() - started), out)
            if second is not None:
                exit_status = exit_status or second[0].exit_status
                state = second[1]
    print(f"crosstalk: run {run_id} {state} (exit {exit_status}); {note}", file=out, flush=True)
    if state == "interrupted":
        how = "--more" if stage_interrupted(run_dir) else "--resume"
        print(f"crosstalk: to continue it: crosstalk run {how} {run_id}", file=out, flush=True)
    return exit_status, run_dir


def _write_provenance(run_dir, prov):
    (run_dir / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")


def _run_moved(prov, run_dir, profile, gate, out, budget_s):
    """Run the moved experiments on their inventories (``budget_s`` shared between them), each
    run's system and id (or why it failed) recorded in the main run's provenance; ``(the worst exit
    status, whether a run was interrupted)``: an interrupted one stops the rest."""
    from crosstalk.run.balanced import destinations
    status = 0
    places = destinations(prov["moved"])
    for k, (inventory, names) in enumerate(places.items()):
        share = None if budget_s is None else max(0.0, budget_s / (len(places) - k))
        started = time.monotonic()
        try:
            code, moved_dir = run(inventory, profile, names, gate, out=out, budget_s=share, at_balance=False)
            record = {"system": moved_dir.parent.parent.name, "run_id": moved_dir.name}
        except CrosstalkError as err:
            print(f"crosstalk: {', '.join(names)} on inventory {inventory} failed: {err}", file=out, flush=True)
            code, record = 1, {"error": f"the run on inventory {inventory} failed: {err}"}
        if budget_s is not None:
            budget_s -= time.monotonic() - started
        for name in names:
            prov["moved"][name].update(record)
        _write_provenance(run_dir, prov)
        status = status or code
        if "run_id" in record and runstatus.read(moved_dir)["state"] == "interrupted":
            return status, True
    return status, False


def stage_interrupted(run_dir):
    """Whether the run's last attempt was a later stage (its provenance names the attempt)."""
    attempts = runstatus.read(run_dir).get("attempts", [])
    try:
        stages = userfiles.load_json(Path(run_dir) / "provenance.json", "provenance").get("stages")
    except (InputError, AttributeError):
        return False
    return (bool(attempts) and isinstance(stages, list) and bool(stages) and isinstance(stages[-1], dict)
            and stages[-1].get("attempt") == attempts[-1].get("attempt"))


def _reopen(run_id, out, option):
    """An earlier run's directory, provenance, checked specs and hardware, and its Session."""
    run_dir = resume_mod.find_run(run_id, option)
    prov = resume_mod.load_provenance(run_dir)
    if prov.get("specs_dir"):
        os.environ[SPECS_DIR_ENV] = prov["specs_dir"]    # the site specs the run began with
    inventory, description, specs, cluster = _prepare(prov.get("inventory") or prov["system"],
                                                      prov["profile"], list(prov["specs"]), out)
    host = host_class(description.get("network"))
    resume_mod.check_unchanged(run_dir, prov, specs, host["id"])
    session = Session(inventory, description, specs, prov["profile"], host, prov.get("run_id", run_id),
                      run_dir, bool(prov.get("gate")), list(prov.get("reframe_args", [])), cluster, out)
    return run_dir, prov, description, session


def resume(run_id, out=sys.stdout):
    """Run again the cases of run ``run_id`` that did not pass, in the same run directory."""
    run_dir, prov, description, session = _reopen(run_id, out, "--resume")
    targets = prov.get("targets") or [description["name"]]
    with _locked(session, f"crosstalk run --resume {run_id}"):
        done = resume_mod.done_hashes(run_dir)
        partitions = _partition_names(description, targets)
        attempt = runstatus.begin_attempt(run_dir, partitions)
        print(f"crosstalk: resuming run {run_id} (attempt {attempt}): "
              f"{sum(len(h) for h in done.values())} case(s) already done are left out",
              file=out, flush=True)
        worst = None
        for partition in partitions:
            attempt_dir = run_dir / "attempts" / str(attempt) / partition
            stage_dir = session.stage_root / f"attempt-{attempt}"
            outcome = session.run_reframe([f"{description['name']}:{partition}"], attempt_dir,
                                          stage_dir, 1, resume_mod.exclusions(done, partition))
            if worst is None or outcome.stopped or (outcome.exit_status and not worst.exit_status):
                worst = outcome
            if outcome.stopped:
                break
        state = runstatus.end_attempt(run_dir, attempt, worst)
    print(f"crosstalk: run {run_id} {state} (exit {worst.exit_status}) after attempt {attempt}",
          file=out, flush=True)
    if state == "interrupted":
        print(f"crosstalk: to continue it: crosstalk run --resume {run_id}", file=out, flush=True)
    return worst.exit_status, run_dir


def more(run_id, budget_s, out=sys.stdout):
    """One more stage of run ``run_id``: the cases of its inconclusive claims measured again within
    ``budget_s`` seconds (one more look at its data: crosstalk.claims.plan)."""
    found = resume_mod.find_run(run_id, "--more")
    state = runstatus.read(found)["state"]
    if state == "running" or (state == "interrupted" and not stage_interrupted(found)):
        raise InputError(run_id, "--more", f"the run is {state}: finish it first (crosstalk run --resume {run_id})")
    run_dir, prov, description, session = _reopen(run_id, out, "--more")
    looks = prov.get("looks", 1)
    if not isinstance(looks, int) or isinstance(looks, bool) or looks < 1:
        raise InputError(run_dir / "provenance.json", "looks", f"{looks!r} is not a count of looks (1 or more)")
    partitions = _partition_names(description, prov.get("targets") or [description["name"]])
    # pandas and the claims only once the run is known good: a bad --more is one line at once
    from crosstalk.run.secondstage import run_second_stage
    with _locked(session, f"crosstalk run --more {run_id}"):
        stage = run_second_stage(session, run_dir, partitions, budget_s, out, looks=looks + 1)
    state = stage[1] if stage else runstatus.read(run_dir)["state"]
    status = stage[0].exit_status if stage else 0
    print(f"crosstalk: run {run_id} {state} (exit {status})", file=out, flush=True)
    return status, run_dir


def _inventory_arg(inventory):
    """How a resume finds the inventory again: its name if under inventories/, else its path."""
    inventory = Path(inventory)
    return inventory.name if inventory.parent == REPO_ROOT / "inventories" else str(inventory)


def _specs_dir(text):
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    os.environ[SPECS_DIR_ENV] = str(path.resolve())     # ReFrame's test modules read it too
    return path


def leave_clusters(take_down, out=sys.stdout):
    """At the end of ``crosstalk run``: take down each virtual cluster it brought up
    (``take_down``), or say that it is still running and the command that takes it down."""
    while BROUGHT_UP:
        inventory, cluster = BROUGHT_UP.popitem()
        command = shlex.join(["crosstalk", "vcluster", "down", "--inventory", inventory])
        if not take_down:
            print(f"crosstalk: virtual cluster {cluster.name}, brought up by this run, is still running "
                  f"(its Slurm daemons and CPU-quota groups); `{command}` takes it down", file=out, flush=True)
            continue
        try:
            cluster.down()
            held = cluster.remove_locks()
        except CrosstalkError as err:
            print(f"crosstalk: virtual cluster {cluster.name}, brought up by this run, could not be taken "
                  f"down ({err}); `{command}` takes it down", file=out, flush=True)
            continue
        kept = f" ({', '.join(map(str, held))} held by another command: kept)" if held else ""
        if cluster.like and cluster.balance_file.exists():
            # a measurement, not a running part: the next bring-up of the same shape reuses it
            kept += (f"; kept its balance measurement {cluster.balance_file} for the next bring-up "
                     f"(remove it to measure again)")
        print(f"crosstalk: virtual cluster {cluster.name}, brought up by this run, taken down{kept}",
              file=out, flush=True)


def _cmd_run(args):
    try:
        return _run_command(args)
    finally:
        leave_clusters(args.take_down)


def _run_command(args):
    if args.more:
        if (args.system or args.experiments or args.partition or args.gate or args.reframe_args
                or args.specs or args.resume):
            raise InputError("--more", None, "takes the run's own system, profile, experiments and "
                                             "options: give only --budget")
        budget = args.budget if args.budget is not None else parse_duration(DEFAULT_BUDGET["quick"])
        status, _ = more(args.more, budget)
        return status
    if args.resume:
        if (args.system or args.experiments or args.partition or args.gate or args.reframe_args
                or args.specs or args.budget is not None):
            raise InputError("--resume", None, "takes the run's own system, profile, experiments "
                             "and options: give no other option")
        status, _ = resume(args.resume)
        return status
    system = args.system
    if system is None:
        system, note = default_system()
        if note:
            print(f"crosstalk: {note}", file=sys.stderr)
    budget = (args.budget if args.budget is not None else
              default_budget(args.profile, args.experiments, args.partition, args.reframe_args))
    status, _ = run(system, args.profile, args.experiments, args.gate, args.partition,
                    args.reframe_args, budget_s=budget)
    return status


def _budget(text):
    """A duration like ReFrame's (90s, 15m, 1h); 0 turns the second stage off."""
    if text == "0":
        return 0
    if not re.fullmatch(r"[1-9][0-9]{0,5}[smh]", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90s, 15m or 1h (0: no second stage)")
    return parse_duration(text)


def register(subparsers):
    p = subparsers.add_parser("run", help="run the experiment suite with ReFrame")
    p.add_argument("--system", "-s", help="inventory name (default: vcluster if root, else local)")
    p.add_argument("--profile", "-p", choices=PROFILES, default="quick")
    p.add_argument("--experiments", "-e", type=lambda s: [x for x in s.split(",") if x], default=[],
                   action="extend", help="comma-separated spec names, repeatable (default: all)")
    p.add_argument("--partition", action="append", default=[], help="restrict to a partition (repeatable)")
    p.add_argument("--gate", action="store_true",
                   help="fail on missing references and on violations (CI acceptance)")
    p.add_argument("reframe_args", nargs="*", metavar="-- REFRAME_ARGS",
                   help="extra arguments passed to reframe after --")
    p.add_argument("--specs", metavar="DIR", type=_specs_dir,
                   help="site specs replacing the shipped ones of the same name (sets "
                        "CROSSTALK_SPECS_DIR; recorded in the run's provenance)")
    p.add_argument("--budget", metavar="DURATION", type=_budget,
                   help="time for the whole run (90s, 15m, 1h); what the first pass leaves measures again "
                        "the cases of claims it left inconclusive, as many times as would decide them "
                        "(default for the quick profile's main job: "
                        f"{DEFAULT_BUDGET['quick']}; a run narrowed by -e, --partition or ReFrame "
                        "arguments: none; 0: none)")
    p.add_argument("--more", metavar="RUN_ID",
                   help="one more stage of a finished run: measure again the cases of its inconclusive "
                        f"claims, within --budget (default {DEFAULT_BUDGET['quick']}); its claims are then "
                        "judged at one more look (docs/claims.md)")
    p.add_argument("--take-down", action="store_true",
                   help="at the end, take down the virtual clusters this run brought up (the main job, "
                        "run.sh, does; without it they are named with the command that does)")
    p.add_argument("--resume", metavar="RUN_ID",
                   help="continue an interrupted or partly failed run: re-run only its cases that "
                        "did not pass, into the same run directory")
    p.set_defaults(func=_cmd_run)
