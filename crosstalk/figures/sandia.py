"""Energy under CPU frequency and network bandwidth, SAND2012-1750 Ch. 6 (spec: energy)."""
import pandas as pd

from crosstalk.figures import (
    CLAIMS_INTERVAL,
    as_pct,
    experiment_cases,
    figure,
    no_data,
    ordered_targets,
    per_job,
    plt,
    ratio_with_interval,
    read_paper_csv,
)
from crosstalk.figures.style import (
    errorbars,
    focus_on_user,
    is_example,
    legend_below,
    paper_label,
    paper_line,
    short,
    tag,
    targets_note,
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


def changes(cases, baseline_filter, column, values, metrics, paired=()):
    """{target: {value: {metric: ratio}}}: each ``metric`` of the cases at ``value`` of ``column``
    over the baseline's, as ``ratio_with_interval`` gives it (median, the claims' interval, n).
    Values in ``paired`` measured the baseline in turn in their own jobs (``<metric>_wider``: the
    2X job's 4X rounds) and pair round by round, as the claims judge them; the others are
    quotients of medians of separate jobs."""
    out = {}
    for target, part in cases.groupby("target"):
        base = part[baseline_filter(part)]
        if base.empty:
            continue
        out[target] = {}
        for value in values:
            sel = part[part[column].astype(str) == value]
            if sel.empty:
                continue
            out[target][value] = {
                metric: ratio_with_interval(sel, metric, f"{metric}_wider" if value in paired else None,
                                            per_job(base, metric))
                for metric in metrics if metric in sel and sel[metric].notna().any()}
    return out


def _pct_note(ratio):
    pct = as_pct(ratio)
    return f"{pct['median']:+.1f} % ({pct['low']:+.1f} to {pct['high']:+.1f}{'' if pct['exact'] else ', range'})"


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


def _local_lines(ax, xs, by_target, targets, value):
    """Each target's medians by link with their intervals (user's on top); ``value`` picks the
    drawn quantity (median, low, high, n, exact) of a link's ratios. Returns the user's values."""
    user = []
    for target in reversed(targets):
        by_link = by_target.get(target, {})
        pts = [(xs[i], value(by_link[k])) for i, (k, _, _) in enumerate(LINKS) if k in by_link]
        pts = [(x, st) for x, st in pts if st is not None and st["median"] == st["median"]]
        if not pts:
            continue
        stats = pd.DataFrame([st for _, st in pts])
        errorbars(ax, [x for x, _ in pts], stats, target, f"LAMMPS, {short(target)}", targets=targets)
        if not is_example(target):
            user += [*stats["median"], *stats["low"], *stats["high"]]
    return user


def _link_axis(ax, xs):
    ax.set_xticks(xs, [f"{k}\n({frac})" for k, _, frac in LINKS], fontsize=8)
    ax.set_xlabel("link rate (fraction of full bandwidth)", fontsize=8)
    ax.grid(alpha=0.3)


#: The link sweep's metrics and the link whose jobs also measured the baseline (4X) round by round.
LINK_METRICS = ["time_s", "energy_j", "edp_w1", "edp_w2", "edp_w3"]
PAIRED_WITH_4X = ("2X",)


def _link_changes(cases):
    if cases is None:
        return {}
    return changes(cases, lambda p: p["link"].astype(str) == "4X", "link", [k for k, _, _ in LINKS], LINK_METRICS,
                   paired=PAIRED_WITH_4X)


#: How the captions say what the local points and bars are.
HOW_LOCAL = ("Local points: the median over rounds and repeats as a % change (or ratio) from 4X: at 2X "
             "against the 4X rounds its own jobs ran in turn (as the claims pair them), elsewhere the quotient "
             "of the medians of separate jobs; n in the legend (the fewer samples of a quotient's two sides); "
             + CLAIMS_INTERVAL + " (for a quotient of separate jobs: each median's interval at half the error "
             "rate, as the claims judge it).")


@figure("sandia_table6_2")
def sandia_table6_2(perf, systems):
    """Run-time and energy % change at 1/2, 1/4, 1/8 bandwidth, beside Table 6.2."""
    paper, citation = read_paper_csv("sandia2012_table6_2_network_bandwidth.csv")
    label = _energy_label(perf, systems)
    fig, (ax_rt, ax_e) = plt.subplots(1, 2, figsize=(11, 4.4))
    xs = list(range(len(LINKS)))
    cases = _link_cases(perf, systems)
    by_target = _link_changes(cases)
    targets = ordered_targets(cases) if cases is not None else []
    if cases is None:
        no_data(ax_rt, "the energy experiment")
    for ax, kind, metric in ((ax_rt, "rt", "time_s"), (ax_e, "e", "energy_j")):
        paper_values = _paper_apps(ax, xs, paper, lambda row, p, kind=kind: row[f"{p}_{kind}_pct"])
        user = _local_lines(ax, xs, by_target, targets, lambda v, m=metric: as_pct(v[m]) if m in v else None)
        ax.axhline(0, color="black", lw=0.8)
        focus_on_user(ax, user, paper_values, include=[0])
        _link_axis(ax, xs)
    ax_rt.set_ylabel("Run time: % change from full bandwidth (4X)")
    ax_e.set_ylabel("Total energy: % change from 4X")
    ax_e.set_title(f"Energy: {label}", fontsize=9)
    ax_rt.set_title("Run time", fontsize=9)
    legend_below(fig, ncol=3)
    notes = [f"{target} {k}: RT {_pct_note(v['time_s'])}, E {_pct_note(v['energy_j'])} (n={v['time_s']['n']})"
             for target, by_link in by_target.items() for k, v in by_link.items() if {"time_s", "energy_j"} <= set(v)]
    measured = "; ".join(notes) if notes else "no local link-sweep runs yet"
    return fig, (f"LAMMPS LJ melt on two nodes with the job's links at 1/2 (2X), 1/4 (1X) and 1/8 (rate = "
                 f"nominal/8, the paper's injection case) of full bandwidth. {HOW_LOCAL} Energy here: {label} "
                 f"(Eq 6.2: CPU + 25 W x bandwidth fraction + 20 W memory, per node). The axes are set by the "
                 f"user's lines and the paper's; an example beyond them is noted off scale. Measured: {measured}. "
                 f"Series: {targets_note(targets)}. Black dashed: {citation}.")


@figure("sandia_table6_1")
def sandia_table6_1(perf, systems):
    """Run-time and CPU-energy % change at lower CPU P-states, beside Table 6.1."""
    paper, citation = read_paper_csv("sandia2012_table6_1_cpu_frequency.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.4]})
    cases = experiment_cases(perf, "energy", systems)
    notes = []
    if not cases.empty and "time_s" in cases and "energy_j" in cases:
        cases = cases[cases["link"].astype(str) == "4X"]
        freqs = sorted(v for v in cases["cpu_freq"].astype(str).unique() if v != "default")
        by_target = changes(cases, lambda p: p["cpu_freq"].astype(str) == "default", "cpu_freq", freqs,
                            ["time_s", "energy_j"])
        targets = ordered_targets(cases)
        for target in reversed(targets):
            keys = [f for f in freqs if {"time_s", "energy_j"} <= set(by_target.get(target, {}).get(f, {}))]
            if not keys:
                continue
            rt = pd.DataFrame([as_pct(by_target[target][f]["time_s"]) for f in keys])
            energy = pd.DataFrame([as_pct(by_target[target][f]["energy_j"]) for f in keys])
            # the energy's interval upright, the run time's across: one point per frequency
            errorbars(ax_local, rt["median"], energy, target, short(target), targets=targets, linestyle="none")
            errorbars(ax_local, energy["median"], rt, target, targets=targets, linestyle="none", horizontal=True)
            for f, x, y in zip(keys, rt["median"], energy["median"]):
                ax_local.annotate(f, (x, y), fontsize=7)
            notes += [f"{target} {f}: RT {_pct_note(by_target[target][f]['time_s'])}, "
                      f"E {_pct_note(by_target[target][f]['energy_j'])}" for f in keys]
    if notes:
        ax_local.set_xlabel("Run time % change from the default frequency")
        ax_local.set_ylabel(f"Total energy % change ({_energy_label(perf, systems)})", fontsize=8)
        ax_local.axhline(0, color="black", lw=0.6)
        ax_local.grid(alpha=0.3)
        ax_local.set_title("Measured here (4X, medians and the claims' intervals)", fontsize=9)
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
    return fig, (f"Run time and energy change at lower CPU frequency (Slurm --cpu-freq) at full bandwidth: "
                 f"the quotient of the medians of separate jobs over the default frequency's, as % change; "
                 f"{CLAIMS_INTERVAL} (each median's interval at half the error rate), energy upright, run time "
                 f"across. Measured: {measured}. Right: {citation}.")


@figure("sandia_fig6_2")
def sandia_fig6_2(perf, systems):
    """E x T^w normalised to full bandwidth for w = 1, 2, 3 (modelled where the energy is)."""
    paper, citation = read_paper_csv("sandia2012_table6_2_network_bandwidth.csv")
    label = _energy_label(perf, systems)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), sharey=False)
    xs = list(range(len(LINKS)))
    cases = _link_cases(perf, systems)
    by_target = _link_changes(cases)
    notes = []
    targets = ordered_targets(cases) if cases is not None else []
    for w, ax in zip((1, 2, 3), axes):
        ax.set_yscale("log")
        paper_values = _paper_apps(ax, xs, paper, lambda row, p, w=w: edp_from_pct(row[f"{p}_rt_pct"],
                                                                                   row[f"{p}_e_pct"], w))
        user = _local_lines(ax, xs, by_target, targets, lambda v, m=f"edp_w{w}": v.get(m))
        notes += [f"w={w} {k} {target}: {v[f'edp_w{w}']['median']:.2f}"
                  for target, by_link in by_target.items() for k, v in by_link.items() if f"edp_w{w}" in v]
        ax.axhline(1, color="black", lw=0.8)
        focus_on_user(ax, user, paper_values, include=[1])
        _link_axis(ax, xs)
        ax.set_title(f"E x T^{w} / baseline", fontsize=10)
    axes[0].set_ylabel("normalised to full bandwidth (4X; ratio)")
    if not by_target:
        axes[1].text(0.5, 0.9, "no local link-sweep runs yet", ha="center", transform=axes[1].transAxes)
    legend_below(fig, ncol=3)
    measured = "; ".join(notes) if notes else "no local link-sweep runs yet"
    return fig, (f"Energy-delay product (E/E_4X) x (T/T_4X)^w, w = 1, 2, 3 (Fig 6.2's metric); local energy: "
                 f"{label}; local E x T^w is each run's own (the edp_w metrics), over 4X's. {HOW_LOCAL} "
                 f"Black dashed: the paper's applications computed from {citation} (modelled from the table's % "
                 f"columns). Local: {measured}. Series: {targets_note(targets)}.")
