"""Network congestion, GPCNeT (Chunduri et al. SC19; spec: congestion).

Table 2 (canaries isolated and loaded), Fig 4/5 (impact of each congestor alone), Table 3 (victim
application CI). Local values are medians over every repeat and session of a case.
"""
import json

import numpy as np
import pandas as pd

from crosstalk.figures import (
    CLAIMS_INTERVAL,
    SERIES,
    figure,
    ordered_targets,
    per_job,
    plt,
    ratio_with_interval,
    read_paper_csv,
    summarise,
    with_target,
)
from crosstalk.figures.style import (
    errorbars,
    legend_below,
    paper_label,
    paper_line,
    series,
    short,
    tag,
    targets_note,
)
from crosstalk.models.congestion import CANARIES, table2_impacts
from crosstalk.models.congestion_layout import CONGESTORS

EXPERIMENT = "congestion"
TESTS = [(prefix, canary.label) for prefix, canary in CANARIES.items()]
CONGESTOR_ORDER = [*CONGESTORS, "all"]
CONGESTOR_LABEL = {"a2a": "Alltoall", "p2p_incast": "P2P Incast", "rma_incast": "Put Incast",
                   "rma_bcast": "Get Bcast", "all": "all four"}


def layout_note(rows):
    """How a target's GPCNeT nodes were laid out, from what its runs were (reframe-tests/congestion.py)."""
    topology = next((t for t in rows["topology"].dropna()), None) if "topology" in rows else None
    if topology == "star":
        return "endpoints sharing shaped host links"
    if topology:
        return f"one endpoint per node, canaries and congestors sharing switch links ({topology})"
    hosts = {n for nodes in rows["nodes"].dropna() for n in str(nodes).split(",") if n}
    return "one host, no network: CPU and shared memory only" if len(hosts) <= 1 else "one endpoint per node"


def samples(perf, systems, test_prefix):
    """One row per measured sample (case x session x completion time: --repeat keeps the case name),
    parameters and metrics as columns."""
    df = perf[(perf.experiment == EXPERIMENT) & perf.test.str.startswith(test_prefix)]
    if systems:
        df = df[df.system.isin(systems)]
    if df.empty:
        return df
    # a job measured in rounds has a row per round: each round is a sample (as the claims read it)
    rounds = ["round"] if "round" in df else []
    wide = df.pivot_table(index=SERIES + ["case", "run_id", "session", "time", *rounds, "params"],
                          columns="metric", values="value", aggfunc="first").reset_index()
    params = pd.DataFrame(list(wide["params"].map(json.loads)), index=wide.index)
    return with_target(pd.concat([wide, params], axis=1))


#: Table 2's statistics: a row of panels each (the canary's prefix in the paper's columns: ar).
TABLE2_STATS = (("avg", "average"), ("p99", "99th percentile"))
#: What marks a condition in Table 2's panels (the colour is the series').
ISOLATED, LOADED = {"markerfacecolor": "white"}, {}


def _paper_key(test):
    return "ar" if test == "allreduce" else test


def _condition_keys():
    """Legend entries saying which marker is which condition."""
    from matplotlib.lines import Line2D
    return [(Line2D([], [], color="#495057", marker="o", linestyle="none", **ISOLATED), "open: isolated"),
            (Line2D([], [], color="#495057", marker="o", linestyle="none"), "filled: loaded (congestors running)")]


def _dumbbells(ax, ys, isolated, loaded, **style):
    """A thin line from each row's isolated value to its loaded one: on the log axis its length is
    the congestion impact."""
    xs, rows = [], []
    for y, a, b in zip(ys, isolated, loaded):
        xs += [a, b, np.nan]
        rows += [y, y, np.nan]
    (line,) = ax.plot(xs, rows, lw=1, **style)
    return line


@figure("gpcnet_table2")
def gpcnet_table2(perf, systems):
    """Canary average and 99th percentile, isolated and loaded: the paper's Table 2 systems and the
    local cases on the same axes, a column per canary test, a row per statistic."""
    paper, citation = read_paper_csv("chunduri2019_gpcnet_table2.csv")
    cases = samples(perf, systems, "CongestionCanary")
    targets = ordered_targets(cases) if not cases.empty else []
    local = sorted({(t, int(pp), c) for t, pp, c in cases[["target", "pport", "congestors"]].itertuples(index=False)},
                   key=lambda r: (targets.index(r[0]), r[1], r[2])) if targets else []
    names = [f"{r.system} {r.nodes}n P{r.pport}" for r in paper.itertuples()]
    names += [f"{short(t, 24)} P{pport} {CONGESTOR_LABEL.get(c, c)}" for t, pport, c in local]
    rows = dict(zip(local, range(len(paper), len(names))))
    fig, axes = plt.subplots(len(TABLE2_STATS), len(TESTS), figsize=(13, 2.2 + 0.3 * len(names) * len(TABLE2_STATS)),
                             squeeze=False, sharey=True)
    notes = []
    for ax_row, (stat, stat_name) in zip(axes, TABLE2_STATS):
        for ax, (test, title) in zip(ax_row, TESTS):
            key = _paper_key(test)
            ys = range(len(paper))
            tag(_dumbbells(ax, ys, paper[f"iso_{stat}_{key}"], paper[f"load_{stat}_{key}"], color="black"), "paper")
            paper_line(ax, paper[f"iso_{stat}_{key}"], ys, None, linestyle="none")
            paper_line(ax, paper[f"load_{stat}_{key}"], ys, paper_label(f"{citation.split(',')[0]} Table 2 "
                                                                       "(machines on the axis)"),
                       linestyle="none", markerfacecolor="black")
            for target in reversed(targets):
                part = cases[cases.target == target]
                drawn = {}
                for phase, condition in (("isolated", ISOLATED), ("congested", LOADED)):
                    metric = f"{test}_{phase}_{stat}"
                    if metric not in part:
                        continue
                    stats = summarise(part.rename(columns={metric: "value"}).dropna(subset=["value"]),
                                      ["pport", "congestors"], interval="claims")
                    at = [rows[(target, int(pp), c)] for pp, c in zip(stats["pport"], stats["congestors"])]
                    errorbars(ax, at, stats, target, short(target) if phase == "congested" else None,
                              targets=targets, horizontal=True, linestyle="none", **condition)
                    drawn[phase] = dict(zip(at, stats["median"]))
                if len(drawn) == 2:
                    at = sorted(set(drawn["isolated"]) & set(drawn["congested"]))
                    style = series(target, targets=targets)
                    tag(_dumbbells(ax, at, [drawn["isolated"][y] for y in at], [drawn["congested"][y] for y in at],
                                   color=style["color"], zorder=style["zorder"]), style["gid"])
            if local:
                ax.axhline(len(paper) - 0.5, color="#868e96", lw=0.6)
            ax.set_xscale("log")
            ax.set_xlabel(f"{title}, {stat_name}", fontsize=8)
            ax.set_title(f"{title.split(' (')[0]}: {stat_name}", fontsize=9)
            ax.grid(axis="x", alpha=0.3, which="both")
            ax.tick_params(labelsize=7)
    axes[0][0].set_yticks(range(len(names)), names)
    axes[0][0].set_ylim(len(names) - 0.5, -0.5)
    if not targets:
        axes[0][1].set_title(axes[0][1].get_title() + "\n(no local congestion runs yet)", fontsize=9)
    else:
        for (target, pport, congestors), r in cases.groupby(["target", "pport", "congestors"])[
                [m for m in cases if m.startswith("ci_") and m.endswith("_avg")]].median().iterrows():
            notes.append(f"{target} PPort {pport} {congestors}: mean CI " + ", ".join(
                f"{m[3:-4]} {v:.2f}" for m, v in r.items() if v == v))
    legend_below(fig, ncol=3, keys=_condition_keys())
    raw = perf[(perf.experiment == EXPERIMENT) & perf.test.str.startswith("CongestionCanary")]
    raw = with_target(raw) if not raw.empty else raw
    layouts = "; ".join(f"{t}: {layout_note(raw[raw.target == t])}" for t in targets)
    return fig, ("Canary tests of xt-congestion (random-ring latency 8 B, random-ring BW+Sync 128 KiB, "
                 "Allreduce 8 B) isolated (open) and with the congestors running (filled), joined by a line: on "
                 "the log axis its length is the congestion impact, the quantity the claims judge (gpcnet_fig4_5 "
                 "draws it per congestor). Top row: the average, bottom: the 99th percentile (for bandwidth the "
                 "slow 1 %). Black: the paper's Table 2, a row per system, node count and processes per port "
                 "(P: PPort), all four congestors at once; coloured: the local cases, a row per congestor set "
                 "(the paper's machines have 64 to 5575 nodes, ours a few: compare the lengths, not the "
                 f"positions). Local points: medians over sessions and rounds, n in the legend; {CLAIMS_INTERVAL}. "
                 f"Measured: {'; '.join(notes) or 'none yet'}. Layouts: {layouts or 'none yet'}. "
                 f"Series: {targets_note(targets)}. Paper: {citation}.")


#: Congestion impact definitions of Fig 4/5: (metric suffix, the paper-row statistic and definition,
#: axis label).
CI_DEFINITIONS = (("avg", ("avg", "tool"), "mean CI\n(loaded / isolated avg)"),
                  ("p99_tool", ("p99", "tool"), "tail CI, tool\n(loaded / isolated 99%)"),
                  ("p99_paper", ("p99", "paper"), "tail CI, paper §5.2\n(loaded 99% / isolated avg)"))
#: Table 2 rows drawn on the axes: each system's largest run at one process per port (its
#: all-congestor CIs, at "all four").
PAPER_ROWS = ("Crystal", "Osprey")


def _paper_table2_rows(paper):
    rows = []
    for system in PAPER_ROWS:
        part = paper[(paper.system == system) & (paper.pport == 1)]
        if not part.empty:
            row = part.sort_values("nodes").iloc[-1]
            rows.append((f"{system} {int(row.nodes)}n PPort 1", {d: table2_impacts(row.to_dict(), d)
                                                               for d in ("tool", "paper")}))
    return rows


@figure("gpcnet_fig4_5")
def gpcnet_fig4_5(perf, systems):
    """Congestion impact of each congestor alone (and all four): a row per CI definition, a column
    per canary test, the paper's all-congestor CIs (Table 2) on the same axes."""
    paper, citation = read_paper_csv("chunduri2019_gpcnet_table2.csv")
    cases = samples(perf, systems, "CongestionCanary")
    fig, axes = plt.subplots(len(CI_DEFINITIONS), len(TESTS), figsize=(12, 8.5), squeeze=False)
    notes = []
    found = set(cases["congestors"]) if not cases.empty else set()
    order = [c for c in CONGESTOR_ORDER if c in found or c == "all"] + sorted(found - set(CONGESTOR_ORDER))
    targets = ordered_targets(cases) if not cases.empty else []
    paper_rows = _paper_table2_rows(paper)
    for row, (suffix, (stat, definition), ylabel) in zip(axes, CI_DEFINITIONS):
        for ax, (t, title) in zip(row, TESTS):
            metric = f"ci_{t}_{suffix}"
            for target in reversed(targets):
                part = cases[cases.target == target]
                for pport, sub in part.groupby("pport"):
                    if metric not in sub:
                        continue
                    stats = summarise(sub.rename(columns={metric: "value"}).dropna(subset=["value"]), ["congestors"])
                    xs = [order.index(c) for c in stats["congestors"]]
                    errorbars(ax, xs, stats, target, f"{short(target)} PPort {pport}", targets=targets,
                              linestyle="none")
            key = "ar" if t == "allreduce" else t
            for k, (name, impacts) in enumerate(paper_rows):
                paper_line(ax, [order.index("all")], [impacts[definition][(key, stat)]], paper_label(name),
                           marker="os"[k % 2], linestyle="none")
            ax.axhline(1.0, color="black", lw=0.8)
            ax.set_yscale("log")
            ax.set_xticks(range(len(order)), [CONGESTOR_LABEL.get(c, c) for c in order], fontsize=7)
            ax.set_xlim(-0.5, len(order) - 0.5)
            ax.grid(axis="y", alpha=0.3)
            ax.tick_params(axis="y", labelsize=7)
            if suffix == "avg":
                ax.set_title(f"{title}", fontsize=9)
            if t == TESTS[0][0]:
                ax.set_ylabel(ylabel + " (ratio)", fontsize=8)
    if cases.empty:
        axes[0][1].text(0.5, 0.9, "no local congestion runs yet", ha="center", transform=axes[0][1].transAxes)
    else:
        med = cases.groupby(["target", "pport", "congestors"])[[c for c in cases if c.startswith("ci_lat")]].median()
        for (target, pport, congestors), r in med.iterrows():
            notes.append(f"{target} PPort {pport} {congestors}: latency CI {r.get('ci_lat_avg', float('nan')):.2f}x "
                         f"mean, {r.get('ci_lat_p99_tool', float('nan')):.2f}x (tool) / "
                         f"{r.get('ci_lat_p99_paper', float('nan')):.2f}x (paper) tail")
    legend_below(fig, ncol=3)
    return fig, ("Congestion impact (Eq 1-2, bandwidth inverted) of each congestor alone and of all four, as "
                 "Fig 4 (Crystal) and Fig 5 (Osprey) show per congestor: a row per definition (the mean CI; the "
                 "tail CI as network_load_test computes it, loaded 99% / isolated 99%; and as the paper's §5.2 "
                 "defines it, loaded 99% / isolated average), a column per canary test; points: medians over "
                 "repeats, bars min-max, n in the legend. Black open markers: the paper's all-congestor CIs "
                 "computed from Table 2 (Crystal and Osprey, each system's largest run at one process per port), "
                 "at 'all four'. The paper: P2P Incast hurts Osprey, not Crystal; Alltoall modestly; RMA (Put) "
                 "Incast most. Measured: " + ("; ".join(notes) or "none yet") +
                 f". Series: {targets_note(targets)}. Paper: {citation}.")


@figure("gpcnet_table3")
def gpcnet_table3(perf, systems):
    """Victim application CI (LAMMPS under incast) beside the paper's Lulesh CIs, a row each."""
    paper, citation = read_paper_csv("chunduri2019_gpcnet_table3_lulesh.csv")
    cases = samples(perf, systems, "CongestionVictim")
    impacts = {}
    if not cases.empty and "victim_time_s" in cases:
        for target, part in cases.groupby("target"):
            impact = victim_impact(part)
            if impact["median"] == impact["median"]:
                impacts[target] = impact
    targets = [t for t in ordered_targets(cases) if t in impacts] if impacts else []
    names = [f"Lulesh, {s}" for s in paper["system"]] + [f"LAMMPS, {short(t)}" for t in targets]
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * len(names)))
    paper_line(ax, paper["ci"], range(len(paper)), paper_label(f"{citation.split(',')[0]} Table 3, Lulesh "
                                                               "(machines on the axis)"), linestyle="none")
    for k, target in reversed(list(enumerate(targets))):
        errorbars(ax, [len(paper) + k], pd.DataFrame([impacts[target]]), target, short(target), targets=targets,
                  horizontal=True, linestyle="none")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    if targets:
        ax.axhline(len(paper) - 0.5, color="#868e96", lw=0.6)
    else:
        ax.text(0.98, 0.05, "no local victim runs yet", transform=ax.transAxes, ha="right", fontsize=8)
    ax.set_xlabel("application CI = t_congested / t_isolated (ratio; 1: no impact)", fontsize=9)
    ax.set_title("Victim application under incast congestion", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    legend_below(fig, ncol=2)
    notes = [f"{t}: CI {v['median']:.2f} ({v['low']:.2f} to {v['high']:.2f}"
             f"{'' if v['exact'] else ', range'}; {'rounds paired in their jobs' if v['paired'] else 'separate jobs'},"
             f" n={v['n']})" for t, v in impacts.items()]
    return fig, ("Victim application congestion impact: LAMMPS LJ melt on the first nodes, isolated and while "
                 "every other node streams unpaced 4 KiB MPI_Put into its first node (xt-inject, GPCNeT's Put "
                 "Incast pattern), on the same links in both conditions (shaped where the partition can "
                 "shape links; one host: no network); CI = t_congested / t_isolated, the median of each round's "
                 "against its run alone in the same job (older runs: the quotient of the medians of separate jobs); "
                 f"{CLAIMS_INTERVAL}; n in the legend. Black open markers: the paper's Lulesh on 32 nodes with "
                 "point-to-point ingress congestion on the remaining nodes. Measured: "
                 + ("; ".join(notes) or "no local victim runs yet") +
                 f". Series: {targets_note(targets)}. Paper: {citation}.")


def victim_impact(part):
    """The victim's CI with the claims' interval (figures.ratio_with_interval): each round's time
    under the incast over its run alone in the same job; older runs: the off case's jobs."""
    incast = part[part["victim_load"] == "incast"]
    off = part[part["victim_load"] == "off"]
    return ratio_with_interval(incast, "victim_time_s", "victim_time_s_alone", per_job(off, "victim_time_s"))
