"""The papers' claims, listed in the experiment specs (``claims:``), judged on every platform
(system and host class) of the tidy tables: *reproduced*, *contradicted*, *inconclusive* (with the
samples that would decide it) or *not run* (with the reason the cases were skipped).

A claim's test is a ``direction`` (operand ``a`` greater or less than ``b``, by ``min_effect``), a
``ratio`` (``num`` or ``num/den`` inside ``band``), a ``ranking`` (a value ordered over a
parameter's values: each neighbouring pair judged as a ratio) or a ``fit`` (a named model's estimate,
:mod:`crosstalk.claims.fits`, inside ``band``); ``group_by`` judges it for every combination of
those parameters (the claim holds where every group does) and a list of metrics judges each one.
A claim's ``where:`` names the platforms it is about (crosstalk.site.systemfacts); elsewhere it is
*not applicable*, with the reason; so is a claim whose cases the platform's tests skipped as cases
it cannot hold (crosstalk.skips: too few nodes for the layout, no link control).
"""
import copy
import itertools
from collections import Counter

from crosstalk.claims.balance import note as balance_note
from crosstalk.claims.fits import FITS
from crosstalk.claims.judge import Missing, Separate, confidence_for, effects, fit_verdict, separate_verdict, verdict
from crosstalk.claims.operands import Table, describe, distinct_params, matching, with_environ
from crosstalk.claims.plan import trace as trace_cases
from crosstalk.claims.present import summary
from crosstalk.claims.tally import DECIDED, VERDICTS, counts, paper_claims  # noqa: F401  (the package's API)
from crosstalk.forked import forked_map
from crosstalk.site.systemfacts import decode as decode_facts, unmet
from crosstalk.skips import is_platform
from crosstalk.specs import all_specs, load_spec

#: Order of the overall verdicts: the first that any group has wins.
_PRECEDENCE = ("contradicted", "inconclusive", "reproduced", "not run", "not applicable")


def spec_claims():
    """``[(spec, claim)]`` of every spec's claims, in spec order."""
    return [(spec, claim) for spec in all_specs() for claim in spec.data.get("claims", [])]


def _metric_variants(test):
    """The test once per metric where an operand lists several (each is judged on its own)."""
    lists = [(k, op["metric"]) for k, op in test.items() if isinstance(op, dict) and isinstance(op.get("metric"), list)]
    if not lists:
        return [(None, test)]
    variants = []
    for metric in lists[0][1]:
        t = copy.deepcopy(test)
        for key, _ in lists:
            t[key]["metric"] = metric
        variants.append((metric, t))
    return variants


def _with_select(operand, extra):
    """``operand`` restricted to the cases with the ``extra`` parameter values."""
    if "ratio" in operand:
        return {"ratio": [_with_select(op, extra) for op in operand["ratio"]]}
    if "spread" in operand:
        return {**operand, "spread": _with_select(operand["spread"], extra)}
    if "metric" in operand:
        return {**operand, "select": {**operand.get("select", {}), **extra}}
    return operand


def _steps(test):
    """A test as ``[(label, test)]``: a ranking becomes one ratio per neighbouring pair of its
    order (``a`` over ``b`` at least 1 - tolerance when descending, at most 1 + tolerance when
    ascending); any other test is itself."""
    if test["kind"] != "ranking":
        return [(None, test)]
    over, order, tol = test["over"], test["order"], float(test.get("tolerance", 0))
    band = [1 - tol, None] if test["expect"] == "descending" else [None, 1 + tol]
    sign = ">=" if test["expect"] == "descending" else "<="
    common = {k: test[k] for k in ("select", "group_by") if k in test}
    return [(f"{over}={a} {sign} {over}={b}",
             {"kind": "ratio", **common, "band": band,
              "num": _with_select(test["value"], {over: a}), "den": _with_select(test["value"], {over: b})})
            for a, b in zip(order, order[1:])]


def _own_metrics(operand):
    """The metrics an operand reads from the claim's own experiment."""
    if not isinstance(operand, dict) or "experiment" in operand:
        return set()
    if "ratio" in operand:
        return set().union(*map(_own_metrics, operand["ratio"]))
    if "spread" in operand:
        return _own_metrics(operand["spread"])
    return {operand["metric"]} if "metric" in operand else set()


def _groups(test, rows):
    """Selections of each group: the test's ``select`` with each combination of ``group_by``'s
    parameter values measured in ``rows`` (in every metric the test reads, where it names them: a
    case that does not measure them all is no group of it)."""
    base = dict(test.get("select", {}))
    by = test.get("group_by", [])
    if not by:
        return [base]
    # "@max" is resolved per operand when judged: here it narrows nothing
    rows = matching(rows, {k: v for k, v in base.items() if not str(v).startswith("@")})

    def combos(part):
        return {tuple(str(p.get(k)) for k in by) for p in distinct_params(part).values() if all(k in p for k in by)}
    metrics = set().union(*(_own_metrics(test.get(k)) for k in ("a", "b", "num", "den")))
    found = combos(rows)
    for metric in metrics:
        found &= combos(rows[rows["metric"] == metric])
    return [{**base, **dict(zip(by, combo))} for combo in sorted(found)] or [base]


def _swept(rows, select):
    """The values of ``select`` some case of ``rows`` has (an ``@max``-style choice left out)."""
    measured = distinct_params(rows).values()
    return {k: v for k, v in select.items()
            if not str(v).startswith("@") and any(str(p.get(k)) == str(v) for p in measured)}


def _where_it_ran(rows):
    """An experiment's case rows in the environments it ran in (all of them if it ran in none): an
    environment it skips whole ("runs under gnu-openmpi only") explains no missing value."""
    ran_in = set(rows.loc[rows["result"] != "skip", "environ"])
    return rows[rows["environ"].isin(ran_in)] if ran_in else rows


def _unswept(cases, missing):
    """"no case here has pport=N (the full profile sweeps it)" when no case has a selected value."""
    params = load_spec(missing.experiment).data["profiles"]
    swept = _swept(cases, missing.select)
    for name, wanted in missing.select.items():
        if str(wanted).startswith("@") or name in swept:
            continue
        sweeps = [prof for prof, data in params.items()
                  if str(wanted) in map(str, data["parameters"].get(name, []))]
        many = len(sweeps) > 1
        where = (f" (the {' and '.join(sweeps)} profile{'s' if many else ''} sweep{'' if many else 's'} it)"
                 if sweeps else "")
        return f"no {missing.experiment} case here has {name}={wanted}{where}"
    return None


def _not_run_reason(cases, missing):
    """Why an operand has no values: the skip reason of its cases, that they failed, or that
    the runs did not sweep the selected values."""
    rows = cases[cases["experiment"] == missing.experiment]
    if rows.empty:
        return f"no {missing.experiment} cases on this platform"
    unswept = _unswept(rows, missing)
    if unswept:
        return unswept
    rows = matching(_where_it_ran(rows), {k: v for k, v in missing.select.items() if not str(v).startswith("@")})
    skipped = rows[rows["result"] == "skip"]
    if not skipped.empty:
        reason, _ = Counter(skipped["reason"].fillna("skipped")).most_common(1)[0]
        return f"{missing.experiment} {describe(missing.select)} skipped: {reason}"
    failed = rows[rows["result"].isin(["fail", "abort", "fail_deps"])]
    if not failed.empty:
        return f"{missing.experiment} {describe(missing.select)}: {len(failed)} case(s) failed"
    return str(missing)


def _unfit(cases, missing):
    """Why this platform cannot hold an operand's cases, or None: every case of its selection
    that the platform's runs have (the values they sweep; a value no profile run here swept is
    judged by the rest of the selection) was skipped as a case the platform cannot hold
    (crosstalk.skips), in each environment the experiment ran in."""
    rows = _where_it_ran(cases[cases["experiment"] == missing.experiment])
    swept = _swept(rows, missing.select)
    rows = matching(rows, swept)
    if rows.empty or not (rows["result"] == "skip").all() or not rows["reason"].map(is_platform).all():
        return None
    reason, _ = Counter(rows["reason"]).most_common(1)[0]
    return f"{missing.experiment} {describe(swept)} {reason}"


def _judge_group(test, table, experiment, select, trace=False):
    """One group's verdict (a dict; raises Missing); ``trace`` adds the cases it read and the
    samples one more copy of them adds (crosstalk.claims.plan)."""
    units = set()
    if test["kind"] == "fit":
        est, lo, hi, n, least = FITS[test["model"]](test, table, experiment, select, units)
        low, high = test["band"]
        out = {**fit_verdict(est, lo, hi, n, low, high, least, table.confidence), "low": low, "high": high}
    else:
        x, low, high = effects(test, table, experiment, select, units)
        judged = separate_verdict if isinstance(x, Separate) else verdict
        out = {**judged(x, low, high, table.confidence), "low": low, "high": high}
    if trace and out["verdict"] == "inconclusive":
        out.update(trace_cases(test, table, experiment, select, out["n"]))
    return {**out, "modelled": any("modelled" in u for u in units)}


def judge_claim(spec, claim, table, cases, facts=None, trace=False):
    """The verdict of one claim on one platform (its :class:`Table`, cases and facts): a dict
    with the groups' verdicts."""
    excluded = unmet(claim.get("where", {}), facts or {})
    outside = excluded or moved_elsewhere(spec, facts or {})
    if outside:
        return {"verdict": "not applicable", "groups": [{"group": "", "verdict": "not applicable", "reason": outside}],
                "note": None, "judged_on": None if excluded else moved_to(spec, facts)}
    groups = []
    exp_rows = table.experiment(spec.name)
    for metric, test in _metric_variants(claim["test"]):
        for step, step_test in _steps(test):
            for select in _groups(step_test, exp_rows):
                label = ", ".join(filter(None, [metric, step, *(f"{k}={v}" for k, v in select.items()
                                                                if k in test.get("group_by", []))]))
                try:
                    groups.append({"group": label, **_judge_group(step_test, table, spec.name, select, trace)})
                except Missing as missing:
                    unfit = _unfit(cases, missing)
                    groups.append({"group": label, "verdict": "not applicable" if unfit else "not run",
                                   "reason": unfit or _not_run_reason(cases, missing)})
    overall = next(v for v in _PRECEDENCE if any(g["verdict"] == v for g in groups))
    return {"verdict": overall, "groups": groups,
            "note": balance_note(claim, table, facts, spec.data.get("like"), spec.name)}


def moved_to(spec, facts):
    """The system the platform's main job ran ``spec``'s experiment on, shaped like the machine it
    needs (crosstalk.run.balanced), or None."""
    move = ((facts or {}).get("moved") or {}).get(spec.name) or {}
    return move["system"] if move.get("system") and not move.get("error") else None


def moved_elsewhere(spec, facts):
    """That ``spec``'s claims are judged where the platform's main job moved its experiment; else None."""
    system = moved_to(spec, facts)
    if system is None:
        return None
    move = facts["moved"][spec.name]
    return (f"judged on {system}: the main job ran {spec.name} there, shaped like {move['like']}, "
            f"the balance it needs (run {move.get('run_id')})")


def looks_of(cases):
    """The most looks at the data any run of these cases took (a run's second stage is one more)."""
    return int(cases["looks"].max()) if "looks" in cases and cases["looks"].notna().any() else 1


def platform_facts(cases):
    """A platform's facts from its runs' cases: the first run's, with ``capabilities`` the union
    over all its runs (a claim needing one is outside only if no run's partitions had it)."""
    if "facts" not in cases or cases.empty:
        return {}
    runs = [decode_facts(text) for text in cases["facts"].drop_duplicates()]
    facts = dict(runs[0])
    recorded = [f["capabilities"] for f in runs if f.get("capabilities") is not None]
    facts["capabilities"] = sorted(set().union(*recorded)) if recorded else None
    # where the experiments ran is the latest run's choice
    latest = cases.sort_values("run_id") if "run_id" in cases else cases
    facts["moved"] = decode_facts(latest["facts"].iloc[-1]).get("moved")
    return facts


def judge(perf, cases, trace=False, workers=1, store=None):
    """Every claim on every platform of the tables: one dict each (``trace``: see
    :func:`_judge_group`). A platform is judged at the confidence its runs' looks allow.
    ``workers``: the processes that judge (forked from this one; the claims are independent).
    ``store``: a directory keeping each platform's verdicts (crosstalk.analysis.verdictstore): only
    the platforms whose rows, cases or probe outputs changed are judged again."""
    perf_of = dict(iter(perf.groupby("platform", sort=False)))
    cases_of = {p: with_environ(rows) for p, rows in cases.groupby("platform", sort=False)}
    platforms = sorted(perf_of.keys() | cases_of.keys(), key=lambda p: (p.endswith("(example)"), p))
    kept, keys = {}, {}
    if store is not None:
        from crosstalk.analysis import verdictstore
        store, code = verdictstore.Store(store), verdictstore.code_digest()
        for p in platforms:
            keys[p] = verdictstore.platform_key(perf_of.get(p, perf.iloc[:0]), cases_of.get(p, cases.iloc[:0]),
                                                code, trace)
            kept[p] = store.get(keys[p])
    todo = [p for p in platforms if kept.get(p) is None]
    tables = {p: Table(perf_of.get(p, perf.iloc[:0]), confidence_for(looks_of(cases_of.get(p, cases.iloc[:0]))))
              for p in todo}
    facts_of = {p: platform_facts(rows) for p, rows in cases_of.items() if p in tables}
    experiments_of = {p: set(rows["experiment"]) for p, rows in cases_of.items()}

    def judged(task):
        index, (platform, (spec, claim)) = task
        p_cases = cases_of.get(platform, cases.iloc[:0])
        facts = facts_of.get(platform, {})
        result = judge_claim(spec, claim, tables[platform], p_cases, facts, trace)
        first = p_cases.iloc[0] if not p_cases.empty else perf_of[platform].iloc[0]
        return index, {"platform": platform, "system": first["system"], "origin": first["origin"],
                       "measured": spec.name in experiments_of.get(platform, ()),
                       "host_label": first["host_label"], "experiment": spec.name, "id": claim["id"],
                       "paper": claim["paper"], "item": claim["item"], "artefact": claim.get("artefact"),
                       "claim": claim["claim"], "kind": claim.get("kind", "paper"), "quote": claim["quote"],
                       "differs": claim.get("differs"), "controlled_by": claim.get("controlled_by"),
                       "paper_values": claim.get("paper_values", []),
                       "test": claim["test"], "confidence": tables[platform].confidence, **result}

    tasks = list(enumerate(itertools.product(todo, spec_claims())))
    if len(tasks) > 1 and workers > 1:
        import scipy.stats  # noqa: F401  (the fits' statistics: imported once, before the fork)
    fresh = [v for _, v in sorted(forked_map(judged, tasks, workers), key=lambda iv: iv[0])]
    for p in todo:
        kept[p] = apply_controls([v for v in fresh if v["platform"] == p])
        if store is not None:
            store.put(keys[p], kept[p])
    if store is not None:
        store.prune()
    return [v for p in platforms for v in kept[p]]


def apply_controls(verdicts):
    """One platform's verdicts with each claim whose control (``controlled_by``, a check) is
    contradicted there made not applicable: the control shows the effect without the cause the
    claim names (a network-free load raising the probe latency: CPU contention, not the switch), so
    the claim's effect cannot be told from it on this platform. Where the control is not decided
    (inconclusive, or not run), a decided claim is held inconclusive: its effect may still be the
    control's."""
    by_id = {v["id"]: v for v in verdicts}
    out = []
    for v in verdicts:
        control = by_id.get(v.get("controlled_by"))
        if control is not None and control["verdict"] == "contradicted" and v["verdict"] != "not applicable":
            reason = (f"not decidable here: its control {control['id']} is contradicted on this platform "
                      f"({'; '.join(summary(control))}), so the effect shows without the network")
            v = {**v, "verdict": "not applicable", "controlled_out": True,
                 "groups": [{"group": "", "verdict": "not applicable", "reason": reason}]}
        elif control is not None and control["verdict"] in ("inconclusive", "not run") and v["verdict"] in DECIDED:
            held = (f"held undecided: its control {control['id']} is {control['verdict']} on this platform "
                    f"({'; '.join(summary(control))}), so the effect may still show without the network")
            v = {**v, "verdict": "inconclusive", "held_by": control["id"],
                 "groups": [{**g, "verdict": "inconclusive", "held": held} if g["verdict"] in DECIDED else g
                            for g in v["groups"]]}
        out.append(v)
    return out
