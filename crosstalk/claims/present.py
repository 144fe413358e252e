"""How a verdict reads, in the terminal and in the report: the threshold, this system's value with
its interval, the paper's values, and one line per claim."""
import math

from crosstalk.bibliography import bibliography
from crosstalk.claims.tally import counts


def _num(v):
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def threshold(low, high):
    """The band a claim's effect must fall in: "> 1", "< 1.02", "in [0.75, 1.33]"."""
    if low is not None and high is not None:
        return f"in [{_num(low)}, {_num(high)}]"
    return f"> {_num(low)}" if low is not None else f"< {_num(high)}"


def here(group):
    """This system's effect: "1.40 [1.16, 1.72] (n=12, > 1)" or the reason it was not judged."""
    if group["verdict"] in ("not run", "not applicable"):
        return group["reason"]
    text = _num(group["estimate"])
    if group["ci_low"] is not None:
        text += f" [{_num(group['ci_low'])}, {_num(group['ci_high'])}]"
    text += f" (n={group['n']}, claim {threshold(group['low'], group['high'])})"
    if group.get("modelled"):
        text += " MODELLED"
    return text


def more_text(group):
    if group["verdict"] != "inconclusive":
        return ""
    if group.get("held"):
        return group["held"]
    if group["more"] is None:
        return "the median sits on the threshold: no number of samples decides it"
    return f"about {group['more']} more sample(s) would decide it"


def paper_text(claim_row):
    """The paper's values: "1.25 us (idle switch mean probe latency)"; "-" if it gives none."""
    parts = []
    for pv in claim_row["paper_values"]:
        v = pv["value"]
        v = _num(v) if not isinstance(v, list) else ("–".join(map(_num, v)) if len(v) == 2 else ", ".join(map(_num, v)))
        parts.append(f"{v} {pv.get('unit', '')} ({pv['condition']})".replace("  ", " "))
    return "; ".join(parts) or "-"


def citation(claim_row):
    """ "Groves 2017, Table 2.4" """
    entry = bibliography().get(claim_row["paper"], {})
    return f"{entry.get('short', claim_row['paper'])}, {claim_row['item']}"


def summary(row):
    """One line per group of a verdict: its group, value and what would decide it."""
    lines = []
    for g in row["groups"]:
        text = here(g)
        extra = more_text(g)
        lines.append((f"{g['group']}: " if g["group"] else "") + text + (f"; {extra}" if extra else ""))
    return lines


def why(row):
    """Why the magnitude may differ here (the platform's balance beside the paper's), or None."""
    return f"why the magnitude may differ: {row['note']}" if row.get("note") else None


def decided_text(totals, unmeasured=0):
    """ "12 of 16 applicable claims decided (75 %)" from one platform's verdict counts;
    ``unmeasured``: claims not run because their experiment never ran on the platform (another
    platform measures them), counted apart."""
    applicable = sum(n for v, n in totals.items() if v != "not applicable") - unmeasured
    decided = totals.get("reproduced", 0) + totals.get("contradicted", 0)
    share = f" ({decided / applicable:.0%})" if applicable else ""
    apart = f"; {unmeasured} more whose experiments did not run here" if unmeasured else ""
    return f"{decided} of {applicable} applicable claims decided{share}{apart}"


def with_moves(verdicts, platform):
    """``platform``'s verdicts, where its main job judged a claim on another system (its experiment
    moved there for the balance it needs) that system's verdict instead (of the same origin)."""
    def there(v):
        return next((w for w in verdicts if w["id"] == v["id"] and w["system"] == v.get("judged_on")
                     and w["origin"] == v["origin"]), v)
    return [there(v) for v in verdicts if v["platform"] == platform]


def main_job_text(verdicts, platform):
    """The platform's headline with the claims its main job judged elsewhere counted where they were
    judged: "with energy judged on vcsand: 21 of 27 applicable claims decided (78%)"; None where it
    moved none."""
    moved = [v for v in verdicts if v["platform"] == platform and v.get("judged_on")]
    if not moved:
        return None
    combined = with_moves(verdicts, platform)
    where = ", ".join(sorted({f"{v['experiment']} judged on {v['judged_on']}" for v in moved}))
    return f"with {where}: {decided_text(counts(combined), unmeasured(combined))}"


def unmeasured(verdicts):
    """How many of a platform's verdicts are "not run" because their experiment never ran there."""
    return sum(1 for v in verdicts if v["verdict"] == "not run" and not v.get("measured", True))


def _last_plan(run):
    """The run's last plan for more samples: its last stage's, or a later one that measured
    nothing again (``unplanned``, made after as many stages as the run has)."""
    stages = (run or {}).get("stages")
    stages = stages if isinstance(stages, list) else []
    unplanned = (run or {}).get("unplanned")
    if isinstance(unplanned, dict) and unplanned.get("after_stages") == len(stages):
        return unplanned
    return stages[-1] if stages else None


def _left_out(run):
    """The claims the run's last plan left out (``{claim, why, seconds}``), from its provenance;
    entries of another shape (a run of an older crosstalk) are passed over."""
    plan = _last_plan(run)
    if isinstance(plan, dict):
        for item in plan.get("left_out", []) if isinstance(plan.get("left_out"), list) else []:
            if isinstance(item, dict) and isinstance(item.get("claim"), str) and "why" in item and (
                    item.get("seconds") is None or isinstance(item.get("seconds"), (int, float))):
                yield item


def _planned(run):
    """The claims a run's stages measured again."""
    stages = (run or {}).get("stages")
    return {c for stage in stages if isinstance(stage, dict) for c in stage.get("claims", []) if isinstance(c, str)} \
        if isinstance(stages, list) else set()


#: Run time (s) beyond which more samples are no practical way to decide a claim: it is shown as
#: noise (its median too near the bound), not with a budget of years.
PRACTICAL_S = 24 * 3600


def open_question(verdict, run=None):
    """Why an inconclusive claim is still open on its platform and the one command that would
    decide it (``{why, command}``; the command is None where no number of samples would), or None
    for a decided one. ``run``: the platform's latest run of the claim's experiment (provenance)."""
    if verdict["verdict"] != "inconclusive":
        return None
    groups = [g for g in verdict["groups"] if g["verdict"] == "inconclusive"]
    if any(g.get("more") is None for g in groups):
        return {"why": "noise: the median sits on the claim's bound, so no number of samples decides it "
                       "here" + ("; the platform's balance differs from the paper's (see the note)"
                                 if verdict.get("note") else ""), "command": None}
    more = max(g["more"] for g in groups)
    left_out = {item["claim"]: item for item in _left_out(run)}
    command = (f"crosstalk run --more {run['run_id']} --budget {{}}m" if run
               else f"crosstalk run -e {verdict['experiment']} --budget {{}}m")
    minutes = 15
    item = left_out.get(verdict["id"])
    if item and item["seconds"] is None:      # a fit: another run's samples join its fit
        return {"why": f"not planned by the run's stages ({item['why']}); about {more} more sample(s) "
                       f"would decide it", "command": f"crosstalk run -e {verdict['experiment']}"}
    if item and item["seconds"] > PRACTICAL_S:
        return {"why": f"noise: the median sits so near the claim's bound that deciding it would take about "
                       f"{item['seconds'] / 86400:,.0f} days of runs at this spread", "command": None}
    if item:
        why = f"budget spent: the run's plan for more samples left it out ({item['why']})"
        # the time it needed at this look, half as much again for the next look's wider interval
        minutes = math.ceil(1.5 * item["seconds"] / 60) + 1
    elif verdict["id"] in _planned(run):
        why = f"noise: measured again by the run's stages and still undecided; about {more} more would decide it"
    elif run and run.get("stages"):
        why = f"too few samples: about {more} more would decide it"
    else:
        why = f"too few samples: about {more} more would decide it (the run took no second stage)"
    return {"why": why, "command": command.format(minutes)}
