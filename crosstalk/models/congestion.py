"""GPCNeT congestion impact (Chunduri et al. SC19 [chunduri2019], §5.2 Eq 1-3).

Eq 1 latency: CI_l = l_congested / l_isolated.  Eq 2 bandwidth: CI_b = b_isolated / b_congested.
Both are >= 1 when congestion hurts. Two baselines are in use and must be labelled:

- ``"tool"``: what ``network_load_test`` prints in its Key Results table: loaded Avg / isolated Avg
  and loaded 99% / isolated 99% (checked against its output: 668.7/24.4 = 27.4X).
- ``"paper"``: Fig 11 / §5.2 "We use average isolated performance ... as the baseline": loaded Avg /
  isolated Avg and loaded 99% / isolated *Avg*. Only this one reproduces "latency degradation
  approaches four orders of magnitude on Edison" (27117.9 / 3.0 = 9040; the tool's 27117.9/7.2 = 3766).
"""
from typing import NamedTuple

from crosstalk.models import modelled

SOURCE = "Chunduri et al. SC19 Eq 1-2"
DEFINITIONS = {
    # name: (loaded stat, isolated stat) for the mean and the tail CI
    "tool": {"avg": ("avg", "avg"), "p99": ("p99", "p99")},
    "paper": {"avg": ("avg", "avg"), "p99": ("p99", "avg")},
}
class Canary(NamedTuple):
    kernel: str     # xt-congestion's name (its JSON records' "canary")
    gpcnet: str     # network_load_test's test, as crosstalk.parsers.gpcnet names it
    kind: str       # "latency" (Eq 1) or "bandwidth" (Eq 2): xt-congestion's "metric" of its values
    unit: str
    label: str      # the figures' axis title


#: The three canaries by their perf variables' prefix (``lat_isolated_avg``, ``ci_bw_avg``): the
#: one vocabulary of the kernel, the upstream tool, the ReFrame test and the figures.
CANARIES = {
    "lat": Canary("rr_lat", "rr_two_sided_lat", "latency", "us", "P2P latency (us)"),
    "bw": Canary("rr_bw_sync", "rr_two_sided_bw_sync", "bandwidth", "MiB/s/rank", "P2P BW+Sync (MiB/s/rank)"),
    "allreduce": Canary("allreduce", "multiple_allreduce", "latency", "us", "Allreduce (us)"),
}
#: The perf variables' impact suffix -> (definition, statistic) (see DEFINITIONS); the mean CI is
#: the same under both definitions.
IMPACTS = {"avg": ("tool", "avg"), "p99_tool": ("tool", "p99"), "p99_paper": ("paper", "p99")}


def ci_latency(congested, isolated):
    """Eq 1: CI_l = l_congested / l_isolated (latency: lower is better)."""
    if isolated <= 0:
        raise ValueError(f"isolated latency must be > 0, got {isolated}")
    return congested / isolated


def ci_bandwidth(isolated, congested):
    """Eq 2: CI_b = b_isolated / b_congested (bandwidth: higher is better)."""
    if congested <= 0:
        raise ValueError(f"congested bandwidth must be > 0, got {congested}")
    return isolated / congested


def congestion_impact(kind, isolated, loaded, definition="paper"):
    """Mean and tail CI of one canary test.

    ``kind`` is ``"latency"`` (P2P Lat, Allreduce; usec) or ``"bandwidth"`` (BW+Sync; MiB/s/rank);
    ``isolated``/``loaded`` map ``"avg"`` and ``"p99"`` to values. Returns two modelled records
    (stat ``avg`` and ``p99``) labelled with ``definition`` and the ratio used.
    """
    if kind not in ("latency", "bandwidth"):
        raise ValueError(f"kind must be 'latency' or 'bandwidth', got {kind!r}")
    if definition not in DEFINITIONS:
        raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {definition!r}")
    out = []
    for stat, (loaded_stat, iso_stat) in DEFINITIONS[definition].items():
        load, iso = loaded[loaded_stat], isolated[iso_stat]
        value = ci_latency(load, iso) if kind == "latency" else ci_bandwidth(iso, load)
        ratio = (f"loaded {loaded_stat} / isolated {iso_stat}" if kind == "latency"
                 else f"isolated {iso_stat} / loaded {loaded_stat}")
        out.append(modelled(f"congestion_impact_{kind}", value, "x", SOURCE, ci_stat=stat,
                            definition=definition, ratio=ratio))
    return out


def impact(kind, isolated, loaded, suffix):
    """One CI of :data:`IMPACTS` (``suffix``) of one canary test: its value alone."""
    definition, stat = IMPACTS[suffix]
    return next(r["value"] for r in congestion_impact(kind, isolated, loaded, definition) if r["ci_stat"] == stat)


def table2_impacts(row, definition="paper"):
    """CIs of one GPCNeT Table 2 row (columns ``iso_avg_lat`` ... ``load_p99_ar``) for Fig 11.

    Returns ``{(test, stat): CI}`` with test in ``lat`` (P2P Lat), ``bw`` (P2P BW+Sync),
    ``ar`` (Allreduce) and stat in ``avg``, ``p99``.
    """
    out = {}
    for test, kind in (("lat", "latency"), ("bw", "bandwidth"), ("ar", "latency")):
        iso = {s: float(row[f"iso_{s}_{test}"]) for s in ("avg", "p99")}
        load = {s: float(row[f"load_{s}_{test}"]) for s in ("avg", "p99")}
        for rec in congestion_impact(kind, iso, load, definition):
            out[(test, rec["ci_stat"])] = rec["value"]
    return out


def app_impact(t_isolated, t_congested):
    """Application CI of Table 3: t_congested / t_isolated (85/45 = 1.9 for Crystal).

    The text's Eq 3 prints the inverse (t_isolated / t_congested); the table's numbers are
    congested / isolated, so this follows the table (same direction as Eq 1).
    """
    return ci_latency(t_congested, t_isolated)


def impacts_from_records(records, definition="paper"):
    """CIs of every canary test in parsed ``network_load_test`` records (crosstalk.parsers.gpcnet).

    Latency or bandwidth is told by the unit (``usec`` vs ``MiB/s/rank``). Returns modelled records
    with ``test`` and ``msg_bytes`` added.
    """
    values = {}
    for r in records:
        if r.get("role") == "canary" and r.get("condition") in ("isolated", "congested"):
            by_condition = values.setdefault((r["test"], r["msg_bytes"], r["unit"]), {})
            by_condition.setdefault(r["condition"], {})[r["stat"]] = r["value"]
    out = []
    for (test, size, unit), by in sorted(values.items()):
        if "congested" not in by:
            continue
        kind = "latency" if unit == "usec" else "bandwidth"
        for rec in congestion_impact(kind, by["isolated"], by["congested"], definition):
            out.append({**rec, "test": test, "msg_bytes": size})
    return out
