"""STREAM Triad (spec: stream)."""
from crosstalk.figures import figure, no_data, params_of, plt, read_paper_csv, summarise, with_target


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
    local_best = []
    if df.empty:
        no_data(ax_local, "STREAM Triad")
    else:
        df["threads"] = params_of(df).map(lambda p: int(p["threads"]))
        stats = summarise(df, ["target", "threads"])
        for target, part in stats.groupby("target"):
            part = part.sort_values("threads")
            yerr = [part["median"] - part["low"], part["high"] - part["median"]]
            ax_local.errorbar(part["threads"], part["median"] / 1000, yerr=[e / 1000 for e in yerr],
                              marker="o", capsize=3, label=f"{target} (n={int(part['n'].max())})")
            local_best.append((target, part["median"].max() / 1000))
        ax_local.set_xlabel("OpenMP threads")
        ax_local.set_ylabel("Triad bandwidth, from the average time (GB/s)")
        ax_local.set_xscale("log", base=2)
        ax_local.set_xticks(sorted(df["threads"].unique()), [str(t) for t in sorted(df["threads"].unique())])
        ax_local.set_ylim(bottom=0)
        ax_local.set_title("Measured here (median over repeats, bars: min-max)")
        ax_local.legend(fontsize=8)
        ax_local.grid(alpha=0.3)
    names = list(paper["machine"]) + [f"{t} (measured)" for t, _ in local_best]
    values = list(paper["triad_no_rdma_GBps"]) + [v for _, v in local_best]
    colors = ["#9aa5b1"] * len(paper) + ["#d9480f"] * len(local_best)
    ax_paper.barh(names, values, color=colors)
    ax_paper.invert_yaxis()
    ax_paper.set_xlabel("Triad bandwidth without injection (GB/s)")
    ax_paper.set_title("Groves 2017 Table 2.4 (grey) and the highest median measured here (orange)", fontsize=10)
    ax_paper.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    caption = ("STREAM Triad (xt-stream, 10^6 B/s, the rate from the average time of NTIMES iterations as "
               "Groves 2017 §2.2.4; '(best rate)': runs recorded before crosstalk measured the average) on one "
               "node of each local system, by OpenMP thread count; right: the paper's machines without RDMA injection. "
               f"Paper values: {citation}.")
    return fig, caption
