"""Deferred access to the JSON lines every xt-* kernel prints (docs/architecture.md)."""
import reframe.utility.sanity as sn

from crosstalk import userfiles
from crosstalk.parsers.kernel import among_lines


@sn.deferrable
def records(path, type_=None, **match):
    """Kernel records from ``path`` whose keys equal ``match`` (e.g. metric='triad_bw')."""
    return among_lines(userfiles.read_text(path, "output", errors="replace"), type_, **match)


@sn.deferrable
def result_value(path, metric, stat="best", **match):
    """The single ``result`` value of ``metric``/``stat``; a sanity error if absent or ambiguous."""
    found = records(path, "result", metric=metric, stat=stat, **match).evaluate()
    if len(found) != 1:
        raise sn.SanityError(f"expected one {metric}/{stat} result in {path}, found {len(found)}")
    return float(found[0]["value"])


@sn.deferrable
def round_values(path, metric, stat, rounds, field="value", **match):
    """The ``field`` of the one ``result`` each of ``rounds`` rounds (a kernel's ``--rounds``)
    reports, in round order; a sanity error if a round reported none or several."""
    found = sorted(records(path, "result", metric=metric, stat=stat, **match).evaluate(),
                   key=lambda r: r.get("round", 0))
    per_round = [r.get("round", 0) for r in found]
    if per_round != list(range(rounds)):
        raise sn.SanityError(f"expected one {metric}/{stat} result in each of {rounds} rounds in {path}, "
                             f"found rounds {per_round}")
    return [float(r[field]) for r in found]


@sn.deferrable
def all_validations_pass(path):
    """True if the kernel wrote at least one validation record and all of them passed."""
    found = records(path, "validation").evaluate()
    if not found:
        raise sn.SanityError(f"{path}: the kernel reported no validation")
    failed = [r.get("detail", "?") for r in found if not r.get("passed")]
    if failed:
        raise sn.SanityError(f"{path}: validation failed: {'; '.join(map(str, failed))}")
    return True


@sn.deferrable
def tool_value(tool, path, metric, stat=None, **match):
    """A value from an upstream tool's output, read by ``crosstalk.parsers.<tool>``."""
    from crosstalk.parsers import parse
    found = [r for r in parse(tool, path) if r["metric"] == metric and (stat is None or r["stat"] == stat)
             and all(r.get(k) == v for k, v in match.items())]
    failed = [r for r in parse(tool, path) if r.get("failed")]
    if failed:
        raise sn.SanityError(f"{path}: {tool} failed: {failed[0]['reason']}")
    if len(found) != 1:
        raise sn.SanityError(f"{path}: expected one {metric}/{stat} from {tool}, found {len(found)}")
    return float(found[0]["value"])
