"""Network congestion, GPCNeT (Chunduri et al. SC19; spec: congestion).

Table 2 (canaries isolated and loaded), Fig 4/5 (impact of each congestor alone), Table 3 (victim
application CI). Local values are medians over every repeat and session of a case.
"""
import json

import numpy as np
import pandas as pd

from crosstalk.figures import SERIES, figure, in_job_ratio, no_data, ordered_targets, plt, read_paper_csv, with_target
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


@figure("gpcnet_fig4_5")
def gpcnet_fig4_5(perf, systems):
    """Congestion impact of each congestor alone (and all four), mean and both tail definitions."""
    paper, citation = read_paper_csv("chunduri2019_gpcnet_table2.csv")
    cases = samples(perf, systems, "CongestionCanary")
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    notes = []
    if cases.empty:
        for ax in axes:
            no_data(ax, "GPCNeT congestion")
    else:
        metrics = [f"ci_{t}_{d}" for t, _ in TESTS for d in ("avg", "p99_tool", "p99_paper")]
        med, counts = _medians(cases, ["target", "pport", "congestors"], metrics)
        med = med.merge(counts)
        med["order"] = med["congestors"].map(lambda c: CONGESTOR_ORDER.index(c) if c in CONGESTOR_ORDER else 99)
        med = med.sort_values(["target", "pport", "order"])
        labels = [f"{r.target}\nPPort {r.pport} {CONGESTOR_LABEL.get(r.congestors, r.congestors)} (n={r.n})"
                  for r in med.itertuples()]
        x = np.arange(len(med))
        for ax, (t, title) in zip(axes, TESTS):
            for i, (d, lab, col) in enumerate((("avg", "mean: loaded avg / isolated avg", "#4c6ef5"),
                                               ("p99_tool", "tail, tool: loaded 99% / isolated 99%", "#d9480f"),
                                               ("p99_paper", "tail, paper §5.2: loaded 99% / isolated avg",
                                                "#f59f00"))):
                col_name = f"ci_{t}_{d}"
                if col_name in med:
                    ax.bar(x - 0.27 + 0.27 * i, med[col_name], 0.27, color=col, label=lab)
            ax.axhline(1.0, color="black", lw=0.8)
            ax.set_yscale("log")
            ax.set_xticks(x, labels, fontsize=6, rotation=60, ha="right")
            ax.set_title(f"{title}: congestion impact", fontsize=10)
            ax.grid(axis="y", alpha=0.3)
        axes[0].legend(fontsize=7)
        for r in med.itertuples():
            notes.append(f"{r.target} PPort {r.pport} {r.congestors}: latency CI {r.ci_lat_avg:.2f}x mean, "
                         f"{r.ci_lat_p99_tool:.2f}x (tool) / {r.ci_lat_p99_paper:.2f}x (paper) tail")
    # The paper's all-congestor CIs (Fig 11 from Table 2) for scale, both definitions.
    quotes = []
    for r in paper.itertuples():
        if r.system in ("Crystal", "Osprey"):
            tool = table2_impacts(r._asdict(), "tool")
            pap = table2_impacts(r._asdict(), "paper")
            quotes.append(f"{r.system} {r.nodes}n PPort {r.pport}: lat {tool[('lat', 'avg')]:.1f}x mean, "
                          f"{tool[('lat', 'p99')]:.1f}x tool / {pap[('lat', 'p99')]:.1f}x paper tail")
    fig.text(0.01, 0.005, "Paper, all congestors (Table 2): " + "; ".join(quotes[:4]), fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig, ("Congestion impact (Eq 1-2, bandwidth inverted) of each congestor alone and of all four, as "
                 "Fig 4 (Crystal) and Fig 5 (Osprey) show per congestor: the mean CI, and the tail CI under both "
                 "labelled definitions (network_load_test's loaded 99% / isolated 99%, and the paper's §5.2 "
                 "loaded 99% / isolated average). The paper: P2P Incast hurts Osprey, not Crystal; Alltoall "
                 "modestly; RMA (Put) Incast most. Measured: " + ("; ".join(notes) or "none yet") +
                 f". Paper: {citation}.")


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
