"""Core asymmetry and rank-to-core mapping, Narayanaswamy 2008 Ch. 3 (spec: core-mapping)."""
from crosstalk.figures import experiment_cases, figure, no_data, ordered_targets, plt, read_paper_csv

CAVEAT = ("On the virtual cluster every node shares the same host cores, so no per-core direction "
          "is expected there; on real nodes the core taking the NIC's interrupts is the one to watch.")


@figure("narayanaswamy_fig3_1")
def narayanaswamy_fig3_1(perf, systems):
    """Bandwidth with both ranks pinned to core c, beside the paper's Intel cluster values."""
    paper, citation = read_paper_csv("narayanaswamy2008_fig3_1_bandwidth_per_core.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(11, 4.5))
    cases = experiment_cases(perf, "core-mapping", systems)
    notes = []
    if cases.empty or "bandwidth" not in cases or "core" not in cases:
        no_data(ax_local, "per-core bandwidth")
    else:
        cases = cases.dropna(subset=["bandwidth", "core"])
        targets = ordered_targets(cases)
        width = 0.8 / max(1, len(targets))
        for i, (target, part) in enumerate(cases.groupby("target")):
            g = part.groupby(part["core"].astype(int))["bandwidth"]
            med, low, high = g.median(), g.min(), g.max()
            xs = [c + (i - (len(targets) - 1) / 2) * width for c in med.index]
            ax_local.bar(xs, med.values, width, yerr=[med - low, high - med], capsize=3, label=target)
            notes += [f"{target} core {c}: {v:.3f} Gbit/s (n={g.count()[c]})" for c, v in med.items()]
        ax_local.set_xlabel("core of both ranks")
        ax_local.set_ylabel("bandwidth (Gbit/s, median over repeats; bars: range)")
        ax_local.set_xticks(sorted(cases["core"].astype(int).unique()))
        ax_local.legend(fontsize=8)
        ax_local.set_title("Measured here (ping-pong, 1 message in flight)", fontsize=9)
    intel = paper[paper["cluster"] == "Intel"]
    ax_paper.bar(intel["core"], intel["bandwidth_gbps"], color="#9aa5b1")
    ax_paper.set_xlabel("core of both ranks")
    ax_paper.set_ylabel("MPI bandwidth (Gbit/s)")
    ax_paper.set_xticks(list(intel["core"]))
    ax_paper.set_title("Narayanaswamy 2008 Fig 3.1(a), Intel (values quoted in the text)", fontsize=9)
    fig.tight_layout()
    measured = "; ".join(notes) if notes else "no local runs yet"
    return fig, (f"Bandwidth of a two-rank exchange across two nodes with both ranks pinned (taskset) to "
                 f"the same core number. Measured: {measured}. {CAVEAT} Right: {citation}.")


@figure("narayanaswamy_table3_2")
def narayanaswamy_table3_2(perf, systems):
    """LAMMPS time and communication time per mapping, beside the paper's mapping table."""
    paper, citation = read_paper_csv("narayanaswamy2008_table3_2_lammps_mappings.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.3, 1]})
    cases = experiment_cases(perf, "core-mapping", systems)
    notes = []
    if cases.empty or "time_s" not in cases or "mapping" not in cases:
        no_data(ax_local, "LAMMPS mappings")
    else:
        cases = cases.dropna(subset=["time_s", "mapping"])
        mappings = sorted(cases["mapping"].astype(str).unique())
        targets = ordered_targets(cases)
        width = 0.8 / max(1, len(targets))
        for i, (target, part) in enumerate(cases.groupby("target")):
            med = part.groupby("mapping")[["time_s", "comm_s"]].median().reindex(mappings)
            xs = [j + (i - (len(targets) - 1) / 2) * width for j in range(len(mappings))]
            ax_local.bar(xs, med["time_s"], width, color="#adb5bd", edgecolor="black",
                         label=f"{target}: loop time" if i == 0 else None)
            ax_local.bar(xs, med["comm_s"], width * 0.6, label=f"{target}: communication")
            notes += [f"{target} {m}: {r.time_s:.2f} s (comm {r.comm_s:.2f} s)" for m, r in med.iterrows()
                      if r.time_s == r.time_s]
        ax_local.set_xticks(range(len(mappings)), mappings, fontsize=8)
        ax_local.set_ylabel("seconds (median over repeats)")
        ax_local.legend(fontsize=7)
        ax_local.set_title("LAMMPS here: placement x core order", fontsize=9)
    grid = paper.pivot_table(index="mapping", columns=["machine", "core"], values="rank").sort_index()
    ax_paper.axis("off")
    table = ax_paper.table(cellText=grid.values.astype(int).astype(str),
                           rowLabels=list(grid.index),
                           colLabels=[f"M{m} c{c}" for m, c in grid.columns], loc="center")
    table.set_fontsize(8)
    ax_paper.set_title("Narayanaswamy 2008 Table 3.2: rank on each (machine, core)\nFig 3.11: A' and B' "
                       "> 2x better communication than A and B", fontsize=8)
    fig.tight_layout()
    measured = "; ".join(notes) if notes else "no local runs yet"
    return fig, (f"LAMMPS LJ melt on two nodes, ranks placed compact (fill a node first) or scatter (round "
                 f"robin) and bound to the cores in identity or swapped order (each rank's binding is "
                 f"checked after the run). Measured: {measured}. {CAVEAT} Right: {citation}.")
