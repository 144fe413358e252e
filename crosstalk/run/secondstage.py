"""A run's second stage (``crosstalk run --budget``): after the first pass, the claims are judged on
the run's own samples; the cases of the claims left inconclusive whose deciding samples fit the time
left are measured again (``--repeat``), into the same run as ``--resume`` adds attempts, and the
claims judged once more. ``crosstalk run --more RUN_ID`` adds a further stage to a finished run
(one more look). The plan and why it is honest: crosstalk.claims.plan, docs/claims.md."""
import dataclasses
import json
import re

import pandas as pd

from crosstalk import userfiles
from crosstalk.analysis.ingest import CASE_COLUMNS, PERF_COLUMNS, attempt_testcases, load_run
from crosstalk.claims import counts, judge
from crosstalk.claims.judge import confidence_for
from crosstalk.claims.plan import TWO_STAGE_LOOKS, plan
from crosstalk.errors import InputError
from crosstalk.run import runstatus


def case_durations(run_dir):
    """``{(partition, case name): seconds}``: the longest a case took in the run's reports, added
    over its environments (a stage selects a case by name: it runs under each of them)."""
    out = {}
    for case in attempt_testcases(run_dir):
        seconds = case.get("time_total")
        if case.get("fixture") or not isinstance(seconds, (int, float)):
            continue
        key = (case.get("partition"), case["name"], case.get("environ"))
        out[key] = max(out.get(key, 0.0), float(seconds))
    total = {}
    for (partition, name, _), seconds in out.items():
        total[(partition, name)] = total.get((partition, name), 0.0) + seconds
    return total


#: ReFrame options of a run that would change a stage's selection or its count of copies.
_SELECTION = {"-n", "--name", "-x", "--exclude", "--repeat", "--reruns", "-t", "--tag", "-T", "--exclude-tag"}


def stage_reframe_args(args):
    """The run's ReFrame arguments without those that select cases or copy them: a stage runs
    exactly the planned cases the planned number of times."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in _SELECTION:
            skip = True
        elif not any(arg.startswith(f"{opt}=") for opt in _SELECTION if opt.startswith("--")):
            out.append(arg)
    return out


def verdicts_of(run_dir, looks):
    """The claims judged on the run's own samples at ``looks`` looks (traced: which cases)."""
    perf, cases = load_run(run_dir)
    perf = pd.DataFrame(perf, columns=PERF_COLUMNS)
    cases = pd.DataFrame(cases, columns=CASE_COLUMNS).assign(looks=looks)
    return judge(perf, cases, trace=True)


def name_pattern(case):
    """ReFrame's -n pattern for exactly this case (it matches display names without spaces)."""
    return "^" + re.escape(case.replace(" ", "")) + "$"


def _counts_text(verdicts):
    return ", ".join(f"{n} {v}" for v, n in counts(verdicts).items())


def _update_provenance(run_dir, **changes):
    """Set ``changes`` in the run's provenance.json (written whole, then renamed into place)."""
    path = run_dir / "provenance.json"
    prov = userfiles.load_json(path, "provenance")
    prov.update({k: change(prov) if callable(change) else change for k, change in changes.items()})
    tmp = path.with_name(".provenance.json.tmp")
    tmp.write_text(json.dumps(prov, indent=2) + "\n")
    tmp.replace(path)


def record(run_dir, looks, stage):
    """The run's provenance counts the looks (its claims are judged at that many looks from now
    on, even if this stage is interrupted) and lists what each later stage measured again."""
    _update_provenance(run_dir, looks=looks, stages=lambda prov: [*prov.get("stages", []), stage])


def record_unplanned(run_dir, seconds_left, left_out, looks=None):
    """A plan that measured nothing again: the run's provenance keeps what it left out and why, for
    the report. ``looks``: the looks the run now has, where the plan judged the data at that level
    (time was left for a stage, so the design was one of that many looks, whatever it found);
    None where no stage could have run (the look is not counted)."""
    changes = {"unplanned": lambda prov: {"after_stages": len(prov.get("stages", [])),
                                          "budget_s": round(seconds_left), "left_out": left_out}}
    _update_provenance(run_dir, **changes, **({"looks": looks} if looks else {}))


def stage_possible(durations, seconds_left):
    """Whether a further stage could run at all: time for the shortest case the run has. Decided
    from durations alone, before the claims are judged, so that the looks the design counts do not
    depend on what the judgement finds."""
    return bool(durations) and seconds_left >= min(durations.values())


def run_second_stage(session, run_dir, partitions, seconds_left, out, looks=TWO_STAGE_LOOKS):
    """Plan and run a further stage (the second: ``looks`` 2); ``(its Outcome, the run's state)``,
    or None when nothing was run again. Where time is left for a stage the data are judged at
    ``looks`` looks and the look counts, even if the plan then finds no claim to measure again:
    judging the same samples again at one look fewer, at a wider level, after they failed the
    narrower one, would be peeking. Where no stage could run, the run keeps the looks it had."""
    durations = case_durations(run_dir)
    possible = stage_possible(durations, seconds_left)
    if not possible:
        looks -= 1
    try:
        verdicts = verdicts_of(run_dir, looks)
    except InputError as err:
        print(f"crosstalk: no further stage: the run's results are unreadable ({err})", file=out, flush=True)
        return None
    print(f"crosstalk: claims so far ({confidence_for(looks) * 100:.3g} % intervals, as for {looks} looks): "
          f"{_counts_text(verdicts)}", file=out, flush=True)
    left = max(0.0, seconds_left)
    # planned even with no time left: the claims it leaves out are kept with the time each needs
    chosen = plan(verdicts, durations, left)
    for item in chosen.left_out:
        print(f"crosstalk:   not measured again: {item['claim']}: {item['why']}", file=out, flush=True)
    if not possible or not chosen.repeats:
        why = (f"no inconclusive claim that more samples would decide fits the {left:.0f} s left"
               if possible else f"the {left:.0f} s left hold not even the shortest case")
        print(f"crosstalk: no further stage: {why}", file=out, flush=True)
        record_unplanned(run_dir, left, chosen.left_out, looks if possible else None)
        return None
    runs = sum(chosen.repeats.values())
    print(f"crosstalk: stage {looks}: {runs} more case run(s) for {len(chosen.claims)} claim(s) "
          f"({', '.join(chosen.claims)}), about {chosen.seconds:.0f} s of the {seconds_left:.0f} s left",
          file=out, flush=True)
    attempt = runstatus.begin_attempt(run_dir, partitions)
    record(run_dir, looks, {"look": looks, "attempt": attempt, "budget_s": round(seconds_left),
                            "claims": chosen.claims, "left_out": chosen.left_out,
                            "repeats": [[p, c, n] for (p, c), n in sorted(chosen.repeats.items())]})
    session = dataclasses.replace(session, reframe_args=stage_reframe_args(session.reframe_args))
    worst = None
    for partition, repeats, cases in chosen.sessions():
        attempt_dir = run_dir / "attempts" / str(attempt) / f"{partition}-x{repeats}"
        selection = [arg for case in cases for arg in ("-n", name_pattern(case))]
        outcome = session.run_reframe([f"{session.system}:{partition}"], attempt_dir,
                                      session.stage_root / f"attempt-{attempt}-{partition}-x{repeats}", 1,
                                      [*selection, "--repeat", str(repeats)])
        if worst is None or outcome.stopped or (outcome.exit_status and not worst.exit_status):
            worst = outcome
        if outcome.stopped:
            break
    state = runstatus.end_attempt(run_dir, attempt, worst, keep_failed=True)
    if not worst.stopped:
        try:
            print(f"crosstalk: claims after stage {looks}: {_counts_text(verdicts_of(run_dir, looks))}",
                  file=out, flush=True)
        except InputError as err:
            print(f"crosstalk: the claims cannot be judged: {err}", file=out, flush=True)
    return worst, state
