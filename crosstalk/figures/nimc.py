"""Network-induced memory contention, Groves 2017 §2.2 (specs: nimc-stream, nimc-apps)."""
from crosstalk.figures import experiment_cases, figure, groves_triad, in_job_ratio, no_data, plt, read_paper_csv
from crosstalk.models.throttling import crossover, fit_bandwidth_loss


@figure("nimc_table2_4")
def nimc_table2_4(perf, systems):
    """Triad alone vs under unpaced injection (all cores), beside Groves 2017 Table 2.4."""
    paper, citation = read_paper_csv("groves2017_table2_4_stream_nimc.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.4]})
    cases = experiment_cases(perf, "nimc-stream", systems)
    if cases.empty:
        no_data(ax_local, "NiMC STREAM")
    else:
        cases = groves_triad(cases[cases["cores"] == "all"])
        cases = cases.assign(load=cases["injection"].astype(str))
        rows = []
        for target, part in cases.groupby("target"):
            alone = part[part.load == "off"]["triad"].median() / 1000
            loaded = part[part.load == "max"]["triad"].median() / 1000
            label = target if part["triad_how"].iloc[0] == "average time" else f"{target}\n(best rate)"
            rows.append((label, alone, loaded))
        labels = [r[0] for r in rows]
        x = range(len(rows))
        ax_local.bar([i - 0.2 for i in x], [r[1] for r in rows], 0.4, label="alone", color="#4c6ef5")
        ax_local.bar([i + 0.2 for i in x], [r[2] for r in rows], 0.4, label="unpaced injection", color="#d9480f")
        for i, (_, alone, loaded) in enumerate(rows):
            if alone == alone and loaded == loaded:
                ax_local.annotate(f"{(loaded - alone) / alone:+.0%}", (i + 0.2, loaded), ha="center",
                                  va="bottom", fontsize=9)
        ax_local.set_xticks(list(x), labels, fontsize=8)
        ax_local.set_ylabel("Triad bandwidth (GB/s)")
        ax_local.set_title("Measured here (median over repeats)")
        ax_local.legend(fontsize=8)
    y = range(len(paper))
    ax_paper.barh([i - 0.2 for i in y], paper["triad_no_rdma_GBps"], 0.4, color="#9aa5b1", label="no RDMA")
    ax_paper.barh([i + 0.2 for i in y], paper["triad_rdma_GBps"], 0.4, color="#f08c00", label="RDMA writes")
    ax_paper.set_yticks(list(y), [f"{m} ({d:+.0f}%)" for m, d in zip(paper["machine"], paper["diff_pct"])],
                        fontsize=7)
    ax_paper.invert_yaxis()
    ax_paper.set_xlabel("Triad bandwidth (GB/s)")
    ax_paper.set_title("Groves 2017 Table 2.4", fontsize=10)
    ax_paper.legend(fontsize=8)
    fig.tight_layout()
    return fig, ("STREAM Triad (rate from the average Triad time, as Groves 2017 §2.2.4; '(best rate)': a "
                 "run recorded before crosstalk measured the average) on the injected node, alone and while 64 KiB "
                 "writes are injected into its "
                 "memory as fast as possible (xt-inject MPI_Put where no verbs device exists, ib_write_bw "
                 f"otherwise); STREAM on all cores. Right: {citation}.")


@figure("nimc_throttling")
def nimc_throttling(perf, systems):
    """Triad vs achieved injection rate, with the least-squares loss per injected byte."""
    paper, citation = read_paper_csv("groves2017_fig2_21b_throttling.csv")
    paper_slope = float(paper.set_index("quantity").loc["dram_bw_lost_per_rdma_bw", "value"])
    fig, ax = plt.subplots(figsize=(8, 5))
    cases = experiment_cases(perf, "nimc-stream", systems)
    notes = []
    if cases.empty:
        no_data(ax, "NiMC STREAM")
    else:
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
        fits = {}
        for (target, cores), part in cases.groupby(["target", "cores"]):
            part = part.dropna(subset=["injected_bw", "triad_bw"])
            how = "" if part["triad_how"].eq("average time").all() else " (best rate)"
            label = f"{target}{how}, STREAM on {'all cores' if cores == 'all' else 'all but one core'}"
            points = ax.scatter(part["injected_bw"], part["triad_bw"], label=label, s=22)
            if part["injected_bw"].nunique() >= 2 and len(part) >= 3:
                fit = fit_bandwidth_loss(part["injected_bw"], part["triad_bw"])
                fits[(target, cores)] = fit
                xs = [0, part["injected_bw"].max()]
                ax.plot(xs, [fit["intercept"] + fit["slope"] * x for x in xs], color=points.get_facecolor()[0],
                        lw=1)
                notes.append(f"{label}: {fit['value']:.1f} B lost per injected B "
                             f"(95% CI {fit['ci_low']:.1f} to {fit['ci_high']:.1f}, r²={fit['r2']:.2f}, "
                             f"n={fit['n']})")
        notes += reservation_crossovers(ax, fits, paper)
        ax.set_xlabel("Injected write rate achieved (MB/s)")
        ax.set_ylabel("Triad bandwidth (MB/s; from the average time unless labelled)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
    ax.set_title(f"Memory bandwidth lost per injected byte (paper: {paper_slope:g} B/B for DRAM)", fontsize=10)
    fig.tight_layout()
    fits = "; ".join(notes) if notes else "too few points for a fit"
    return fig, (f"Triad bandwidth against the injection rate achieved into the same node; lines: "
                 f"least-squares fits (modelled). {fits}. Paper: {citation}.")


def reservation_crossovers(ax, fits, paper):
    """Mark where each target's N-1-core line meets its N-core line (Groves 2017 Fig 2.21b: above it
    a reserved core gives more Triad) beside the paper's 400-500 MBps; one caption note per target."""
    low, high = 400, 500       # the text: "an intersection near 400-500 MBps" (the CSV keeps 450)
    ax.axvspan(low, high, color="#adb5bd", alpha=0.25, lw=0, label=f"Groves 2017: crossover {low}-{high} MBps")
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
            ax.axvline(x["value"], color="#343a40", ls="--", lw=1)
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


@figure("nimc_table2_5")
def nimc_table2_5(perf, systems):
    """Application slowdown under unpaced injection, beside Groves 2017 Table 2.5."""
    paper, citation = read_paper_csv("groves2017_table2_5_apps_nimc.csv")
    fig, ax = plt.subplots(figsize=(9, 5.5))     # room for the rotated per-target labels
    names = list(paper["app"])
    values = list(paper["slowdown"])
    colors = ["#9aa5b1"] * len(paper)
    cases = experiment_cases(perf, "nimc-apps", systems)
    notes = []
    method = perf[(perf.experiment == "nimc-apps") & perf.unit.astype(str).str.contains("HPCCG's method")]
    if not cases.empty and "time_s" in cases:
        for (target, app), part in cases.groupby(["target", "app"]):
            if app == "hpccg" and set(zip(part["run_id"], part["case"])) & set(zip(method["run_id"], method["case"])):
                app = "HPCCG's method (xt-hpccg)"
            slowdown, alone, loaded = app_slowdown(part)
            if slowdown == slowdown:
                names.append(f"{app if app.startswith('HPCCG') else app.upper()} ({target})")
                values.append(slowdown)
                colors.append("#d9480f")
                notes.append(f"{app} on {target}: {alone:.2f} s -> {loaded:.2f} s")
    ax.bar(names, values, color=colors)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_ylabel("Slowdown (time with / without injection)")
    ax.set_title("Groves 2017 Table 2.5 (grey, Sandy Bridge-X2 onload) and measured here (orange)", fontsize=10)
    ax.tick_params(axis="x", labelsize=8, rotation=30)
    plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")   # long labels end under their bar
    fig.tight_layout()
    measured = "; ".join(notes) if notes else "no local application runs yet"
    return fig, (f"Time to solution with unpaced 64 KiB write injection into the first node over the time "
                 f"without, run in turn in the same job (the median of each round's ratio). Measured: "
                 f"{measured}. Paper: {citation}.")
