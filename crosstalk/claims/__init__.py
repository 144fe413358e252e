"""The papers' claims, listed in the experiment specs (``claims:``), judged on every platform
(system and host class) of the tidy tables: *reproduced*, *contradicted*, *inconclusive* (with the
samples that would decide it) or *not run* (with the reason the cases were skipped).

A claim's test is a ``direction`` (operand ``a`` greater or less than ``b``, by ``min_effect``) or a
``ratio`` (``num`` or ``num/den`` inside ``band``); ``group_by`` judges it for every combination of
those parameters (the claim holds where every group does) and a list of metrics judges each one.
"""
import copy
import itertools
from collections import Counter

from crosstalk.claims.judge import Missing, effects, verdict
from crosstalk.claims.operands import Table, describe, distinct_params, matching
from crosstalk.specs import all_specs, load_spec

#: Order of the overall verdicts: the first that any group has wins.
_PRECEDENCE = ("contradicted", "inconclusive", "reproduced", "not run")


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


def _groups(test, rows):
    """Selections of each group: the test's ``select`` with each combination of ``group_by``'s
    parameter values measured in ``rows``."""
    base = dict(test.get("select", {}))
    by = test.get("group_by", [])
    if not by:
        return [base]
    rows = matching(rows, base)
    combos = sorted({tuple(str(p.get(k)) for k in by) for p in distinct_params(rows).values()
                     if all(k in p for k in by)})
    return [{**base, **dict(zip(by, combo))} for combo in combos] or [base]


def _unswept(cases, missing):
    """"no case here has pport=N (the full profile sweeps it)" when no case has a selected value."""
    params = load_spec(missing.experiment).data["profiles"]
    measured = distinct_params(cases).values()
    for name, wanted in missing.select.items():
        if str(wanted).startswith("@") or any(str(p.get(name)) == str(wanted) for p in measured):
            continue
        sweeps = [prof for prof, data in params.items()
                  if str(wanted) in map(str, data["parameters"].get(name, []))]
        where = f" (the {' and '.join(sweeps)} profile{'s' if len(sweeps) > 1 else ''} sweep{'' if len(sweeps) > 1 else 's'} it)" if sweeps else ""
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
    rows = matching(rows, {k: v for k, v in missing.select.items() if not str(v).startswith("@")})
    skipped = rows[rows["result"] == "skip"]
    if not skipped.empty:
        reason, _ = Counter(skipped["reason"].fillna("skipped")).most_common(1)[0]
        return f"{missing.experiment} {describe(missing.select)} skipped: {reason}"
    failed = rows[rows["result"].isin(["fail", "abort", "fail_deps"])]
    if not failed.empty:
        return f"{missing.experiment} {describe(missing.select)}: {len(failed)} case(s) failed"
    return str(missing)


def judge_claim(spec, claim, table, cases):
    """The verdict of one claim on one platform (its :class:`Table` and cases): a dict with the
    groups' verdicts."""
    groups = []
    exp_rows = table.experiment(spec.name)
    for metric, test in _metric_variants(claim["test"]):
        for select in _groups(test, exp_rows):
            label = ", ".join(filter(None, [metric, *(f"{k}={v}" for k, v in select.items()
                                                       if k in test.get("group_by", []))]))
            units = set()
            try:
                x, low, high = effects(test, table, spec.name, select, units)
            except Missing as missing:
                groups.append({"group": label, "verdict": "not run", "reason": _not_run_reason(cases, missing)})
                continue
            groups.append({"group": label, **verdict(x, low, high), "low": low, "high": high,
                           "modelled": any("modelled" in u for u in units)})
    overall = next(v for v in _PRECEDENCE if any(g["verdict"] == v for g in groups))
    return {"verdict": overall, "groups": groups}


def judge(perf, cases):
    """Every claim on every platform of the tables: one dict each."""
    perf_of = dict(iter(perf.groupby("platform", sort=False)))
    cases_of = dict(iter(cases.groupby("platform", sort=False)))
    platforms = sorted(perf_of.keys() | cases_of.keys(), key=lambda p: (p.endswith("(example)"), p))
    tables = {p: Table(perf_of.get(p, perf.iloc[:0])) for p in platforms}
    out = []
    for platform, (spec, claim) in itertools.product(platforms, spec_claims()):
        p_cases = cases_of.get(platform, cases.iloc[:0])
        result = judge_claim(spec, claim, tables[platform], p_cases)
        first = p_cases.iloc[0] if not p_cases.empty else perf_of[platform].iloc[0]
        out.append({"platform": platform, "system": first["system"], "origin": first["origin"],
                    "host_label": first["host_label"], "experiment": spec.name, "id": claim["id"],
                    "paper": claim["paper"], "item": claim["item"], "artefact": claim.get("artefact"),
                    "claim": claim["claim"], "paper_values": claim.get("paper_values", []),
                    "test": claim["test"], **result})
    return out


def counts(verdicts):
    """``{verdict: n}`` over judged claims, in the order of the verdicts."""
    c = Counter(v["verdict"] for v in verdicts)
    return {v: c.get(v, 0) for v in _PRECEDENCE}

