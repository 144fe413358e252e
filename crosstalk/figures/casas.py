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
from crosstalk.figures import SERIES, figure, no_data, ordered_targets, plt, read_paper_csv, with_target
from crosstalk.figures.style import short
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

@figure("casas_probe_latency")
def casas_probe_latency(perf, systems):
    paper, citation = read_paper_csv("casas_model_results.csv")
    quoted = paper.set_index("quantity")["value"]
    wide = cases(perf, systems)
    probes = wide
    targets = ordered_targets(probes)
    fig, axes = plt.subplots(max(1, len(targets)), 2, figsize=(13, 5.4 * max(1, len(targets))), squeeze=False,
                             gridspec_kw={"width_ratios": [1.5, 1]})
    notes = []
    if not targets:
        no_data(axes[0][0], "active probing")
        no_data(axes[0][1], "active probing")
    for (ax_d, ax_r), target in zip(axes, targets):
        loads = load_order(probes[probes["target"] == target]["load"])
        rho = {(target, ld): v for ld, v in pooled_rho(wide, target, loads)[0].items()}
        cmap = plt.get_cmap("viridis", max(2, len(loads)))
        drew = False
        for i, load in enumerate(loads):
            x = probe_samples(wide, target, load)
            r = rho.get((target, load), float("nan"))
            label = f"{load} (rho={r:.3f}, modelled)"
            color = "black" if load == "idle" else cmap(i)
            if x.size:
                xs = np.sort(x)
                ax_d.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", label=label, color=color,
                          lw=1.6 if load == "idle" else 1.1)
                drew = True
            else:   # no kept samples: the summary quantiles
                part = probes[(probes["target"] == target) & (probes["load"] == load)]
                qs = [part["probe_median"].median(), part["probe_p99"].median()]
                ax_d.plot(qs, [0.5, 0.99], marker="o", ls=":", color=color, label=label + " [median, p99]")
                drew = True
        idle_runs = np.concatenate([probe_samples(wide, target, load, "idle_probe.out") for load in loads])
        if idle_runs.size:
            xs = np.sort(idle_runs)
            ax_d.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", color="gray", ls="--", lw=1,
                      label="idle fabric, probed in every job before its load")
        if drew:
            ax_d.set_xscale("log")
            ax_d.set_xlabel("ImpactB half round trip (us)")
            ax_d.set_ylabel("Cumulative fraction of probes")
            ax_d.set_title(f"{short(target)}: probe latency distribution by load", fontsize=9)
            ax_d.grid(alpha=0.3, which="both")
            ax_d.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
        values = [rho.get((target, load), float("nan")) for load in loads]
        ax_r.barh(range(len(loads)), values, color=["black" if ld == "idle" else cmap(i) for i, ld in enumerate(loads)])
        ax_r.set_yticks(range(len(loads)), loads, fontsize=7)
        ax_r.invert_yaxis()
        ax_r.axvspan(quoted["compressionb_util_min"] / 100, quoted["compressionb_util_max"] / 100, color="#f08c00",
                     alpha=0.15, label="paper: CompressionB range (Fig 11)")
        ax_r.set_xlim(min(0.0, np.nanmin(values) if np.isfinite(values).any() else 0.0), 1.0)
        ax_r.set_xlabel("rho (MODELLED, M/G/1; band: paper's CompressionB range)", fontsize=8)
        ax_r.set_title(f"{short(target)}: switch utilisation per load", fontsize=9)
        med = medians(wide, "probe_median")
        avg = medians(wide, "probe_avg")
        notes.append(f"{target}: " + ", ".join(
            f"{ld} median {med.get((target, ld), float('nan')):.0f} us / "
            f"mean {avg.get((target, ld), float('nan')):.0f} us"
            f" / rho {rho.get((target, ld), float('nan')):.3f}" for ld in loads))
    fig.tight_layout()
    measured = "; ".join(notes) if notes else "no local probe runs yet"
    return fig, (
        "ImpactB (1 KiB ping-pong pairs across nodes) on an idle fabric, under CompressionB configurations "
        "(compressionb:P-M-B: P partners, M messages of 40 KiB per partner and round, bubble B in us) and "
        "under each application running continuously. Left: distribution of half round trips (all kept "
        "samples pooled). Right: switch utilisation rho, MODELLED with the M/G/1 Pollaczek-Khinchine "
        "formula (Eq 1-3) from the mean latency under the load and the minimum and variance of all "
        "idle-fabric probes of the target pooled (every job probes the idle fabric before its load "
        f"starts). Measured: {measured}. Paper (Cab, QDR IB): idle mean probe latency "
        f"{quoted['idle_switch_mean_probe_latency']:g} us; CompressionB configurations span rho "
        f"{quoted['compressionb_util_min']:g}-{quoted['compressionb_util_max']:g} % ({citation}).")


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


def _heatmap(ax, table, title):
    data = table.astype(float).to_numpy()
    ax.imshow(np.nan_to_num(data, nan=0.0), cmap="Oranges", vmin=0, vmax=max(10.0, np.nanmax(np.abs(data))
                                                                            if np.isfinite(data).any() else 10.0))
    ax.set_xticks(range(table.shape[1]), table.columns, fontsize=8, rotation=30)
    ax.set_yticks(range(table.shape[0]), table.index, fontsize=8)
    for i in range(table.shape[0]):
        for j in range(table.shape[1]):
            v = data[i, j]
            ax.text(j, i, "-" if v != v else f"{v:+.0f}", ha="center", va="center", fontsize=9)
    ax.set_xlabel("co-running application")
    ax.set_ylabel("slowed application")
    ax.set_title(title, fontsize=9)


@figure("casas_slowdown_table")
def casas_slowdown_table(perf, systems):
    paper, citation = read_paper_csv("casas_table1_pair_slowdowns.csv")
    paper = paper.set_index("victim")
    wide = cases(perf, systems)
    targets = ordered_targets(wide)
    n = max(1, len(targets))
    fig = plt.figure(figsize=(4.2 * (n + 1) + 1, 8.5))
    grid = fig.add_gridspec(2, n + 1)
    notes = []
    for k in range(n):
        ax = fig.add_subplot(grid[0, k])
        if not targets:
            no_data(ax, "application co-runs")
            continue
        table = pair_table(wide, targets[k])
        _heatmap(ax, table, f"Measured here: {targets[k]}\nslowdown % (median time with / alone)")
        notes.append(f"{targets[k]}: " + ", ".join(f"{v} with {a} {table.loc[v, a]:+.1f} %"
                                                  for v in table.index for a in table.columns
                                                  if table.loc[v, a] == table.loc[v, a]))
    _heatmap(fig.add_subplot(grid[0, n]), paper, "Casas & Bronevetsky Table 1 (Cab)\nslowdown %")
    ax12 = fig.add_subplot(grid[1, :])
    drew = False
    for target in targets:
        rho = {(target, ld): v for ld, v in
               pooled_rho(wide, target, load_order(wide[wide["target"] == target]["load"]))[0].items()}
        for app, by_load in compression_table(wide, target).items():
            pts = sorted((rho.get((target, load), float("nan")), s) for load, s in by_load.items())
            pts = [p for p in pts if p[0] == p[0]]
            if pts:
                ax12.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{app} ({target})")
                drew = True
    if drew:
        ax12.axhline(0, color="black", lw=0.8)
        ax12.set_xlabel("rho of the CompressionB configuration (MODELLED, M/G/1)")
        ax12.set_ylabel("slowdown under that configuration (%)")
        ax12.set_title("Fig 12 style: application slowdown against CompressionB switch utilisation", fontsize=10)
        ax12.grid(alpha=0.3)
        ax12.legend(fontsize=8)
    else:
        no_data(ax12, "applications under CompressionB with probed rho")
    fig.tight_layout()
    measured = "; ".join(notes) if notes else "no local co-runs yet"
    return fig, (
        "Top: slowdown (Eq 4, percent) of the row application while the column application runs "
        "continuously on the same nodes and links, from median times over repeats; LAMMPS (LJ melt, ranks "
        "spread over the nodes) and xt-stream (memory-bound, no network traffic, on the first node) stand "
        "in for the paper's six applications. On this 2-core host the co-runs also share cores, so "
        f"slowdowns include CPU contention the paper's dedicated cores did not have. Measured: {measured}. "
        f"Right: {citation}. Bottom (Fig 12): each application's slowdown under each CompressionB "
        "configuration against that configuration's modelled rho.")


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
    paper, citation = read_paper_csv("casas_model_results.csv")
    quoted = paper.set_index("quantity")["value"]
    wide = cases(perf, systems)
    targets = ordered_targets(wide)
    fig, ax = plt.subplots(figsize=(10, 5))
    notes, positions, data, labels, groups = [], [], [], [], []
    for k, target in enumerate(targets):
        errors, summaries, why = predictions(wide, target)
        if why:
            notes.append(f"{target}: no prediction ({why})")
            continue
        for j, name in enumerate(PREDICTORS):
            positions.append(k * (len(PREDICTORS) + 1) + j)
            data.append(errors[name].to_numpy().ravel())
            labels.append(name)
        groups.append((k * (len(PREDICTORS) + 1) + (len(PREDICTORS) - 1) / 2, target))
        notes.append(f"{target}: " + ", ".join(
            f"{n} mean {s['mean']:.1f} / median {s['median']:.1f} / max {s['max']:.1f} pp (n={s['n']})"
            for n, s in summaries.items()))
    if data:
        ax.boxplot(data, positions=positions, whis=(0, 100), widths=0.6)
        for pos, values in zip(positions, data):
            ax.scatter(np.full(values.size, pos), values, s=12, color="#d9480f", zorder=3)
        ax.set_xticks(positions, labels, fontsize=7)
        for middle, target in groups:       # one label per target under its four boxes
            ax.text(middle, -0.09, str(target).replace(":", "\n", 1), transform=ax.get_xaxis_transform(),
                    ha="center", va="top", fontsize=7)
        ax.axhline(quoted["queue_model_mean_abs_error"], color="#1c7ed6", ls="--", lw=1,
                   label=f"paper: queue model mean error {quoted['queue_model_mean_abs_error']:g} pp (Fig 18)")
        ax.axhline(10, color="gray", ls=":", lw=1, label="10 pp (paper: >= 75 % of queue-model errors below)")
        ax.set_ylabel("|measured - predicted| slowdown\n(percentage points; MODELLED predictions)")
        ax.set_title("Prediction errors over all local pairings (Fig 14 style)", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    else:
        no_data(ax, "predictions (see caption)")
    fig.tight_layout()
    return fig, (
        "Errors of the four predictors (§4-5; crosstalk.models.queueing) of each application's slowdown "
        "with each co-running application: the look-up tables choose the CompressionB configuration whose "
        "ImpactB latencies under it resemble those under the aggressor (mean; mean +- sd overlap; PDF "
        "overlap), the queue model the configuration with the nearest rho (MODELLED), and predict the "
        "victim's measured slowdown under that configuration. Boxes: quartiles, whiskers: range, dots: "
        "pairings. With two applications there are only four pairings and a handful of configurations, so "
        "these errors illustrate the method rather than reproduce Fig 14's statistics. "
        f"{'; '.join(notes) if notes else 'No local data yet.'} Paper: {citation}.")
