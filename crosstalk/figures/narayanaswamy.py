"""Core asymmetry and rank-to-core mapping, Narayanaswamy 2008 Ch. 3 (spec: core-mapping)."""
import pandas as pd

from crosstalk.figures import (
    CLAIMS_INTERVAL,
    claim_effects,
    experiment_cases,
    figure,
    no_data,
    ordered_targets,
    plt,
    read_paper_csv,
    series_rows,
    summarise,
)
from crosstalk.figures.style import errorbars, legend_below, paper_label, paper_line, short, targets_note

EXPERIMENT = "core-mapping"

CAVEAT = ("On the virtual cluster every node shares the same host cores, so no per-core direction "
          "is expected there; on real nodes the core taking the NIC's interrupts is the one to watch.")
#: Core roles (the spec's core parameter) and their labels.
ROLES = {"irq": "interrupt core", "irq_sibling": "other core of its socket"}
#: Table 3.2's mappings (the spec's mapping parameter) and the thesis's names.
MAPPINGS = {"A": "A", "A_prime": "A\u2032", "B": "B", "B_prime": "B\u2032"}
#: Runs before the streaming mode measured a ping-pong under this test name (case-name prefix).
PING_PONG_TEST = "CoreBandwidth "



def claim_ratio_axis(ax, ticks, ylabel, title, empty_note=None):
    """A panel of a claim's ratio: one tick per compared pair, 1 marked, from 0 up; ``empty_note``
    said at the bottom where nothing local was measured."""
    if empty_note:
        ax.text(0.5, 0.04, empty_note, ha="center", fontsize=7, transform=ax.transAxes)
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xticks(range(len(ticks)), ticks)
    ax.set_xlim(-0.5, len(ticks) - 0.5)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)

def _core_text(value):
    """A core parameter as text: 0, not the 0.0 a column mixing cases without cores makes of it."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _core_order(values):
    """Core numbers ascending, then the roles, then anything else."""
    numbers = sorted({str(v) for v in values if str(v).isdigit()}, key=int)
    return numbers + [r for r in ROLES if r in set(map(str, values))] + \
        sorted({str(v) for v in values} - set(numbers) - set(ROLES))


def _dodge(i, k, step=0.14):
    """The offset of the i-th of k series at one category."""
    return (i - (k - 1) / 2) * step


#: The claim on the interrupt core and the thesis's Intel cores in its roles (core 0 took the
#: NIC's interrupts; core 2 is the other core of its CPU).
CORE_CLAIM = "nara-core-choice-changes-bandwidth"
PAPER_ROLES = {"irq": 0, "irq_sibling": 2}
OLDER = {"markerfacecolor": "white"}


@figure("narayanaswamy_fig3_1")
def narayanaswamy_fig3_1(perf, systems):
    """Streaming bandwidth with both ranks pinned to core c, the thesis's Intel values on the same
    axes; right, the claim's quantity: the other core of the interrupt core's socket over it."""
    paper, citation = read_paper_csv("narayanaswamy2008_fig3_1_bandwidth_per_core.csv")
    intel = paper[paper["cluster"] == "Intel"]
    machine = paper_label("Intel cluster, 10GE, MPICH2 (core 0 took the interrupts)")
    fig, (ax_bw, ax_ratio) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.7, 1]})
    cases = experiment_cases(perf, EXPERIMENT, systems)
    notes, series, targets, ratios = [], [], [], {}
    if not cases.empty and "bandwidth" in cases and "core" in cases:
        cases = cases.dropna(subset=["bandwidth", "core"])
        cases = cases.assign(core=cases["core"].map(_core_text),
                             method=cases["case"].str.startswith(PING_PONG_TEST).map(
                                 {True: "ping-pong, older runs", False: "streaming"}))
        targets = ordered_targets(cases)
        series = [(t, m) for t in targets for m in ("streaming", "ping-pong, older runs")
                  if ((cases["target"] == t) & (cases["method"] == m)).any()]
    order = _core_order({*(cases["core"] if series else []), *(str(c) for c in intel["core"])})
    k = len(series) + 1
    for i, (target, method) in reversed(list(enumerate(series))):
        part = cases[(cases["target"] == target) & (cases["method"] == method)]
        stats = summarise(part.rename(columns={"bandwidth": "value"}), ["core"], interval="claims")
        older = method != "streaming"
        errorbars(ax_bw, [order.index(c) + _dodge(i, k) for c in stats["core"]], stats, target,
                  short(target) + (" (ping-pong, older runs)" if older else ""), targets=targets, linestyle="none",
                  **(OLDER if older else {}))
        notes += [f"{target} {method} core {c}: {m:.3f} Gbit/s (n={n})"
                  for c, m, n in zip(stats["core"], stats["median"], stats["n"])]
    paper_line(ax_bw, [order.index(str(c)) + _dodge(k - 1, k) for c in intel["core"]], intel["bandwidth_gbps"],
               machine, linestyle="none")
    ax_bw.set_xticks(range(len(order)), [ROLES.get(c, c) for c in order], fontsize=8)
    ax_bw.set_xlabel("core of both ranks (a number, or its role on the platform)", fontsize=8)
    ax_bw.set_ylabel("bandwidth (Gbit/s)")
    ax_bw.set_ylim(bottom=0)
    ax_bw.grid(axis="y", alpha=0.3)
    ax_bw.set_title("Bandwidth by core", fontsize=9)
    # the claim's quantity: the interrupt core's socket sibling over the interrupt core
    roles = list(PAPER_ROLES)
    by_core = dict(zip(intel["core"], intel["bandwidth_gbps"]))
    paper_line(ax_ratio, [0, 1], [1.0, by_core[PAPER_ROLES["irq_sibling"]] / by_core[PAPER_ROLES["irq"]]], machine)
    by_series = series_rows(perf, EXPERIMENT, systems) if targets else {}
    for i, target in reversed(list(enumerate(targets))):
        effect = claim_effects(EXPERIMENT, [CORE_CLAIM], by_series[target]).get(CORE_CLAIM)
        if effect is not None:
            ratios[target] = effect
            errorbars(ax_ratio, [1 + _dodge(i, len(targets) + 1)], pd.DataFrame([effect]), target, short(target),
                      targets=targets, linestyle="none")
    claim_ratio_axis(ax_ratio, [ROLES[r] for r in roles], "bandwidth / the interrupt core's (ratio)",
                     "The claim's quantity: relative to the interrupt core",
                     None if ratios else "no local interrupt-core cases (the inventory names none)")
    ax_ratio.tick_params(axis="x", labelsize=8)
    legend_below(fig, ncol=3)
    notes += [f"{t} other core of its socket / interrupt core: {v['median']:.2f} ({v['low']:.2f} to {v['high']:.2f}"
              f"{'' if v['exact'] else ', range'}, n={v['n']})" for t, v in ratios.items()]
    measured = "; ".join(notes) if notes else "no local runs yet"
    return fig, (f"Streaming bandwidth (a window of non-blocking sends, then one small reply, as the "
                 f"thesis's benchmark) of two ranks on two nodes pinned (taskset) to the same core: a "
                 f"number, or the interrupt core and the other core of its socket as the inventory names "
                 f"them. Open markers: older runs' ping-pong (one message in flight), not the same measure. "
                 f"Left: medians over repeats, n in the legend; {CLAIMS_INTERVAL}. Black open markers: the "
                 f"thesis's Intel cluster (values quoted in its text), by core number. Right: the quantity the "
                 f"claim judges, the other core of the interrupt core's socket over the interrupt core, with its "
                 f"interval (the Intel cluster: core 2 over core 0). Measured: {measured}. {CAVEAT} "
                 f"Series: {targets_note(targets)}. Paper: {citation}.")


#: The claims on Table 3.2's mapping pairs: (mapping, its swap, claim).
PAIR_CLAIMS = (("A", "A_prime", "nara-core-order-changes-comm-twofold"),
               ("B", "B_prime", "nara-scatter-order-changes-comm-twofold"))


@figure("narayanaswamy_table3_2")
def narayanaswamy_table3_2(perf, systems):
    """LAMMPS loop and communication time per Table 3.2 mapping; right, the claims' quantity: the
    communication time of a mapping against its swap, beside the thesis's "more than two-fold"."""
    _, citation = read_paper_csv("narayanaswamy2008_table3_2_lammps_mappings.csv")
    fig, (ax_time, ax_comm, ax_pair) = plt.subplots(1, 3, figsize=(13, 4.4),
                                                    gridspec_kw={"width_ratios": [1.3, 1.3, 0.8]})
    cases = experiment_cases(perf, EXPERIMENT, systems)
    notes, targets, spreads = [], [], {}
    if cases.empty or "time_s" not in cases or "mapping" not in cases:
        no_data(ax_time, "LAMMPS mappings")
        no_data(ax_comm, "LAMMPS mappings")
    else:
        cases = cases.dropna(subset=["time_s", "mapping"]).assign(mapping=lambda c: c["mapping"].astype(str))
        found = set(cases["mapping"])
        # Table 3.2's first; older runs' mappings (compact, scatter, ...) after, marked as none of them
        mappings = [m for m in MAPPINGS if m in found] + sorted(found - set(MAPPINGS))
        if len(mappings) > len(MAPPINGS):      # room for the older mappings' names
            fig.set_size_inches(13 + 0.6 * (len(mappings) - len(MAPPINGS)), 4.4)
        targets = ordered_targets(cases)
        for ax, metric, what in ((ax_time, "time_s", "loop time"), (ax_comm, "comm_s", "communication time")):
            for i, target in reversed(list(enumerate(targets))):
                part = cases[cases.target == target]
                if metric not in part:
                    continue
                stats = summarise(part.rename(columns={metric: "value"}).dropna(subset=["value"]), ["mapping"],
                                  interval="claims")
                errorbars(ax, [mappings.index(m) + _dodge(i, len(targets)) for m in stats["mapping"]], stats,
                          target, short(target), targets=targets, linestyle="none")
            # an older run's mapping: its name a word a line and a star (the caption says what it
            # is), so that eight names fit beside Table 3.2's four letters
            ax.set_xticks(range(len(mappings)), [MAPPINGS.get(m, m.replace("_", "\n") + "*") for m in mappings],
                          fontsize=7)
            ax.set_ylabel(f"LAMMPS {what} (s)", fontsize=8)
            ax.set_ylim(bottom=0)
            ax.grid(axis="y", alpha=0.3)
            ax.set_title(f"{what.capitalize()} by mapping", fontsize=9)
        ax_time.set_xlabel("rank-to-core mapping", fontsize=8)
        for target, part in cases.groupby("target"):
            med = part.groupby("mapping")[[c for c in ("time_s", "comm_s") if c in part]].median()
            notes += [f"{target} {MAPPINGS.get(m, m + '*')}: {r.time_s:.2f} s"
                      + (f" (comm {r.comm_s:.2f} s)" if "comm_s" in med else "") for m, r in med.iterrows()]
    by_series = series_rows(perf, EXPERIMENT, systems) if targets else {}
    for i, target in reversed(list(enumerate(targets))):
        effects = claim_effects(EXPERIMENT, [claim for *_, claim in PAIR_CLAIMS], by_series[target])
        for x, (first, _, claim) in enumerate(PAIR_CLAIMS):
            effect = effects.get(claim)
            if effect is not None:
                spreads[(target, first)] = effect
                errorbars(ax_pair, [x + _dodge(i, len(targets) + 1)], pd.DataFrame([effect]), target, short(target),
                          targets=targets, linestyle="none")
    paper_line(ax_pair, [_dodge(len(targets), len(targets) + 1) + x for x in range(len(PAIR_CLAIMS))],
               [2.0] * len(PAIR_CLAIMS), paper_label("Intel cluster, more than 2x (Fig 3.11, a lower bound)"),
               linestyle="none", marker="^")
    claim_ratio_axis(ax_pair, [f"{MAPPINGS[a]} vs {MAPPINGS[b]}" for a, b, _ in PAIR_CLAIMS],
                     "communication time, slower / faster\nof the pair (ratio)", "The claims' quantity",
                     None if spreads else "no Table 3.2 pair measured here")
    legend_below(fig, ncol=3)
    notes += [f"{t} {MAPPINGS[a]} vs its swap: {v['median']:.2f}x ({v['low']:.2f} to {v['high']:.2f}"
              f"{'' if v['exact'] else ', range'}, n={v['n']})" for (t, a), v in spreads.items()]
    measured = "; ".join(notes) if notes else "no local runs yet"
    return fig, (f"LAMMPS LJ melt on two nodes, ranks dealt round robin and pinned as Table 3.2's mappings "
                 f"(A\u2032: round robin over the cores in order; A: ranks 0 and 2 swapped on machine 1; B: "
                 f"machine 1 in core order 0,2,1,3 and machine 2 in 3,1,2,0; B\u2032: ranks 0 and 6 swapped "
                 f"on machine 1; the quick profile's two cores per node reduce them as the spec says; each "
                 f"rank's binding is checked after the run). Mappings marked * are not Table 3.2's: older "
                 f"runs' compact or scatter placements in identity or swapped core order. Left and middle: "
                 f"medians over repeats, n in the legend; {CLAIMS_INTERVAL}. Right: the quantity the claims judge, "
                 f"per sample the slower of a mapping and its swap over the faster, beside the thesis's 'more than "
                 f"two-fold' (black triangles: a lower bound, from its text on Fig 3.11). Measured: {measured}. "
                 f"{CAVEAT} Series: {targets_note(targets)}. Mappings: {citation}.")
