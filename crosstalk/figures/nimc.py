"""Network-induced memory contention, Groves 2017 §2.2 (specs: nimc-stream, nimc-apps)."""
from matplotlib.patches import Patch

from crosstalk.figures import (
    experiment_cases,
    figure,
    groves_triad,
    in_job_ratio,
    no_data,
    ordered_targets,
    plt,
    read_paper_csv,
    summarise,
)
from crosstalk.figures.style import (
    bar_style,
    colour,
    is_example,
    legend_below,
    paper_bars,
    paper_label,
    paper_line,
    series,
    short,
    tag,
    targets_note,
    with_n,
)
from crosstalk.models.throttling import crossover, fit_bandwidth_loss


@figure("nimc_table2_4")
def nimc_table2_4(perf, systems):
    """Triad alone vs under unpaced injection (all cores), and the change beside Groves 2017 Table 2.4."""
    paper, citation = read_paper_csv("groves2017_table2_4_stream_nimc.csv")
    fig, (ax_local, ax_pct) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.3]})
    cases = experiment_cases(perf, "nimc-stream", systems)
    rows, targets, conditions = [], [], []
    if cases.empty:
        no_data(ax_local, "NiMC STREAM")
    else:
        cases = groves_triad(cases[cases["cores"] == "all"])
        cases = cases.assign(load=cases["injection"].astype(str))
        targets = ordered_targets(cases)
        for i, target in enumerate(targets):
            part = cases[cases.target == target]
            how = "" if part["triad_how"].iloc[0] == "average time" else " (best rate)"
            stats = {load: summarise(part[part.load == load].rename(columns={"triad": "value"}).assign(k=0), ["k"])
                     for load in ("off", "max")}
            if any(st.empty for st in stats.values()):
                continue
            for j, (load, alpha) in enumerate((("off", 0.45), ("max", 1.0))):
                st = stats[load].iloc[0]
                x = i + (j - 0.5) * 0.4
                ax_local.bar(x, st["median"] / 1000, 0.38, alpha=alpha, **bar_style(target, targets))
                ax_local.errorbar(x, st["median"] / 1000, yerr=[[(st["median"] - st["low"]) / 1000],
                                                                 [(st["high"] - st["median"]) / 1000]],
                                  color="black", capsize=3, lw=0.8)
                if i == 0:
                    conditions = conditions or [(Patch(facecolor="#495057", alpha=a), text) for a, text in
                                                ((0.45, "light: alone"), (1.0, "full: unpaced injection"))]
            alone, loaded = stats["off"].iloc[0], stats["max"].iloc[0]
            rows.append((target, how, 100 * (loaded["median"] - alone["median"]) / alone["median"],
                         100 * (loaded["low"] - alone["high"]) / alone["high"],
                         100 * (loaded["high"] - alone["low"]) / alone["low"], int(min(alone["n"], loaded["n"]))))
        ax_local.set_xticks(range(len(targets)), [short(t).replace(" (", "\n(").replace(":", "\n") for t in targets],
                            fontsize=7)
        ax_local.set_ylabel("Triad bandwidth (GB/s)")
        ax_local.set_title("Measured here: medians, bars min-max", fontsize=9)
        ax_local.set_ylim(bottom=0)
    y = list(range(len(paper)))
    paper_bars(ax_pct, y, paper["diff_pct"], 0.6, horizontal=True, label="paper: Groves 2017 Table 2.4 machines")
    names = list(paper["machine"])
    for k, (target, how, pct, low, high, n) in enumerate(rows):
        pos = len(paper) + k
        bars = ax_pct.barh(pos, pct, 0.6, label=with_n(short(target) + how, n), **bar_style(target, targets))
        ax_pct.errorbar(pct, pos, xerr=[[max(pct - low, 0)], [max(high - pct, 0)]], color="black", capsize=3, lw=0.8)
        tag(bars, bars.patches[0].get_gid())
        names.append(short(target, 22))
    ax_pct.set_yticks(range(len(names)), names, fontsize=7)
    ax_pct.invert_yaxis()
    ax_pct.axvline(0, color="black", lw=0.6)
    ax_pct.set_xlabel("Triad change under injection (%)")
    ax_pct.set_title("The change, beside the paper's machines", fontsize=9)
    legend_below(fig, ncol=3, keys=conditions)
    measured = "; ".join(f"{t}{how}: {pct:+.0f} % (from {low:+.0f} to {high:+.0f} %, n={n})"
                         for t, how, pct, low, high, n in rows)
    return fig, ("STREAM Triad (rate from the average Triad time, as Groves 2017 §2.2.4; '(best rate)': a "
                 "run recorded before crosstalk measured the average) on the injected node, alone and while 64 KiB "
                 "writes are injected into its memory as fast as possible (xt-inject MPI_Put where no verbs device "
                 "exists, ib_write_bw otherwise); STREAM on all cores. Left: medians over repeats, bars min-max. "
                 "Right: the change in percent (the quantity of the claim; our interval: the extreme loaded over "
                 "the extreme alone) beside the paper's machines (white hatched). Measured: "
                 f"{measured or 'none'}. Paper: {citation}.")


#: The two core counts of the throttling experiment: a panel each.
CORES = {"all": "STREAM on all cores", "all-1": "STREAM on all but one core"}


@figure("nimc_throttling")
def nimc_throttling(perf, systems):
    """Triad vs achieved injection rate, with the least-squares loss per injected byte: a panel per
    core count, the paper's slope drawn from our intercept."""
    paper, citation = read_paper_csv("groves2017_fig2_21b_throttling.csv")
    paper_slope = float(paper.set_index("quantity").loc["dram_bw_lost_per_rdma_bw", "value"])
    cases = experiment_cases(perf, "nimc-stream", systems)
    cores = [c for c in CORES if not cases.empty and c in set(cases["cores"].astype(str))] or ["all"]
    fig, axes = plt.subplots(1, len(cores), figsize=(5.5 * len(cores), 4.6), squeeze=False, sharey=True)
    axes = dict(zip(cores, axes[0]))
    notes = []
    if cases.empty:
        no_data(axes["all"], "NiMC STREAM")
        fig.tight_layout()
        return fig, f"No local NiMC STREAM runs yet. Paper: {citation}."
    if "injected_bw" not in cases:
        cases["injected_bw"] = float("nan")
    # One point per job, as the claim's fit: Triad's rounds as their median, the job's rate.
    cases = groves_triad(cases).drop(columns=["triad_alone"])
    metrics = ["triad", "injected_bw"]
    keys = [c for c in cases.columns if c not in metrics and c != "round" and not c.startswith("triad_")]
    keys.append("triad_how")
    cases = cases.groupby(keys, dropna=False, as_index=False)[metrics].median()
    cases["injected_bw"] = cases["injected_bw"].where(cases["injection"].astype(str) != "off", 0.0)
    cases = cases.rename(columns={"triad": "triad_bw"})
    targets = ordered_targets(cases)
    fits = {}
    for core, ax in axes.items():
        for target in reversed(targets):
            part = cases[(cases.target == target) & (cases["cores"].astype(str) == core)]
            part = part.dropna(subset=["injected_bw", "triad_bw"])
            if part.empty:
                continue
            how = "" if part["triad_how"].eq("average time").all() else " (best rate)"
            style = series(target, targets=targets)
            gid = style.pop("gid")
            tag(ax.scatter(part["injected_bw"], part["triad_bw"], s=26 if gid == "user" else 14, zorder=style["zorder"],
                           color=style["color"], marker=style["marker"], label=with_n(short(target) + how, len(part))),
                gid)
            if part["injected_bw"].nunique() >= 3:           # a line through two points is no fit
                fit = fit_bandwidth_loss(part["injected_bw"], part["triad_bw"])
                fits[(target, core)] = fit
                xs = [0, part["injected_bw"].max()]
                tag(ax.plot(xs, [fit["intercept"] + fit["slope"] * x for x in xs], color=style["color"], lw=1,
                            zorder=style["zorder"]), gid)
                notes.append(f"{target} {CORES[core]}: {fit['value']:.1f} B lost per injected B (modelled fit, "
                             f"95% CI {fit['ci_low']:.1f} to {fit['ci_high']:.1f}, r²={fit['r2']:.2f}, n={fit['n']})")
        user = [t for t in targets if not is_example(t) and (t, core) in fits] or [t for t in targets
                                                                                  if (t, core) in fits]
        if user:
            base, top = fits[(user[0], core)]["intercept"], cases["injected_bw"].max()
            xs = [0, min(top, base / paper_slope) if paper_slope > 0 else top]
            paper_line(ax, xs, [base - paper_slope * x for x in xs], paper_label(
                f"Groves 2017 Fig 2.21b DRAM slope {paper_slope:g} B/B, from {short(user[0])}'s intercept"),
                marker=None)
        ax.set_title(CORES[core], fontsize=9)
        ax.set_xlabel("Injected write rate achieved (MB/s)")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[cores[0]].set_ylabel("Triad bandwidth (MB/s)")
    notes += reservation_crossovers(axes, fits, paper)
    legend_below(fig, ncol=2)
    return fig, (f"Triad bandwidth (from the average Triad time unless labelled 'best rate') against the "
                 f"injection rate achieved into the same node, one point per job "
                 f"(the median of its rounds), a panel per core count; lines: least-squares fits (modelled, drawn "
                 f"where a series has three or more injection rates); dashed black: the paper's slope "
                 f"({paper_slope:g} B of DRAM bandwidth lost per injected B) from our intercept. "
                 f"{'; '.join(notes) or 'too few points for a fit'}. Series: {targets_note(targets)}. "
                 f"Paper: {citation}.")


def reservation_crossovers(axes, fits, paper):
    """Mark where each target's N-1-core line meets its N-core line (Groves 2017 Fig 2.21b: above it
    a reserved core gives more Triad) beside the paper's 400-500 MBps, in every panel of ``axes``
    ({cores: ax}); one caption note per target."""
    low, high = 400, 500       # the text: "an intersection near 400-500 MBps" (the CSV keeps 450)
    for ax in axes.values():
        tag(ax.axvspan(low, high, facecolor="none", edgecolor="black", hatch="..", lw=0, alpha=0.5,
                       label=paper_label(f"Groves 2017 crossover {low}-{high} MBps")), "paper")
    notes = []
    for target in sorted({t for t, _ in fits}):
        if (target, "all") not in fits or (target, "all-1") not in fits:
            continue
        try:
            x = crossover(fits[(target, "all")], fits[(target, "all-1")])
        except ValueError:
            notes.append(f"{target}: the two lines are parallel, no crossover")
            continue
        if x["reserved_beats_throttling_above"] and x["value"] > 0:
            for ax in axes.values():
                ax.axvline(x["value"], color=colour(target), ls="-.", lw=1)
            notes.append(f"{target}: a reserved core gives more Triad above {x['value']:,.0f} MB/s "
                         f"(modelled crossover of the two fits; Groves {low}-{high} MBps)")
        else:
            notes.append(f"{target}: the N-1-core line does not rise above the N-core line at any positive rate "
                         f"(modelled; Groves: above {low}-{high} MBps)")
    return notes


def app_slowdown(part):
    """(slowdown, time alone, time under injection) of one application's cases: each round's time
    over its run alone in the same job (figures.in_job_ratio); older runs: the off case's median."""
    loaded = part[part["injection"].astype(str) == "max"]
    off = part[part["injection"].astype(str) == "off"]["time_s"]
    return in_job_ratio(loaded, "time_s", "time_s_alone", off)[:3]


def slowdown_interval(part):
    """(low, high) of an application's slowdown: the extreme rounds' ratios against their runs alone
    in the same job; older runs: the extreme loaded time over the extreme time alone."""
    loaded = part[part["injection"].astype(str) == "max"]
    if "time_s_alone" in loaded and loaded["time_s_alone"].notna().any():
        pairs = loaded.dropna(subset=["time_s", "time_s_alone"])
        ratios = pairs["time_s"] / pairs["time_s_alone"]
        return float(ratios.min()), float(ratios.max())
    off = part[part["injection"].astype(str) == "off"]["time_s"]
    return float(loaded["time_s"].min() / off.max()), float(loaded["time_s"].max() / off.min())


@figure("nimc_table2_5")
def nimc_table2_5(perf, systems):
    """Application slowdown under unpaced injection, per application beside Groves 2017 Table 2.5."""
    paper, citation = read_paper_csv("groves2017_table2_5_apps_nimc.csv")
    cases = experiment_cases(perf, "nimc-apps", systems)
    notes, measured = [], {}
    method = perf[(perf.experiment == "nimc-apps") & perf.unit.astype(str).str.contains("HPCCG's method")]
    targets = ordered_targets(cases) if not cases.empty and "time_s" in cases else []
    for target in targets:
        for app, part in cases[cases.target == target].groupby("app"):
            name = app.upper()
            if app == "hpccg" and set(zip(part["run_id"], part["case"])) & set(zip(method["run_id"], method["case"])):
                name = "HPCCG's method"
            slowdown, alone, loaded = app_slowdown(part)
            if slowdown == slowdown:
                low, high = slowdown_interval(part)
                n = int((part["injection"].astype(str) == "max").sum())
                measured[(name, target)] = (slowdown, low, high, n)
                notes.append(f"{name} on {target}: {alone:.2f} s -> {loaded:.2f} s, slowdown {slowdown:.2f} "
                             f"(rounds {low:.2f}-{high:.2f}, n={n})")
    apps = list(paper["app"]) + sorted({a for a, _ in measured} - set(paper["app"]))
    fig, ax = plt.subplots(figsize=(9, 4.6))
    width = 0.8 / (1 + max(1, len(targets)))
    paper_bars(ax, [apps.index(a) - 0.4 + width / 2 for a in paper["app"]], paper["slowdown"], width,
               label="paper: Groves 2017 Table 2.5, Sandy Bridge-X2 onload")
    for k, target in enumerate(targets, start=1):
        pts = [(apps.index(a), v) for (a, t), v in measured.items() if t == target]
        if not pts:
            continue
        xs = [x - 0.4 + width / 2 + k * width for x, _ in pts]
        ax.bar(xs, [v[0] for _, v in pts], width, label=with_n(short(target), max(v[3] for _, v in pts)),
               **bar_style(target, targets))
        ax.errorbar(xs, [v[0] for _, v in pts], yerr=[[max(v[0] - v[1], 0) for _, v in pts],
                                                      [max(v[2] - v[0], 0) for _, v in pts]],
                    fmt="none", color="black", capsize=3, lw=0.8)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(range(len(apps)), apps, fontsize=8)
    ax.set_ylabel("Slowdown (time with / without injection, ratio)")
    ax.set_title("Application slowdown under unpaced write injection", fontsize=10)
    legend_below(fig, ncol=2)
    return fig, (f"Time to solution with unpaced 64 KiB write injection into the first node over the time "
                 f"without, run in turn in the same job (the median of each round's ratio; bars: the extreme "
                 f"rounds; older runs: medians and extremes of separate cases), per application beside the "
                 f"paper's (white hatched). Measured: {'; '.join(notes) or 'no local application runs yet'}. "
                 f"Series: {targets_note(targets)}. Paper: {citation}.")
