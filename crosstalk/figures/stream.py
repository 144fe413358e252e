"""STREAM Triad (spec: stream)."""
from crosstalk.figures import figure, no_data, ordered_targets, params_of, plt, read_paper_csv, summarise, with_target
from crosstalk.figures.style import bar_style, errorbars, legend_below, paper_bars, short, targets_note


@figure("stream_triad")
def stream_triad(perf, systems):
    """STREAM Triad best bandwidth vs OpenMP threads, beside Groves 2017 Table 2.4 (no RDMA)."""
    paper, citation = read_paper_csv("groves2017_table2_4_stream_nimc.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.5),
                                             gridspec_kw={"width_ratios": [1, 1.3]})
    df = perf[(perf.experiment == "stream") & perf.metric.isin(["triad_bw", "triad_bw_avg"])].copy()
    if systems:
        df = df[df.system.isin(systems)]
    # Groves' way (the rate from the average time) where a platform's runs recorded it; else its best rate
    df = with_target(df)
    has_avg = df.groupby("target")["metric"].transform(lambda m: (m == "triad_bw_avg").any())
    df = df[(df.metric == "triad_bw_avg") | ~has_avg]
    df["target"] = df["target"].where(has_avg, df["target"] + " (best rate)")
    local_best, targets = [], []
    if df.empty:
        no_data(ax_local, "STREAM Triad")
    else:
        df["threads"] = params_of(df).map(lambda p: int(p["threads"]))
        stats = summarise(df, ["target", "threads"])
        targets = ordered_targets(df)
        for target in reversed(targets):
            part = stats[stats.target == target].sort_values("threads")
            errorbars(ax_local, part["threads"], part, target, short(target), scale=1000, targets=targets)
            local_best.append((target, part["median"].max() / 1000))
        ax_local.set_xlabel("OpenMP threads")
        ax_local.set_ylabel("Triad bandwidth (GB/s)")
        ax_local.set_xscale("log", base=2)
        ax_local.set_xticks(sorted(df["threads"].unique()), [str(t) for t in sorted(df["threads"].unique())])
        ax_local.minorticks_off()
        ax_local.set_ylim(bottom=0)
        ax_local.set_title("Measured here: medians, bars min-max", fontsize=9)
        ax_local.grid(alpha=0.3)
    local_best = sorted(local_best, key=lambda tv: targets.index(tv[0]))
    paper_bars(ax_paper, range(len(paper)), paper["triad_no_rdma_GBps"], 0.7, horizontal=True,
               label="paper: Groves 2017 Table 2.4 machines, no injection")
    for k, (target, value) in enumerate(local_best):
        ax_paper.barh(len(paper) + k, value, 0.7, **bar_style(target, targets))
    ax_paper.set_yticks(range(len(paper) + len(local_best)),
                        list(paper["machine"]) + [short(t, 22) for t, _ in local_best], fontsize=7)
    ax_paper.invert_yaxis()
    ax_paper.set_xlabel("Triad bandwidth without injection (GB/s)")
    ax_paper.set_title("The highest median here, beside the paper's machines", fontsize=9)
    legend_below(fig, ncol=3)
    caption = ("STREAM Triad (xt-stream, 10^6 B/s, the rate from the average time of NTIMES iterations as "
               "Groves 2017 §2.2.4; '(best rate)': runs recorded before crosstalk measured the average) on one "
               "node of each local system, by OpenMP thread count (medians over repeats, bars min-max, n in the "
               "legend); right: the highest median of each beside the paper's machines without RDMA injection "
               "(white hatched). "
               f"Series: {targets_note(targets)}. Paper values: {citation}.")
    return fig, caption
