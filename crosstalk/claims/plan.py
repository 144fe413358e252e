"""The second stage of a run (``crosstalk run --budget``): which cases to measure again, and how
many times, so that the claims the first stage left inconclusive get the samples that would decide
them, within the time left.

The procedure is a two-stage design with two looks. The first stage is the pilot: its samples give
each claim's spread and the samples that would decide it (:func:`crosstalk.claims.judge.more_samples`).
The second stage measures exactly those cases again; the claims are then judged once more on all
samples. A claim decided at the first look is not measured again, so both looks use the
Bonferroni level 1 - (1 - 0.90) / 2 = 95 %: the chance that either look decides a claim wrongly
stays at most 10 %, the single-look level (docs/claims.md).
"""
import math
from dataclasses import dataclass, field

import pandas as pd

from crosstalk.claims.operands import Missing, measured

#: Looks at the data a run with a second stage takes.
TWO_STAGE_LOOKS = 2
#: A case's planned time over its first-stage duration: second-stage cases ran 8 % longer than
#: their first-stage durations (the quick suite on a 2-core VM, 2026-11-26), so a fifth of room.
CASE_MARGIN = 1.2
#: Seconds per ReFrame session of the stage (start-up, the kernels' build fixture found built).
SESSION_S = 10


@dataclass
class Need:
    """What one inconclusive claim needs: ``repeats`` more of each case (partition, case name)."""
    claim: str
    repeats: dict
    seconds: float


@dataclass
class Plan:
    """Cases to run again (``{(partition, case name): repeats}``), the claims they are for and the
    claims left out: ``{claim, why, seconds}``, ``seconds`` the time the claim would have needed
    (None where more samples would not decide it)."""
    repeats: dict = field(default_factory=dict)
    claims: list = field(default_factory=list)
    left_out: list = field(default_factory=list)
    seconds: float = 0.0

    def sessions(self):
        """``[(partition, repeats, [case names])]``: one ReFrame session per partition and count."""
        by = {}
        for (partition, case), n in sorted(self.repeats.items()):
            by.setdefault((partition, n), []).append(case)
        return [(p, n, cases) for (p, n), cases in sorted(by.items())]


def _operands(operand):
    """The metric operands inside an operand (a ratio's, a spread's)."""
    if "ratio" in operand:
        return [m for op in operand["ratio"] for m in _operands(op)]
    if "spread" in operand:
        return [(op, operand["over"]) for op, _ in _operands(operand["spread"])]
    return [(operand, None)] if "metric" in operand else []


def trace(test, table, experiment, select, n):
    """``{cases, per_repeat}`` of one claim group judged on ``n`` paired samples: the (partition,
    environment, case) of every row its operands read, and the samples one more copy of all of them
    adds (``n`` over the copies made so far: one per partition and environment they ran in, times
    their paired rounds and spec repeats)."""
    found = []
    for key in ("a", "b", "num", "den"):
        for operand, over in _operands(test.get(key, {})):
            try:
                rows, _ = measured(operand, table, experiment, select, None, free=(over,) if over else ())
            except Missing:
                continue
            found.append(rows)
    if not found:
        return {"cases": [], "per_repeat": None}
    rows = pd.concat(found)
    cases = sorted({(p, e, c) for p, e, c in zip(rows["partition"], rows["environ"], rows["case"])})
    copies = rows.drop_duplicates(["run_id", "sample"])
    return {"cases": [list(c) for c in cases], "per_repeat": n / len(copies)}


def need_of(verdict, case_seconds):
    """The :class:`Need` of an inconclusive claim's verdict (judged with ``trace``), or a reason
    why more samples would not decide it."""
    repeats = {}
    for group in verdict["groups"]:
        if group["verdict"] != "inconclusive" or group.get("held"):      # held: its control is planned
            continue
        if not group.get("cases"):
            return f"{group['group'] or 'the claim'}: not decided by more samples of its cases (a fit)"
        if not group.get("more"):
            return f"{group['group'] or 'the claim'}: its estimate sits on the band's bound"
        n = math.ceil(group["more"] / group["per_repeat"])
        for partition, _, case in group["cases"]:
            repeats[(partition, case)] = max(repeats.get((partition, case), 0), n)
    if not repeats and verdict.get("held_by"):
        return f"decided, but held until its control {verdict['held_by']} is (measured again on its own)"
    unknown = [key for key in repeats if key not in case_seconds]
    if unknown:
        return f"no duration recorded for {unknown[0][1]} on {unknown[0][0]}"
    return Need(verdict["id"], repeats, cost(repeats, case_seconds))


def cost(repeats, case_seconds):
    """Planned seconds of ``repeats``: the cases with their margin and one start-up per session."""
    sessions = {(partition, n) for (partition, _), n in repeats.items()}
    return CASE_MARGIN * sum(n * case_seconds[key] for key, n in repeats.items()) + SESSION_S * len(sessions)


def plan(verdicts, case_seconds, budget_s):
    """The :class:`Plan` for ``verdicts`` (one platform's, judged with ``trace``), given each
    case's measured duration (``{(partition, case name): seconds}``) and ``budget_s`` seconds.
    Cheapest claims first; cases that several claims need run once for all of them."""
    out = Plan()
    needs = []
    for verdict in verdicts:
        if verdict["verdict"] != "inconclusive":
            continue
        need = need_of(verdict, case_seconds)
        if isinstance(need, str):
            out.left_out.append({"claim": verdict["id"], "why": need, "seconds": None})
        else:
            needs.append(need)
    for need in sorted(needs, key=lambda n: (n.seconds, n.claim)):
        merged = dict(out.repeats)
        for key, n in need.repeats.items():
            merged[key] = max(merged.get(key, 0), n)
        seconds = cost(merged, case_seconds)
        if seconds <= budget_s:
            out.repeats, out.seconds = merged, seconds
            out.claims.append(need.claim)
        else:
            out.left_out.append({"claim": need.claim, "seconds": round(need.seconds),
                                 "why": f"needs about {need.seconds:.0f} s; "
                                        f"{max(0.0, budget_s - out.seconds):.0f} s of the budget were left"})
    return out
