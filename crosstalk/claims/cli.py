"""``crosstalk claims``: the papers' claims judged on your runs, one table per platform.

Exit status 1 if a claim is contradicted on one of your platforms (a CI gate; the shipped examples,
shown with ``--examples``, never gate), 2 for bad input. A broken run is one line on stderr and
left out; the others are judged as if it were absent, and the exit status with them.
"""
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

from crosstalk import examples_root, results_root
from crosstalk.argtypes import SYSTEM_NAME
from crosstalk.errors import InputError
from crosstalk.run import uselock


def _collect(systems, examples):
    """The runs' tables; a broken run is left out, its line on stderr and, when every system was
    collected (as `crosstalk report` does), in results/collect-errors.txt."""
    from crosstalk.analysis import tell_skipped
    from crosstalk.analysis.collect import collect
    from crosstalk.analysis.ingestcache import CACHE_NAME
    root = results_root()
    # The run cache is shared with `crosstalk report`: one of them at a time writes it.
    with uselock.held(root / ".report.lock", "crosstalk claims", wait=600,
                      on_wait=lambda holder: print(f"crosstalk: claims: waiting for {holder}", flush=True)):
        perf, cases, errors = collect(root, systems or None, examples_root() if examples else None,
                                      cache=root / CACHE_NAME)
        tell_skipped(errors, None if systems or not root.is_dir() else root)
    return perf, cases


def print_verdicts(verdicts, out=sys.stdout):
    from crosstalk.claims import counts
    from crosstalk.claims.present import citation, decided_text, main_job_text, paper_text, summary, unmeasured, why
    platform = None
    for row in verdicts:
        if row["platform"] != platform:
            platform = row["platform"]
            mine = [r for r in verdicts if r["platform"] == platform]
            c = counts(mine)
            print(f"\n{platform}  {row['host_label']}\n  " + ", ".join(f"{n} {v}" for v, n in c.items()) +
                  f"; {decided_text(c, unmeasured(mine))}", file=out)
            main_job = main_job_text(verdicts, platform)
            if main_job:
                print(f"  main job, {main_job}", file=out)
        check = row.get("kind", "paper") == "check"
        print(f"  {row['verdict'].upper():<13} {row['id']} ({'check of this platform, from ' if check else ''}"
              f"{citation(row)})", file=out)
        print(f"      {'check' if check else 'claim'}: {row['claim']}", file=out)
        if row.get("quote"):
            print(f"      quote: \"{row['quote']['text']}\" ({row['quote']['source']})", file=out)
        if row.get("differs"):
            print(f"      ours differs: {row['differs']}", file=out)
        print(f"      paper: {paper_text(row)}", file=out)
        for line in summary(row):
            print(f"      here:  {line}", file=out)
        if why(row):
            print(f"      {why(row)}", file=out)


#: Verdicts a JUnit consumer sees as skipped tests (neither passed nor failed).
_SKIPPED = ("not run", "inconclusive", "not applicable")


def write_junit(verdicts, path):
    from crosstalk.claims.present import citation, summary
    suite = ET.Element("testsuite", name="crosstalk-claims", tests=str(len(verdicts)),
                       failures=str(sum(v["verdict"] == "contradicted" for v in verdicts)),
                       skipped=str(sum(v["verdict"] in _SKIPPED for v in verdicts)))
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"{v['platform']}.{v['experiment']}",
                             name=f"{v['id']} ({citation(v)})")
        detail = f"{v['claim']} Here: " + " | ".join(summary(v))
        if v["verdict"] == "contradicted":
            ET.SubElement(case, "failure", message=f"contradicted: {detail}")
        elif v["verdict"] in _SKIPPED:
            ET.SubElement(case, "skipped", message=f"{v['verdict']}: {detail}")
        else:
            ET.SubElement(case, "system-out").text = f"reproduced: {detail}"
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def _cmd_claims(args):
    from crosstalk.claims import counts, judge, paper_claims, spec_claims
    if args.junit and (args.junit.is_dir() or not args.junit.parent.is_dir()):
        raise InputError(args.junit, "--junit", "is a directory" if args.junit.is_dir() else
                         f"no such directory {str(args.junit.parent)!r} to write it in")
    systems = [s for s in (args.system or "").split(",") if s]
    for system in systems:
        if not SYSTEM_NAME.match(system):
            raise InputError("--system", None, f"{system!r} is not a system name")
    wanted = [c for c in (args.claim or "").split(",") if c]
    known = {claim["id"] for _, claim in spec_claims()}
    for cid in wanted:
        if cid not in known:
            raise InputError("--claim", None, f"unknown claim {cid!r} (crosstalk claims lists them)")
    # A broken run is judged as if it were absent: no one asked for it by name.
    perf, cases = _collect(systems, args.examples)
    if cases.empty and perf.empty:
        where = f"system {', '.join(systems)}" if systems else "any system"
        raise InputError(results_root(), None, f"no runs of {where} to judge (crosstalk run makes them; "
                         "--examples judges the shipped example runs)")
    verdicts = [v for v in judge(perf, cases) if not wanted or v["id"] in wanted]
    print_verdicts(verdicts)
    total = counts(verdicts)
    claims = paper_claims(verdicts)
    print("\n" + ", ".join(f"{n} {v}" for v, n in total.items()) +
          f" ({len(claims)} claims x platforms, and {len(verdicts) - len(claims)} checks of a platform apart; "
          "intervals: 90 % of the median, exact; 95 % on a platform "
          "whose runs had time for a second stage)")
    if args.junit:
        write_junit(verdicts, args.junit)
    gate = [v for v in claims if v["origin"] == "user" and v["verdict"] == "contradicted"]
    return 1 if gate else 0


def register(subparsers):
    p = subparsers.add_parser("claims", help="judge the papers' claims on your runs (exit 1 if one is contradicted)")
    p.add_argument("--system", metavar="S[,S...]", help="only these systems (default: all of yours)")
    p.add_argument("--claim", metavar="ID[,ID...]", help="only these claims (ids as listed)")
    p.add_argument("--examples", action="store_true",
                   help="also judge the shipped example runs (shown apart; they never change the exit status)")
    p.add_argument("--junit", type=Path, help="write JUnit XML here (contradicted: failure; inconclusive, "
                                              "not run, not applicable: skipped)")
    p.set_defaults(func=_cmd_claims)
