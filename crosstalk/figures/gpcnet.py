"""Network congestion, GPCNeT (Chunduri et al. SC19; spec: congestion).

Table 2 (canaries isolated and loaded), Fig 4/5 (impact of each congestor alone), Table 3 (victim
application CI). Local values are medians over every repeat and session of a case.
"""
import json

import numpy as np
import pandas as pd

from crosstalk.figures import (
    SERIES,
    figure,
    in_job_ratio,
    ordered_targets,
    plt,
    read_paper_csv,
    summarise,
    with_target,
)
from crosstalk.figures.style import errorbars, legend_below, paper_label, paper_line, short, targets_note
from crosstalk.models.congestion import CANARIES, app_impact, table2_impacts
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
    wide = df.pivot_table(index=SERIES + ["case", "run_id", "session", "time", "params"],
                          columns="metric", values="value", aggfunc="first").reset_index()
    params = pd.DataFrame(list(wide["params"].map(json.loads)), index=wide.index)
    return with_target(pd.concat([wide, params], axis=1))


def _medians(cases, by, metrics):
    metrics = [m for m in metrics if m in cases]
    return cases.groupby(by)[metrics].median().reset_index(), cases.groupby(by).size().rename("n").reset_index()


@figure("gpcnet_table2")
def gpcnet_table2(perf, systems):
    """Canary avg and p99, isolated and loaded, per test: local cases beside GPCNeT Table 2."""
    paper, citation = read_paper_csv("chunduri2019_gpcnet_table2.csv")
    cases = samples(perf, systems, "CongestionCanary")
    fig, axes = plt.subplots(1, 3, figsize=(16, 7.5))
    names = [f"{r.system} {r.nodes}n PPort {r.pport}" for r in paper.itertuples()]
    table = {t: {k: list(paper[f"{k}_{'ar' if t == 'allreduce' else t}"])
                 for k in ("iso_avg", "load_avg", "iso_p99", "load_p99")} for t, _ in TESTS}
    local = []
    if not cases.empty:
        metrics = [f"{t}_{ph}_{s}" for t, _ in TESTS for ph in ("isolated", "congested") for s in ("avg", "p99")]
        med, counts = _medians(cases, ["target", "pport", "congestors"], metrics)
        med = med.merge(counts)
        for r in med.itertuples():
            names.append(f"{r.target} PPort {r.pport} {CONGESTOR_LABEL.get(r.congestors, r.congestors)} (n={r.n})")
            local.append(len(names) - 1)
            for t, _ in TESTS:
                for k, (ph, s) in {"iso_avg": ("isolated", "avg"), "load_avg": ("congested", "avg"),
                                   "iso_p99": ("isolated", "p99"), "load_p99": ("congested", "p99")}.items():
                    table[t][k].append(getattr(r, f"{t}_{ph}_{s}", np.nan))
    y = np.arange(len(names))
    colors = {"iso_avg": "#4c6ef5", "load_avg": "#d9480f", "iso_p99": "#a5b4fc", "load_p99": "#ffa94d"}
    labels = {"iso_avg": "isolated avg", "load_avg": "loaded avg", "iso_p99": "isolated 99%",
              "load_p99": "loaded 99%"}
    for ax, (t, title) in zip(axes, TESTS):
        for i, k in enumerate(("iso_avg", "load_avg", "iso_p99", "load_p99")):
            ax.barh(y - 0.3 + 0.2 * i, table[t][k], 0.2, color=colors[k], label=labels[k])
        ax.set_xscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_yticks(y, names if ax is axes[0] else [""] * len(names), fontsize=7)
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
        for i in local:
            ax.axhspan(i - 0.45, i + 0.45, color="#fff3bf", zorder=0)
    axes[0].legend(fontsize=7, loc="lower left")
    if cases.empty:
        axes[1].text(0.5, 0.02, "no local congestion runs yet", transform=axes[1].transAxes, ha="center")
    fig.suptitle("GPCNeT Table 2 (paper systems) and measured here (shaded; median over repeats)", fontsize=11)
    fig.tight_layout()
    raw = perf[(perf.experiment == EXPERIMENT) & perf.test.str.startswith("CongestionCanary")]
    raw = with_target(raw) if not raw.empty else raw
    notes = "; ".join(f"{t}: {layout_note(raw[raw.target == t])}" for t in ordered_targets(cases))
    return fig, ("Canary tests of xt-congestion (random-ring latency 8 B, random-ring BW+Sync 128 KiB, "
                 "Allreduce 8 B) isolated and with the congestors running: average and 99th percentile "
                 "(bandwidth 99% = the slow tail). Local rows are per congestor set (the paper's rows "
                 f"are all four at once). Layouts: {notes or 'none yet'}. Paper: {citation}.")


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


def victim_impact(part):
    """(CI, time isolated, time congested, samples) of the victim's cases: each round's CI against
    its run alone in the same job (figures.in_job_ratio); older runs: the off case's median."""
    incast = part[part["victim_load"] == "incast"]
    off = part[part["victim_load"] == "off"]["victim_time_s"]
    return in_job_ratio(incast, "victim_time_s", "victim_time_s_alone", off,
                        ratio=lambda congested, isolated: app_impact(isolated, congested))


@figure("gpcnet_table3")
def gpcnet_table3(perf, systems):
    """Victim application CI (LAMMPS under incast) beside the paper's Lulesh CIs."""
    paper, citation = read_paper_csv("chunduri2019_gpcnet_table3_lulesh.csv")
    names = [f"Lulesh on {s}" for s in paper["system"]]
    values = list(paper["ci"])
    colors = ["#9aa5b1"] * len(paper)
    notes = []
    cases = samples(perf, systems, "CongestionVictim")
    if not cases.empty and "victim_time_s" in cases:
        for target, part in cases.groupby("target"):
            ci, iso, con, n = victim_impact(part)
            if ci == ci:
                names.append(f"LAMMPS on {target}")
                values.append(ci)
                colors.append("#d9480f")
                notes.append(f"{target}: {iso:.2f} s -> {con:.2f} s (n={n})")
    fig, ax = plt.subplots(figsize=(9, 5.5))     # room for the rotated per-target labels
    ax.bar(names, values, color=colors)
    ax.axhline(1.0, color="black", lw=0.8)
    for i, v in enumerate(values):
        ax.annotate(f"{v:.2f}", (i, v), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("Application CI = t_congested / t_isolated")
    ax.set_title("GPCNeT Table 3 (grey, Lulesh, P2P ingress congestion) and measured here (orange)", fontsize=10)
    ax.tick_params(axis="x", labelsize=8, rotation=30)
    plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")   # long labels end under their bar
    fig.tight_layout()
    return fig, ("Victim application congestion impact: LAMMPS LJ melt on the first nodes, isolated and while "
                 "every other node streams unpaced 4 KiB MPI_Put into its first node (xt-inject, GPCNeT's Put "
                 "Incast pattern), on the same links in both conditions (shaped where the partition can "
                 "shape links; one host: no network); CI = t_congested / t_isolated, "
                 "each round's against its run alone in the same job (median). Measured: "
                 + ("; ".join(notes) or "no local victim runs yet") +
                 f". Paper: {citation}.")
