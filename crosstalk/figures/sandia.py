"""Energy under CPU frequency and network bandwidth, SAND2012-1750 Ch. 6 (spec: energy)."""
from crosstalk.figures import experiment_cases, figure, no_data, ordered_targets, plt, read_paper_csv
from crosstalk.figures.style import (
    focus_on_user,
    is_example,
    legend_below,
    paper_label,
    paper_line,
    series,
    short,
    tag,
    targets_note,
    with_n,
)
from crosstalk.models.energy import edp_from_pct

#: Link cases of the energy spec and the paper's column prefix for the same bandwidth fraction.
LINKS = [("2X", "half", "1/2"), ("1X", "quarter", "1/4"), ("inj8", "eighth", "1/8")]


def _energy_label(perf, systems):
    """'modelled, Eq 6.2' (or the meter) as written in the energy_j unit of the runs."""
    df = perf[(perf.experiment == "energy") & (perf.metric == "energy_j")]
    if systems:
        df = df[df.system.isin(systems)]
    labels = sorted({u[u.find("(") + 1:u.rfind(")")] for u in df["unit"].dropna() if "(" in u})
    return ", ".join(labels) if labels else "no energy values"


def pct_changes(cases, baseline_filter, column, values):
    """{target: {value: (rt_pct, e_pct, n)}}: medians over repeats, % change from the baseline."""
    out = {}
    for target, part in cases.groupby("target"):
        base = part[baseline_filter(part)]
        if base.empty:
            continue
        t0, e0 = base["time_s"].median(), base["energy_j"].median()
        out[target] = {}
        for value in values:
            sel = part[part[column].astype(str) == value]
            if sel.empty:
                continue
            out[target][value] = (100 * (sel["time_s"].median() - t0) / t0,
                                  100 * (sel["energy_j"].median() - e0) / e0, len(sel))
    return out


def _link_cases(perf, systems):
    cases = experiment_cases(perf, "energy", systems)
    if cases.empty or "time_s" not in cases or "energy_j" not in cases:
        return None
    return cases[cases["cpu_freq"].astype(str) == "default"]


def _paper_apps(ax, xs, paper, value):
    """The paper's applications, one dashed black line each, one legend entry for all."""
    values = []
    for i, (_, row) in enumerate(paper.iterrows()):
        ys = [value(row, p) for _, p, _ in LINKS]
        values += ys
        paper_line(ax, xs, ys, paper_label(f"Red Storm, {len(paper)} apps") if i == 0 else None, markersize=3,
                   linewidth=0.7)
    return values


def _local_lines(ax, xs, changes, targets, value, notes=None):
    """Each target's line (user's on top), its values by link; returns the user's values."""
    user = []
    for target in reversed(targets):
        by_link = changes.get(target, {})
        pts = [(i, by_link[k]) for i, (k, _, _) in enumerate(LINKS) if k in by_link]
        if not pts:
            continue
        ys = [value(v) for _, v in pts]
        style = series(target, targets=targets)
        gid = style.pop("gid")
        tag(ax.plot([xs[i] for i, _ in pts], ys, label=with_n(f"LAMMPS, {short(target)}", min(v[2] for _, v in pts)),
                    **style), gid)
        if not is_example(target):
            user += ys
    return user


def _link_axis(ax, xs):
    ax.set_xticks(xs, [f"{k}\n({frac})" for k, _, frac in LINKS], fontsize=8)
    ax.set_xlabel("link rate (fraction of full bandwidth)", fontsize=8)
    ax.grid(alpha=0.3)


@figure("sandia_table6_2")
def sandia_table6_2(perf, systems):
    """Run-time and energy % change at 1/2, 1/4, 1/8 bandwidth, beside Table 6.2."""
    paper, citation = read_paper_csv("sandia2012_table6_2_network_bandwidth.csv")
    label = _energy_label(perf, systems)
    fig, (ax_rt, ax_e) = plt.subplots(1, 2, figsize=(11, 4.4))
    xs = list(range(len(LINKS)))
    cases = _link_cases(perf, systems)
    changes = {} if cases is None else pct_changes(cases, lambda p: p["link"].astype(str) == "4X", "link",
                                                   [k for k, _, _ in LINKS])
    targets = ordered_targets(cases) if cases is not None else []
    if cases is None:
        no_data(ax_rt, "the energy experiment")
    for ax, kind, col in ((ax_rt, "rt", 0), (ax_e, "e", 1)):
        paper_values = _paper_apps(ax, xs, paper, lambda row, p, kind=kind: row[f"{p}_{kind}_pct"])
        user = _local_lines(ax, xs, changes, targets, lambda v, col=col: v[col])
        ax.axhline(0, color="black", lw=0.8)
        focus_on_user(ax, user, paper_values, include=[0])
        _link_axis(ax, xs)
    ax_rt.set_ylabel("Run time: % change from full bandwidth (4X)")
    ax_e.set_ylabel("Total energy: % change from 4X")
    ax_e.set_title(f"Energy: {label}", fontsize=9)
    ax_rt.set_title("Run time", fontsize=9)
    legend_below(fig, ncol=3)
    notes = [f"{target} {k}: RT {v[0]:+.1f} %, E {v[1]:+.1f} % (n={v[2]})"
             for target, by_link in changes.items() for k, v in by_link.items()]
    measured = "; ".join(notes) if notes else "no local link-sweep runs yet"
    return fig, (f"LAMMPS LJ melt on two nodes with the job's links at 1/2 (2X), 1/4 (1X) and 1/8 (rate = "
                 f"nominal/8, the paper's injection case) of full bandwidth; % change of the median over "
                 f"repeats from 4X. Energy here: {label} (Eq 6.2: CPU + 25 W x bandwidth fraction + "
                 f"20 W memory, per node). The axes are set by the user's lines and the paper's; an example "
                 f"beyond them is noted off scale. Measured: {measured}. Series: {targets_note(targets)}. "
                 f"Black dashed: {citation}.")


@figure("sandia_table6_1")
def sandia_table6_1(perf, systems):
    """Run-time and CPU-energy % change at lower CPU P-states, beside Table 6.1."""
    paper, citation = read_paper_csv("sandia2012_table6_1_cpu_frequency.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.4]})
    cases = experiment_cases(perf, "energy", systems)
    notes = []
    if not cases.empty and "time_s" in cases:
        cases = cases[cases["link"].astype(str) == "4X"]
        freqs = sorted(v for v in cases["cpu_freq"].astype(str).unique() if v != "default")
        changes = pct_changes(cases, lambda p: p["cpu_freq"].astype(str) == "default", "cpu_freq", freqs)
        for target, by_freq in changes.items():
            keys = [f for f in freqs if f in by_freq]
            if keys:
                style = series(target, targets=list(changes))
                gid = style.pop("gid")
                tag(ax_local.scatter([by_freq[f][0] for f in keys], [by_freq[f][1] for f in keys], label=short(target),
                                     color=style["color"], marker=style["marker"], zorder=style["zorder"]), gid)
                for f in keys:
                    ax_local.annotate(f, (by_freq[f][0], by_freq[f][1]), fontsize=7)
                notes += [f"{target} {f}: RT {by_freq[f][0]:+.1f} %, E {by_freq[f][1]:+.1f} %" for f in keys]
    if notes:
        ax_local.set_xlabel("Run time % change")
        ax_local.set_ylabel("Energy % change")
        ax_local.set_title("Measured here (4X, median over repeats)", fontsize=9)
    else:
        no_data(ax_local, "CPU frequency (no system here can set it: cpufreq cases are skipped)")
    for p, marker in (("p2", "o"), ("p3", "s"), ("p4", "^")):
        sel = paper.dropna(subset=[f"{p}_rt_pct", f"{p}_e_pct"])
        tag(ax_paper.scatter(sel[f"{p}_rt_pct"], sel[f"{p}_e_pct"], marker=marker, facecolors="white",
                             edgecolors="black", label=paper_label(f"Red Storm {p.upper()}")), "paper")
        for _, row in sel.iterrows():
            ax_paper.annotate(row["app"], (row[f"{p}_rt_pct"], row[f"{p}_e_pct"]), fontsize=6)
    ax_paper.set_xlabel("Run time % change")
    ax_paper.set_ylabel("CPU energy % change")
    ax_paper.set_title("SAND2012-1750 Table 6.1 (P2 1.7, P3 1.4, P4 1.1 GHz)", fontsize=9)
    ax_paper.axhline(0, color="black", lw=0.6)
    ax_paper.grid(alpha=0.3)
    legend_below(fig, ncol=4)
    measured = "; ".join(notes) if notes else ("none: CPU frequency cannot be set on the systems run "
                                                 "(skipped with the reason in the report)")
    return fig, (f"Run time and energy change at lower CPU frequency (Slurm --cpu-freq) at full bandwidth. "
                 f"Measured: {measured}. Right: {citation}.")


@figure("sandia_fig6_2")
def sandia_fig6_2(perf, systems):
    """E x T^w normalised to full bandwidth for w = 1, 2, 3 (modelled where the energy is)."""
    paper, citation = read_paper_csv("sandia2012_table6_2_network_bandwidth.csv")
    label = _energy_label(perf, systems)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), sharey=False)
    xs = list(range(len(LINKS)))
    cases = _link_cases(perf, systems)
    changes = {} if cases is None else pct_changes(cases, lambda p: p["link"].astype(str) == "4X", "link",
                                                   [k for k, _, _ in LINKS])
    notes = []
    targets = ordered_targets(cases) if cases is not None else []
    for w, ax in zip((1, 2, 3), axes):
        ax.set_yscale("log")
        paper_values = _paper_apps(ax, xs, paper, lambda row, p, w=w: edp_from_pct(row[f"{p}_rt_pct"],
                                                                                   row[f"{p}_e_pct"], w))
        user = _local_lines(ax, xs, changes, targets, lambda v, w=w: edp_from_pct(v[0], v[1], w))
        notes += [f"w={w} {k} {target}: {edp_from_pct(v[0], v[1], w):.2f}"
                  for target, by_link in changes.items() for k, v in by_link.items()]
        ax.axhline(1, color="black", lw=0.8)
        focus_on_user(ax, user, paper_values, include=[1])
        _link_axis(ax, xs)
        ax.set_title(f"E x T^{w} / baseline", fontsize=10)
    axes[0].set_ylabel("normalised to full bandwidth (4X; ratio)")
    if not changes:
        axes[1].text(0.5, 0.9, "no local link-sweep runs yet", ha="center", transform=axes[1].transAxes)
    legend_below(fig, ncol=3)
    measured = "; ".join(notes) if notes else "no local link-sweep runs yet"
    return fig, (f"Energy-delay product (E/E_4X) x (T/T_4X)^w, w = 1, 2, 3 (Fig 6.2's metric); local energy: "
                 f"{label}. Black dashed: the paper's applications computed from {citation} (modelled from "
                 f"the table's % columns). Local: {measured}. Series: {targets_note(targets)}.")
