"""Active probing of switch utilisation, Casas & Bronevetsky (spec: active-probing).

Local cases: one job per load (idle, compressionb:P-M-B, app:NAME) measuring ImpactB (idle fabric
first, then under the load) and each application's time (``<app>_time``) under the load.
Probe latency distributions are read from the runs' kept outputs (the ImpactB ``sample`` records)
where the run directories are at hand; otherwise the figures fall back to the summary metrics.
Everything derived by a model (rho, predictions, their errors) is labelled modelled.
"""
import json
import os
from functools import lru_cache

import numpy as np
import pandas as pd

from crosstalk import userfiles
from crosstalk.analysis.ingest import case_output_dirs, run_dir_of
from crosstalk.errors import InputError
from crosstalk.figures import (
    CLAIMS_INTERVAL,
    SERIES,
    as_pct,
    figure,
    no_data,
    ordered_targets,
    plt,
    ratio_with_interval,
    read_paper_csv,
    summarise,
    with_target,
)
from crosstalk.figures.style import (
    errorbars,
    focus_on_user,
    is_example,
    legend_below,
    paper_label,
    paper_line,
    series,
    short,
    tag,
    targets_note,
)
from crosstalk.models.queueing import idle_parameters, predict_slowdowns, prediction_errors, utilisation
from crosstalk.parsers.kernel import among_lines

EXPERIMENT = "active-probing"
PREDICTORS = ["AverageLT", "AverageStDevLT", "PDFLT", "QueueModel"]


# -- data -----------------------------------------------------------------------------------------

def cases(perf, systems):
    """One row per measured case and ReFrame session (repeats kept apart), metrics as columns."""
    df = perf[perf.experiment == EXPERIMENT]
    if systems:
        df = df[df.system.isin(systems)]
    if df.empty:
        return df
    # ReFrame --repeat N sessions can arrive with the same session number: number the rows of each
    # case and metric in order, so one job's metrics stay together and repeats stay apart.
    key = SERIES + ["case", "run_id", "session", "params"]
    df = df.assign(job=df.groupby(key + ["metric"]).cumcount())
    wide = df.pivot_table(index=key + ["job"],
                          columns="metric", values="value", aggfunc="first").reset_index()
    wide["load"] = wide["params"].map(lambda p: json.loads(p).get("load"))
    return with_target(wide.dropna(subset=["load"]))


def load_order(loads):
    """idle, then CompressionB configurations from light to heavy-looking (by B desc, P, M), then apps."""
    def key(load):
        if load == "idle":
            return (0, 0, 0, 0)
        if load.startswith("compressionb:"):
            p, m, b = load.split(":", 1)[1].split("-")
            return (1, -float(b), int(p), int(m))
        return (2, 0, 0, load)
    return sorted(set(loads), key=key)


def medians(wide, metric):
    """{(target, load): median of metric} over every repeat, session and run."""
    if wide.empty or metric not in wide:
        return {}
    return wide.dropna(subset=[metric]).groupby(["target", "load"])[metric].median().to_dict()


@lru_cache(maxsize=4096)
def _half_rtts(path, stamp):
    """The half round trips (us) of one probe output; ``stamp`` (size, mtime) re-reads a changed file.
    A figure reads each job's output several times (every load's CDF, the pooled idle baseline)."""
    try:
        text = userfiles.read_text(path, "output", errors="replace")
    except InputError:
        return ()
    return tuple(float(r["value"]) for r in among_lines(text, "sample", metric="half_rtt")
                 if isinstance(r.get("value"), (int, float)))


def _read_half_rtts(path):
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return _half_rtts(str(path), (st.st_size, st.st_mtime_ns))


#: The columns naming one job of a run: its probe samples are in that job's output.
RUN_CASE = ("origin", "system", "run_id", "case", "partition", "environ")


def probe_samples(wide, target, load, which="rfm_job.out"):
    """Every ImpactB half round trip (us) under ``load`` on ``target``, pooled over runs
    (``which``: the loaded probe, or ``idle_probe.out`` for the same jobs' idle-fabric runs)."""
    jobs = wide.loc[(wide["target"] == target) & (wide["load"] == load), list(RUN_CASE)].drop_duplicates()
    values, outputs = [], {}
    for origin, system, run_id, case, partition, environ in jobs.itertuples(index=False, name=None):
        if (origin, system, run_id) not in outputs:     # one look-up per run, not per job
            outputs[origin, system, run_id] = case_output_dirs(str(run_dir_of(origin, system, run_id)))
        for out in outputs[origin, system, run_id].get((case, partition, environ), []):
            values += _read_half_rtts(os.path.join(out, which))
    return np.asarray(values, dtype=float)


def pooled_rho(wide, target, loads):
    """MODELLED rho per load with ONE idle baseline per target: t_min and Var(S) from every idle-fabric
    probe of the target (each job's pre-load probe and the idle cases), W = mean of the pooled
    samples under the load. With common parameters rho rises with W, so loads compare fairly; each
    job's own ``rho`` metric (its own idle probe) carries that probe's noise in Var(S).
    Falls back to the median per-job metric where no samples were kept."""
    idle = np.concatenate([probe_samples(wide, target, ld, "idle_probe.out") for ld in loads] +
                          [probe_samples(wide, target, "idle")])
    per_job = medians(wide, "rho")
    out = {}
    for load in loads:
        x = probe_samples(wide, target, load)
        if idle.size > 1 and x.size:
            t_min, var_s = idle_parameters(idle)
            out[load] = utilisation(float(x.mean()), t_min, var_s)
        else:
            out[load] = per_job.get((target, load), float("nan"))
    return out, idle


def slowdown_pct(with_load, alone):
    """Eq 4: (time with interference - time alone) / time alone, in percent."""
    return 100.0 * (with_load - alone) / alone


def app_names(wide):
    """Victim applications measured (metrics ``<app>_time``)."""
    return sorted(c[:-len("_time")] for c in wide.columns if isinstance(c, str) and c.endswith("_time")
                  and wide[c].notna().any())


# -- Figs 3, 6-11: probe latency distributions and rho --------------------------------------------

def load_label(load):
    """A load as a tick label: idle, CB P-M-B (CompressionB), or the application's name."""
    if load.startswith("compressionb:"):
        return "CB " + load.split(":", 1)[1]
    return load.split(":", 1)[1] if load.startswith("app:") else load


def _dodge(i, k, step=0.12):
    return (i - (k - 1) / 2) * step


def _load_axis(ax, loads):
    ax.set_xticks(range(len(loads)), [load_label(ld) for ld in loads], fontsize=7)
    ax.set_xlim(-0.5, len(loads) - 0.5)
    ax.set_xlabel("load (CB: CompressionB partners-messages-bubble)", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


#: The paper's machine, as the legends name it.
CAB = "Cab, QDR InfiniBand"


def _rho_band(ax, quoted, axis="y"):
    """The paper's CompressionB utilisation range (Fig 11), hatched, as a band on ``axis``."""
    low, high = quoted["compressionb_util_min"] / 100, quoted["compressionb_util_max"] / 100
    span = ax.axhspan if axis == "y" else ax.axvspan
    tag(span(low, high, facecolor="#f1f3f5", edgecolor="#868e96", hatch="..", lw=0, zorder=0,
             label=paper_label(f"{CAB}, CompressionB rho {low:.2f}-{high:.2f} (Fig 11)")), "paper")


@figure("casas_probe_latency")
def casas_probe_latency(perf, systems):
    """ImpactB probe latency by load: the mean (the claims' quantity) beside the paper's idle mean,
    its ratio to the same jobs' idle-fabric probe, and the MODELLED utilisation rho; where the runs'
    probe samples are at hand, their distributions, a panel per load."""
    paper, citation = read_paper_csv("casas_model_results.csv")
    quoted = paper.set_index("quantity")["value"]
    wide = cases(perf, systems)
    targets = ordered_targets(wide)
    loads = load_order(wide["load"]) if targets else ["idle"]
    kept = {(t, ld): probe_samples(wide, t, ld) for t in targets for ld in loads}
    kept = {k: x for k, x in kept.items() if x.size}
    # three panels, then where samples are kept a distribution per load, three a row (one grid:
    # tight_layout spaces every column of a grid alike)
    rows = 1 + (-(-len(loads) // 3) if kept else 0)
    fig = plt.figure(figsize=(14, 4.2 * rows + 0.4))
    grid = fig.add_gridspec(rows, 3)
    ax_lat, ax_ratio, ax_rho = (fig.add_subplot(grid[0, i]) for i in range(3))
    notes = []
    if not targets:
        for ax in (ax_lat, ax_ratio, ax_rho):
            no_data(ax, "active probing")
    k = len(targets)
    for i, target in reversed(list(enumerate(targets))):
        part = wide[wide["target"] == target]
        own = [ld for ld in loads if ld in set(part["load"])]
        at = {ld: loads.index(ld) + _dodge(i, k) for ld in own}
        if "probe_avg" in part:
            stats = summarise(part.rename(columns={"probe_avg": "value"}).dropna(subset=["value"]), ["load"],
                              interval="claims")
            errorbars(ax_lat, [at[ld] for ld in stats["load"]], stats, target, short(target), targets=targets,
                      linestyle="none")
        ratios = [(ld, ratio_with_interval(part[part["load"] == ld], "probe_avg", "idle_probe_avg", None))
                  for ld in own if {"probe_avg", "idle_probe_avg"} <= set(part)]
        ratios = [(ld, r) for ld, r in ratios if r["median"] == r["median"]]
        if ratios:
            errorbars(ax_ratio, [at[ld] for ld, _ in ratios], pd.DataFrame([r for _, r in ratios]), target,
                      short(target), targets=targets, linestyle="none")
        rho = pooled_rho(wide, target, own)[0]
        style = series(target, targets=targets)
        gid = style.pop("gid")
        tag(ax_rho.plot([at[ld] for ld in own], [rho[ld] for ld in own], linestyle="none",
                        **{key: style[key] for key in ("color", "marker", "markersize", "zorder")}), gid)
        med, avg = medians(wide, "probe_median"), medians(wide, "probe_avg")
        notes.append(f"{target}: " + ", ".join(
            f"{ld} median {med.get((target, ld), float('nan')):.0f} us / "
            f"mean {avg.get((target, ld), float('nan')):.0f} us / rho {rho[ld]:.3f}"
            + next((f" / {r['median']:.2f}x its idle probe" for x, r in ratios if x == ld), "") for ld in own))
    paper_line(ax_lat, [loads.index("idle") + _dodge(k, k + 1)] if "idle" in loads else [0],
               [quoted["idle_switch_mean_probe_latency"]],
               paper_label(f"{CAB}, idle mean {quoted['idle_switch_mean_probe_latency']:g} us (Fig 3)"),
               linestyle="none")
    _rho_band(ax_rho, quoted)
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("ImpactB mean half round trip (us)", fontsize=8)
    ax_lat.set_title("Probe latency under each load", fontsize=9)
    ax_ratio.axhline(1.0, color="black", lw=0.6)
    ax_ratio.set_yscale("log")
    ax_ratio.set_ylabel("mean / the same job's idle-fabric mean (ratio)", fontsize=8)
    ax_ratio.set_title("The claims' quantity: against the idle fabric", fontsize=9)
    ax_rho.set_ylim(0, 1)
    ax_rho.set_ylabel("rho, switch utilisation (MODELLED, M/G/1)", fontsize=8)
    ax_rho.set_title("Utilisation (MODELLED)", fontsize=9)
    for ax in (ax_lat, ax_ratio, ax_rho):
        _load_axis(ax, loads)
    if kept:
        _distributions(fig, grid, wide, targets, loads, kept, quoted)
    legend_below(fig, ncol=3)
    measured = "; ".join(notes) if notes else "no local probe runs yet"
    return fig, (
        "ImpactB (1 KiB ping-pong pairs across nodes) on an idle fabric, under CompressionB configurations "
        "(CB P-M-B: P partners, M messages of 40 KiB per partner and round, bubble B in us) and under each "
        "application running continuously. Left: the mean half round trip per job, medians over jobs, n in the "
        f"legend; {CLAIMS_INTERVAL}; black: the paper's idle-switch mean. Middle: each job's mean under the load "
        "over its own idle-fabric probe (every job probes the idle fabric before its load starts), the quantity "
        "the claims judge, with their interval. Right: switch utilisation rho, MODELLED with the M/G/1 "
        "Pollaczek-Khinchine formula (Eq 1-3) from the mean latency under the load and the minimum and "
        "variance of all idle-fabric probes of the target pooled (one estimate per load: no interval); hatched: "
        "the paper's CompressionB range. "
        + ("Bottom: the distribution of every kept half round trip, a panel per load, in each series' colour "
           "(idle panel, dashed: the idle-fabric probes every job ran before its load; black dashed: the paper's "
           "idle mean). " if kept else "")
        + f"Measured: {measured}. Series: {targets_note(targets)}. Paper (Cab, QDR IB): idle mean probe latency "
        f"{quoted['idle_switch_mean_probe_latency']:g} us; CompressionB configurations span rho "
        f"{quoted['compressionb_util_min']:g}-{quoted['compressionb_util_max']:g} % ({citation}).")


def _distributions(fig, grid, wide, targets, loads, kept, quoted):
    """The kept probe samples' CDF, a panel per load, a line per target; the idle panel also shows
    each target's idle-fabric probes of every job (dashed) and the paper's idle mean."""
    first = None
    for j, load in enumerate(loads):
        ax = fig.add_subplot(grid[1 + j // 3, j % 3], sharex=first)
        first = first or ax
        for target in reversed(targets):
            x = kept.get((target, load))
            style = series(target, targets=targets)
            gid = style.pop("gid")
            if x is not None:
                xs = np.sort(x)
                tag(ax.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", color=style["color"],
                            lw=1.6 if gid == "user" else 1.0, zorder=style["zorder"]), gid)
            if load == "idle":
                idle = np.concatenate([probe_samples(wide, target, ld, "idle_probe.out") for ld in loads])
                if idle.size:
                    xs = np.sort(idle)
                    tag(ax.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", color=style["color"], ls="--",
                                lw=1, zorder=style["zorder"]), gid)
        if load == "idle":
            tag(ax.axvline(quoted["idle_switch_mean_probe_latency"], color="black", ls="--", lw=1), "paper")
        ax.set_xscale("log")
        ax.set_title(load_label(load), fontsize=8)
        ax.set_xlabel("half round trip (us)", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, which="both")
        if j % 3 == 0:
            ax.set_ylabel("cumulative fraction of probes", fontsize=8)


# -- Table 1 and Fig 12: co-run slowdowns -------------------------------------------------------

def pair_table(wide, target):
    """Measured slowdown (%) of each victim app (rows) with each aggressor app (columns)."""
    apps = app_names(wide)
    table = pd.DataFrame(index=pd.Index(apps, name="victim"), columns=apps, dtype=float)
    for victim in apps:
        t = medians(wide, f"{victim}_time")
        alone = t.get((target, "idle"))
        for aggressor in apps:
            loaded = t.get((target, f"app:{aggressor}"))
            if alone and loaded:
                table.loc[victim, aggressor] = slowdown_pct(loaded, alone)
    return table


def compression_table(wide, target):
    """{app: {compressionb load: measured slowdown %}} (Fig 12's data, Eq 4)."""
    out = {}
    for victim in app_names(wide):
        t = medians(wide, f"{victim}_time")
        alone = t.get((target, "idle"))
        if not alone:
            continue
        out[victim] = {load: slowdown_pct(v, alone) for (tg, load), v in t.items()
                       if tg == target and load.startswith("compressionb:")}
    return out


def slowdown(wide, target, victim, load):
    """Eq 4's slowdown (%) of ``victim`` under ``load`` on ``target`` with the claims' interval: each
    job's time over the victim's run alone in the same job (``<victim>_time_alone``) where the jobs
    measured it, else the median of the idle cases' jobs; None where not measured."""
    metric = f"{victim}_time"
    part = wide[wide["target"] == target]
    loaded = part[part["load"] == load]
    if metric not in part or not loaded[metric].notna().any():
        return None
    ratio = ratio_with_interval(loaded, metric, f"{metric}_alone", part.loc[part["load"] == "idle", metric].dropna())
    return as_pct(ratio) if ratio["median"] == ratio["median"] else None


def _local_only(ax, user, paper, include=(0,)):
    """Keep the axis on the user's values and the paper's (style.focus_on_user)."""
    focus_on_user(ax, user, paper, include=list(include))


@figure("casas_slowdown_table")
def casas_slowdown_table(perf, systems):
    """Co-run slowdowns beside Table 1's (left), and each application's slowdown against the
    MODELLED utilisation of each CompressionB configuration (Fig 12), a panel per application."""
    paper, citation = read_paper_csv("casas_table1_pair_slowdowns.csv")
    quoted = read_paper_csv("casas_model_results.csv")[0].set_index("quantity")["value"]
    paper = paper.set_index("victim")
    wide = cases(perf, systems)
    targets = ordered_targets(wide)
    apps = app_names(wide) if targets else []
    pairs = [(v, a) for v in apps for a in apps]
    fig, axes = plt.subplots(1, 1 + max(1, len(apps)), figsize=(5.5 + 4 * max(1, len(apps)), 4.8), squeeze=False,
                             gridspec_kw={"width_ratios": [1.4] + [1] * max(1, len(apps))})
    ax_pairs, by_app = axes[0][0], dict(zip(apps, axes[0][1:]))
    notes, user = [], []
    k = len(targets)
    for i, target in reversed(list(enumerate(targets))):
        found = [(x, v, a, slowdown(wide, target, v, f"app:{a}")) for x, (v, a) in enumerate(pairs)]
        found = [(x, v, a, st) for x, v, a, st in found if st is not None]
        if found:
            errorbars(ax_pairs, [x + _dodge(i, k) for x, *_ in found], pd.DataFrame([st for *_, st in found]), target,
                      short(target), targets=targets, linestyle="none")
            notes.append(f"{target}: " + ", ".join(f"{v} with {a} {st['median']:+.1f} %" for _, v, a, st in found))
            if not is_example(target):
                user += [st[key] for *_, st in found for key in ("median", "low", "high")]
    table1 = paper.to_numpy(dtype=float).ravel()
    spread = np.linspace(-0.3, 0.3, table1.size)[np.argsort(np.argsort(table1))]    # by rank: ties apart
    paper_line(ax_pairs, len(pairs) + spread, table1, paper_label(f"{CAB}, Table 1: {table1.size} pairs of "
                                                                  f"{len(paper)} applications"), linestyle="none")
    ax_pairs.axhline(0, color="black", lw=0.6)
    ax_pairs.set_xticks(range(len(pairs) + 1), [f"{v}\nwith {a}" for v, a in pairs] + ["Cab\nTable 1"], fontsize=7)
    ax_pairs.set_xlim(-0.6, len(pairs) + 0.6)
    ax_pairs.set_xlabel("slowed application with the co-running one", fontsize=8)
    ax_pairs.set_ylabel("slowdown (%, Eq 4)", fontsize=8)
    ax_pairs.set_title("Co-run slowdown", fontsize=9)
    ax_pairs.grid(axis="y", alpha=0.3)
    _local_only(ax_pairs, user, table1)
    for app, ax in by_app.items():
        app_user = []
        for target in reversed(targets):
            rho = pooled_rho(wide, target, load_order(wide[wide["target"] == target]["load"]))[0]
            pts = [(r, slowdown(wide, target, app, ld)) for ld, r in rho.items() if ld.startswith("compressionb:")]
            pts = sorted((r, st) for r, st in pts if st is not None and r == r)
            if pts:
                errorbars(ax, [r for r, _ in pts], pd.DataFrame([st for _, st in pts]), target, short(target),
                          targets=targets)
                if not is_example(target):
                    app_user += [st[key] for _, st in pts for key in ("median", "low", "high")]
        _rho_band(ax, quoted, axis="x")
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xlim(0, 1)
        ax.set_xlabel("rho of the CompressionB configuration (MODELLED)", fontsize=8)
        ax.set_ylabel(f"{app} slowdown (%, Eq 4)", fontsize=8)
        ax.set_title(f"Fig 12 style: {app}", fontsize=9)
        ax.grid(alpha=0.3)
        _local_only(ax, app_user, [])
    if not apps:
        no_data(axes[0][1], "applications under CompressionB with probed rho")
    legend_below(fig, ncol=3)
    measured = "; ".join(notes) if notes else "no local co-runs yet"
    return fig, (
        "Left: slowdown (Eq 4, percent) of the first application while the second runs continuously on the "
        "same nodes and links, each job's time over the application's run alone in the same job (older runs: "
        f"over the idle cases' median); medians over jobs, n in the legend; {CLAIMS_INTERVAL}. LAMMPS (LJ "
        "melt, ranks spread over the nodes) and xt-stream (memory-bound, no network traffic, on the first "
        "node) stand in for the paper's six applications, whose 36 pairs (Table 1, Cab: one 18-node leaf "
        "switch) are the black open markers at the right, spread sideways by rank. On a 2-core host the "
        "co-runs also share cores, so slowdowns include CPU contention the paper's dedicated cores did not "
        f"have. Measured: {measured}. Right (Fig 12): each application's slowdown under each CompressionB "
        "configuration against that configuration's MODELLED rho (pooled idle probes, M/G/1); hatched: the "
        "paper's CompressionB rho range. The axes are kept on the user's series and the paper's; an example "
        f"beyond them is noted off scale. Series: {targets_note(targets)}. Paper: {citation}.")


# -- Figs 13, 14, 18: prediction errors ----------------------------------------------------------

def predictions(wide, target):
    """(errors DataFrame per predictor, summary per predictor, why-not) from local data on ``target``."""
    apps = app_names(wide)
    measured = pair_table(wide, target)
    slowdowns = compression_table(wide, target)
    configs = sorted({ld for by in slowdowns.values() for ld in by})
    training = {c: probe_samples(wide, target, c) for c in configs}
    training = {c: x for c, x in training.items() if x.size}
    impacts = {a: probe_samples(wide, target, f"app:{a}") for a in apps}
    idle = pooled_rho(wide, target, load_order(wide[wide["target"] == target]["load"]))[1]
    missing = []
    if len(training) < 2:
        missing.append(f"probe samples under 2 or more CompressionB configurations ({len(training)} have them)")
    if not apps or any(x.size == 0 for x in impacts.values()):
        missing.append("probe samples under every application")
    if idle.size == 0:
        missing.append("idle probe samples")
    if measured.isna().any().any() or measured.empty:
        missing.append("every pairwise co-run and its alone time")
    if any(set(training) - set(slowdowns.get(a, {})) for a in apps):
        missing.append("every application under every probed CompressionB configuration")
    if missing:
        return None, None, "missing " + ", ".join(missing)
    table = {a: {c: slowdowns[a][c] for c in training} for a in apps}
    errors, summaries = {}, {}
    for name in PREDICTORS:
        predicted = predict_slowdowns(name, impacts, training, table, idle_latencies=idle)
        err, summary = prediction_errors(predicted, measured)
        errors[name], summaries[name] = err, summary
    return errors, summaries, None


@figure("casas_prediction_error")
def casas_prediction_error(perf, systems):
    """Each predictor's errors over the local pairings, their mean with the claim's interval,
    beside the paper's queue-model mean error (Figs 13, 14, 18)."""
    from crosstalk.claims.operands import CONFIDENCE
    from crosstalk.models.stats import mean_interval
    paper, citation = read_paper_csv("casas_model_results.csv")
    quoted = paper.set_index("quantity")["value"]
    wide = cases(perf, systems)
    targets = ordered_targets(wide)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    notes, drawn = [], []
    for target in targets:
        errors, summaries, why = predictions(wide, target)
        if why:
            notes.append(f"{target}: no prediction ({why})")
            continue
        drawn.append((target, {name: errors[name].to_numpy(dtype=float).ravel() for name in PREDICTORS}))
        notes.append(f"{target}: " + ", ".join(
            f"{n} mean {s['mean']:.1f} / median {s['median']:.1f} / max {s['max']:.1f} pp (n={s['n']})"
            for n, s in summaries.items()))
    if drawn:
        k = len(drawn)
        for i, (target, by_name) in reversed(list(enumerate(drawn))):
            style = series(target, targets=[t for t, _ in drawn])
            gid = style.pop("gid")
            means = []
            for j, name in enumerate(PREDICTORS):
                x = by_name[name][np.isfinite(by_name[name])]
                tag(ax.scatter(np.full(x.size, j + _dodge(i, k, 0.2) + 0.06), x, s=10, color=style["color"],
                               alpha=0.5, zorder=style["zorder"], linewidths=0), gid)
                mean, low, high = mean_interval(x, CONFIDENCE) if x.size else (np.nan, None, None)
                exact = low is not None
                spread = (low, high) if exact else ((x.min(), x.max()) if x.size else (np.nan, np.nan))
                means.append({"median": mean, "low": spread[0], "high": spread[1], "n": x.size, "exact": exact})
            errorbars(ax, [j + _dodge(i, k, 0.2) for j in range(len(PREDICTORS))], pd.DataFrame(means), target,
                      f"{short(target)}: mean", targets=[t for t, _ in drawn], linestyle="none")
        paper_line(ax, [PREDICTORS.index("QueueModel") + _dodge(k, k + 1, 0.2)], [quoted["queue_model_mean_abs_error"]],
                   paper_label(f"{CAB}, queue model mean error {quoted['queue_model_mean_abs_error']:g} pp (Fig 18)"),
                   linestyle="none")
        tag(ax.axhline(10, color="black", ls=":", lw=1, label=paper_label(
            f"{CAB}: at least {quoted['queue_model_share_errors_below_10pct']:g} % of queue-model errors below "
            "10 pp (Fig 14)")), "paper")
        ax.set_xticks(range(len(PREDICTORS)), PREDICTORS, fontsize=8)
        ax.set_xlim(-0.5, len(PREDICTORS) - 0.5)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("predictor (the queue model's is the claim's)", fontsize=8)
        ax.set_ylabel("|measured - predicted| slowdown\n(percentage points; MODELLED predictions)", fontsize=8)
        ax.set_title("Prediction errors over all local pairings (Fig 14 style)", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
        legend_below(fig, ncol=2)
    else:
        no_data(ax, "predictions (see caption)")
        fig.tight_layout()
    return fig, (
        "Errors of the four predictors (§4-5; crosstalk.models.queueing) of each application's slowdown "
        "with each co-running application: the look-up tables choose the CompressionB configuration whose "
        "ImpactB latencies under it resemble those under the aggressor (mean; mean +- sd overlap; PDF "
        "overlap), the queue model the configuration with the nearest rho (MODELLED), and predict the "
        "victim's measured slowdown under that configuration. Small dots: the pairings; points with bars: "
        f"the mean error with the {CONFIDENCE:.0%} BCa bootstrap interval of the mean the queue-model claim "
        "is judged with (from 5 pairings; with fewer, dotted: the range), n in the legend. With two "
        "applications there are only four pairings and a handful of configurations, so these errors "
        "illustrate the method rather than reproduce Fig 14's statistics. "
        f"{'; '.join(notes) if notes else 'No local data yet.'} Paper: {citation}.")
