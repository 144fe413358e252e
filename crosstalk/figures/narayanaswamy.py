"""Core asymmetry and rank-to-core mapping, Narayanaswamy 2008 Ch. 3 (spec: core-mapping)."""
from crosstalk.figures import experiment_cases, figure, no_data, ordered_targets, plt, read_paper_csv

CAVEAT = ("On the virtual cluster every node shares the same host cores, so no per-core direction "
          "is expected there; on real nodes the core taking the NIC's interrupts is the one to watch.")
#: Core roles (the spec's core parameter) and their labels.
ROLES = {"irq": "interrupt core", "irq_sibling": "other core of its socket"}
#: Table 3.2's mappings (the spec's mapping parameter) and the thesis's names.
MAPPINGS = {"A": "A", "A_prime": "A\u2032", "B": "B", "B_prime": "B\u2032"}
#: Runs before the streaming mode measured a ping-pong under this test name (case-name prefix).
PING_PONG_TEST = "CoreBandwidth "


def _core_text(value):
    """A core parameter as text: 0, not the 0.0 a column mixing cases without cores makes of it."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _core_order(values):
    """Core numbers ascending, then the roles, then anything else."""
    numbers = sorted({str(v) for v in values if str(v).isdigit()}, key=int)
    return numbers + [r for r in ROLES if r in set(map(str, values))] + \
        sorted({str(v) for v in values} - set(numbers) - set(ROLES))


@figure("narayanaswamy_fig3_1")
def narayanaswamy_fig3_1(perf, systems):
    """Streaming bandwidth with both ranks pinned to core c, beside the paper's Intel cluster values."""
    paper, citation = read_paper_csv("narayanaswamy2008_fig3_1_bandwidth_per_core.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.4, 1]})
    cases = experiment_cases(perf, "core-mapping", systems)
    notes = []
    if cases.empty or "bandwidth" not in cases or "core" not in cases:
        no_data(ax_local, "per-core bandwidth")
    else:
        cases = cases.dropna(subset=["bandwidth", "core"])
        cases = cases.assign(core=cases["core"].map(_core_text),
                             method=cases["case"].str.startswith(PING_PONG_TEST).map(
                                 {True: "ping-pong, older runs", False: "streaming"}))
        order = _core_order(cases["core"].unique())
        series = [(t, m) for t in ordered_targets(cases) for m in ("streaming", "ping-pong, older runs")
                  if ((cases["target"] == t) & (cases["method"] == m)).any()]
        width = 0.8 / max(1, len(series))
        for i, (target, method) in enumerate(series):
            part = cases[(cases["target"] == target) & (cases["method"] == method)]
            g = part.groupby("core")["bandwidth"]
            med, low, high = g.median(), g.min(), g.max()
            xs = [order.index(c) + (i - (len(series) - 1) / 2) * width for c in med.index]
            ax_local.bar(xs, med.values, width, yerr=[med - low, high - med], capsize=3,
                         hatch="//" if method != "streaming" else None, label=f"{target} ({method})")
            notes += [f"{target} {method} core {c}: {v:.3f} Gbit/s (n={g.count()[c]})" for c, v in med.items()]
        ax_local.set_xticks(range(len(order)), [ROLES.get(c, c) for c in order], fontsize=8)
        ax_local.set_xlabel("core of both ranks (a number, or its role on this platform)")
        ax_local.set_ylabel("bandwidth (Gbit/s, median over repeats; bars: range)")
        ax_local.legend(fontsize=7)
        ax_local.set_title("Measured here (hatched: older runs' ping-pong)", fontsize=9)
    intel = paper[paper["cluster"] == "Intel"]
    ax_paper.bar(intel["core"], intel["bandwidth_gbps"], color="#9aa5b1")
    ax_paper.set_xlabel("core of both ranks (0: interrupt core; 2: other core of its CPU)")
    ax_paper.set_ylabel("MPI bandwidth (Gbit/s)")
    ax_paper.set_xticks(list(intel["core"]))
    ax_paper.set_title("Narayanaswamy 2008 Fig 3.1(a), Intel (values quoted in the text)", fontsize=9)
    fig.tight_layout()
    measured = "; ".join(notes) if notes else "no local runs yet"
    return fig, (f"Streaming bandwidth (a window of non-blocking sends, then one small reply, as the "
                 f"thesis's benchmark) of two ranks on two nodes pinned (taskset) to the same core: a "
                 f"number, or the interrupt core and the other core of its socket as the inventory names "
                 f"them. Hatched: older runs' ping-pong (one message in flight), not the same measure. "
                 f"Measured: {measured}. {CAVEAT} Right: {citation}.")


@figure("narayanaswamy_table3_2")
def narayanaswamy_table3_2(perf, systems):
    """LAMMPS time and communication time per Table 3.2 mapping, beside the paper's mapping table."""
    paper, citation = read_paper_csv("narayanaswamy2008_table3_2_lammps_mappings.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.3, 1]})
    cases = experiment_cases(perf, "core-mapping", systems)
    notes = []
    if cases.empty or "time_s" not in cases or "mapping" not in cases:
        no_data(ax_local, "LAMMPS mappings")
    else:
        cases = cases.dropna(subset=["time_s", "mapping"])
        found = set(cases["mapping"].astype(str))
        # Table 3.2's first; older runs' mappings (compact, scatter, ...) after, marked as none of them
        mappings = [m for m in MAPPINGS if m in found] + sorted(found - set(MAPPINGS))
        labels = [MAPPINGS.get(m, f"{m}\n(not Table 3.2)") for m in mappings]
        targets = ordered_targets(cases)
        width = 0.8 / max(1, len(targets))
        for i, (target, part) in enumerate(cases.groupby("target")):
            med = part.groupby(part["mapping"].astype(str))[["time_s", "comm_s"]].median().reindex(mappings)
            xs = [j + (i - (len(targets) - 1) / 2) * width for j in range(len(mappings))]
            ax_local.bar(xs, med["time_s"], width, color="#adb5bd", edgecolor="black",
                         label=f"{target}: loop time" if i == 0 else None)
            ax_local.bar(xs, med["comm_s"], width * 0.6, label=f"{target}: communication")
            notes += [f"{target} {MAPPINGS.get(m, m + ' (not Table 3.2)')}: {r.time_s:.2f} s (comm {r.comm_s:.2f} s)"
                      for m, r in med.iterrows() if r.time_s == r.time_s]
        ax_local.set_xticks(range(len(mappings)), labels, fontsize=8)
        ax_local.set_ylabel("seconds (median over repeats)")
        ax_local.legend(fontsize=7)
        ax_local.set_title("LAMMPS here under Table 3.2's mappings", fontsize=9)
    grid = paper.pivot_table(index="mapping", columns=["machine", "core"], values="rank").sort_index()
    ax_paper.axis("off")
    table = ax_paper.table(cellText=grid.values.astype(int).astype(str),
                           rowLabels=[m.replace("'", "\u2032") for m in grid.index],
                           colLabels=[f"M{m} c{c}" for m, c in grid.columns], loc="center")
    table.set_fontsize(8)
    ax_paper.set_title("Narayanaswamy 2008 Table 3.2: rank on each (machine, core)\nFig 3.11: more than "
                       "two-fold communication difference between A and A\u2032, B and B\u2032", fontsize=8)
    fig.tight_layout()
    measured = "; ".join(notes) if notes else "no local runs yet"
    return fig, (f"LAMMPS LJ melt on two nodes, ranks dealt round robin and pinned as Table 3.2's mappings "
                 f"(A\u2032: round robin over the cores in order; A: ranks 0 and 2 swapped on machine 1; B: "
                 f"machine 1 in core order 0,2,1,3 and machine 2 in 3,1,2,0; B\u2032: ranks 0 and 6 swapped "
                 f"on machine 1; the quick profile's two cores per node reduce them as the spec says; each "
                 f"rank's binding is checked after the run). Mappings marked 'not Table 3.2' are older "
                 f"runs' compact or scatter placements in identity or swapped core order. Measured: "
                 f"{measured}. {CAVEAT} Right: {citation}.")
