"""The papers' figures, redrawn from local runs beside the papers' numbers.

Each figure id (listed in an experiment spec under ``figures``) maps to a function
``fn(perf, systems) -> (Figure, caption)`` registered with ``@figure(id)``; ``perf`` is the tidy
table from ``crosstalk.analysis.ingest``. One module per experiment (or paper) holds its figures.
``systems`` selects by system; series are drawn per ``target`` (platform:partition, see
:func:`with_target`), so two host classes, or a shipped example and a user's run, never share one.
"""
import functools
import json

import matplotlib
import numpy as np

matplotlib.use("Agg")
# The same rows give the same SVG bytes (ids from a fixed salt, no date): a drawing is a function
# of its rows, wherever and whenever it is drawn.
matplotlib.rcParams["svg.hashsalt"] = "crosstalk"
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from crosstalk.analysis.ingest import target_of  # noqa: E402
from crosstalk.claims.judge import median_interval, quotient_interval  # noqa: E402
from crosstalk.claims.operands import CONFIDENCE, JOB_KEY  # noqa: E402
from crosstalk.models.papers import load_paper_table  # noqa: E402

FIGURES = {}


def figure(fig_id):
    def register(fn):
        FIGURES[fig_id] = fn
        return fn
    return register


def read_paper_csv(name):
    """A transcribed paper table and its citation."""
    df = load_paper_table(name)
    return df, df.attrs.get("citation", name)


def params_of(df):
    return df["params"].map(json.loads)


def summarise(df, by, interval="range"):
    """Median over repeats (and runs) of each group, with ``low`` and ``high``: the range, or with
    ``interval="claims"`` the claims' interval of the median (:func:`median_with_interval`; its
    ``exact`` column says where there were too few samples for it and the range stands instead)."""
    g = df.groupby(by)["value"]
    if interval == "claims":
        rows = [{**dict(zip(by, key if isinstance(key, tuple) else (key,))), **median_with_interval(values)}
                for key, values in g]
        return pd.DataFrame(rows, columns=[*by, "median", "low", "high", "n", "exact"])
    return g.agg(median="median", low="min", high="max", n="count").reset_index()


#: How a figure's caption names the claims' interval.
CLAIMS_INTERVAL = (f"bars: the {CONFIDENCE:.0%} distribution-free interval of the median the claims judge "
                   f"(solid, capped); dotted, uncapped: the range, where too few samples give no such interval")


def _finite(values):
    x = np.asarray(values, dtype=float)
    return x[np.isfinite(x)]


def median_with_interval(values):
    """``{median, low, high, n, exact}`` of ``values``: the median and the interval the claims
    judge it with (crosstalk.claims.judge.median_interval at their CONFIDENCE); with too few
    samples for it, the range (``exact`` False)."""
    x = _finite(values)
    if not x.size:
        return {"median": np.nan, "low": np.nan, "high": np.nan, "n": 0, "exact": False}
    interval = median_interval(x)
    low, high = interval[:2] if interval else (x.min(), x.max())
    return {"median": float(np.median(x)), "low": float(low), "high": float(high), "n": int(x.size),
            "exact": interval is not None}


def quotient_with_interval(num, den):
    """``{median, low, high, n, exact}`` of median(num) / median(den), two positive samples
    measured apart: the claims' interval of that quotient (crosstalk.claims.judge.quotient_interval);
    with too few samples, the extremes' quotients (``exact`` False). ``n``: the smaller sample."""
    a, b = _finite(num), _finite(den)
    a, b = a[a > 0], b[b > 0]
    if not (a.size and b.size):
        return {"median": np.nan, "low": np.nan, "high": np.nan, "n": 0, "exact": False}
    interval = quotient_interval(a, b)
    low, high = interval[:2] if interval else (a.min() / b.max(), a.max() / b.min())
    return {"median": float(np.median(a) / np.median(b)), "low": float(low), "high": float(high),
            "n": int(min(a.size, b.size)), "exact": interval is not None}


def as_pct(ratio):
    """A ratio's median and interval (the helpers above) as % change."""
    return {**ratio, **{k: 100 * (ratio[k] - 1) for k in ("median", "low", "high")}}


def per_job(rows, column):
    """``column`` of ``rows`` (experiment_cases) with each job's rounds as their median: rounds of
    one job are one sample against another job's (as the claims pair them)."""
    if "round" not in rows:
        return rows[column]
    return rows.groupby([c for c in (*JOB_KEY, "case") if c in rows], dropna=False)[column].median()


def ratio_with_interval(loaded, metric, alone, apart):
    """The ratio of ``metric`` to its baseline with the claims' interval: the rounds' ratios
    against the baseline their own job measured in turn (the column ``alone``;
    :func:`median_with_interval`), or, where the jobs did not (``alone`` None or not measured),
    the quotient of the medians of separate jobs (``apart``: the baseline's values, one per job;
    :func:`quotient_with_interval`)."""
    if alone and alone in loaded and loaded[alone].notna().any():
        pairs = loaded.dropna(subset=[metric, alone])
        return {**median_with_interval(pairs[metric] / pairs[alone]), "paired": True}
    return {**quotient_with_interval(per_job(loaded, metric), apart), "paired": False}


#: Columns that keep a figure's series apart (``with_target`` labels them).
SERIES = ["platform", "origin", "system", "partition", "environ"]


def with_target(df):
    """``df`` with ``target``, the label of each row's series (``crosstalk.analysis.ingest.target_of``)."""
    return df.assign(target=target_of(df["platform"], df["partition"], df["environ"]))


def ordered_targets(df):
    """The series of ``df``: the user's first, then the shipped examples, each alphabetically."""
    pairs = df[["target", "origin"]].drop_duplicates().itertuples(index=False) if not df.empty else []
    return [t for _, t in sorted((origin != "user", target) for target, origin in pairs)]


def no_data(ax, what):
    ax.text(0.5, 0.5, f"no local data for {what} yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def experiment_cases(perf, experiment, systems):
    """One row per measured case (repeats and rounds separate): parameters as columns, metrics as
    columns."""
    df = perf[perf.experiment == experiment]
    if systems:
        df = df[df.system.isin(systems)]
    if df.empty:
        return df
    wide = df.pivot_table(index=SERIES + ["case", "run_id", "sample", "round", "params"],
                          columns="metric", values="value", aggfunc="first").reset_index()
    params = pd.DataFrame(list(wide["params"].map(json.loads)), index=wide.index)
    return with_target(pd.concat([wide, params], axis=1))


def groves_triad(cases):
    """``cases`` (experiment_cases of stream or nimc-stream) with ``triad`` and ``triad_alone``
    columns in Groves' way (2017 §2.2.4: the rate from the average Triad time) and ``triad_how``
    saying which: a target whose runs recorded no average (runs before crosstalk measured it) shows
    its best rate, labelled, never mixed with another target's averages."""
    cases = cases.copy()
    for name in ("triad_bw", "triad_bw_avg", "triad_bw_alone", "triad_bw_avg_alone"):
        if name not in cases:
            cases[name] = float("nan")
    has_avg = cases.groupby("target")["triad_bw_avg"].transform(lambda s: s.notna().any())
    cases["triad"] = cases["triad_bw_avg"].where(has_avg, cases["triad_bw"])
    cases["triad_alone"] = cases["triad_bw_avg_alone"].where(has_avg, cases["triad_bw_alone"])
    cases["triad_how"] = has_avg.map({True: "average time", False: "best rate, an older run"})
    return cases


def in_job_ratio(loaded, metric, alone, apart, ratio=lambda value, base: value / base):
    """(the median of each round's ``ratio(metric, alone)``, the median alone, the median of
    ``metric``, the samples as text) of cases that ran their baseline in turn in the same job (the
    ``alone`` column, the claims' pairing). Runs recorded before their jobs measured it compare the
    medians of ``apart`` (the separate baseline case's values) and of ``metric`` instead."""
    if alone in loaded and loaded[alone].notna().any():
        pairs = loaded.dropna(subset=[metric, alone])
        rounds = [ratio(v, b) for v, b in zip(pairs[metric], pairs[alone])]
        return float(pd.Series(rounds).median()), pairs[alone].median(), pairs[metric].median(), \
            f"{len(rounds)} paired rounds"
    base, value = apart.median(), loaded[metric].median()
    return (ratio(value, base) if base == base and value == value else float("nan")), base, value, \
        f"{len(apart)}/{len(loaded)}"


def claim_effects(experiment, claim_ids, rows):
    """``{claim: {median, low, high, n, exact}}``: the effect each claim of ``experiment``'s spec
    judges, on ``rows`` (tidy rows of one series), with the interval it is judged with: the
    claims' own operands (crosstalk.claims.judge.effects) and intervals; a claim whose samples the
    rows do not hold is left out. For claims of one group (no group_by, one metric)."""
    from crosstalk.claims.judge import Missing, Separate, effects
    from crosstalk.claims.operands import Table
    tests = {c["id"]: c["test"] for c in spec_claims(experiment)}
    table, out = Table(rows), {}
    for claim in claim_ids:
        test = tests[claim]
        try:
            x, _, _ = effects(test, table, experiment, dict(test.get("select", {})))
        except Missing:
            continue
        out[claim] = quotient_with_interval(x.a, x.b) if isinstance(x, Separate) else median_with_interval(x)
    return out


@functools.lru_cache(maxsize=None)
def spec_claims(experiment):
    """The claims of an experiment's spec (read once per process)."""
    from crosstalk.specs import load_spec
    return tuple(load_spec(experiment).data["claims"])


def series_rows(perf, experiment, systems):
    """{target: tidy rows} of an experiment (what a claim reads, per series)."""
    rows = perf[perf.experiment == experiment]
    if systems:
        rows = rows[rows.system.isin(systems)]
    return dict(tuple(with_target(rows).groupby("target"))) if not rows.empty else {}


#: the report's PNG resolution
PNG_DPI = 110


def draw(fig_id, perf, systems, png, svg=None):
    """Draw one figure to PNG, and to SVG where ``svg`` names a file (about a fifth of a report's
    drawing time: only when asked for); returns its caption."""
    fig, caption = FIGURES[fig_id](perf, systems)
    fig.savefig(png, dpi=PNG_DPI)
    if svg:
        fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
    return caption


def _register_all():
    """Import every module of this package: each registers its figures with @figure."""
    import importlib
    import pkgutil
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_register_all()
