"""The papers' figures, redrawn from local runs beside the papers' numbers.

Each figure id (listed in an experiment spec under ``figures``) maps to a function
``draw(perf, systems) -> (Figure, caption)``; ``perf`` is the tidy table from ``crosstalk.ingest``.
"""
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from crosstalk import REPO_ROOT  # noqa: E402

PAPERS_DIR = REPO_ROOT / "results" / "papers"
FIGURES = {}


def figure(fig_id):
    def register(fn):
        FIGURES[fig_id] = fn
        return fn
    return register


def read_paper_csv(name):
    """A transcribed paper table and its citation (the leading ``#`` line)."""
    path = PAPERS_DIR / name
    with open(path) as fp:
        first = fp.readline()
    citation = first.lstrip("# ").strip() if first.startswith("#") else name
    return pd.read_csv(path, comment="#"), citation


def _params(df):
    return df["params"].map(json.loads)


def _label(row_system, row_partition):
    return f"{row_system}:{row_partition}"


def summarise(df, by):
    """Median and range over repeats (and runs) of each group."""
    g = df.groupby(by)["value"]
    return g.agg(median="median", low="min", high="max", n="count").reset_index()


def no_data(ax, what):
    ax.text(0.5, 0.5, f"no local data for {what} yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


@figure("stream_triad")
def stream_triad(perf, systems):
    """STREAM Triad best bandwidth vs OpenMP threads, beside Groves 2017 Table 2.4 (no RDMA)."""
    paper, citation = read_paper_csv("groves2017_table2_4_stream_nimc.csv")
    fig, (ax_local, ax_paper) = plt.subplots(1, 2, figsize=(12, 4.5),
                                             gridspec_kw={"width_ratios": [1, 1.3]})
    df = perf[(perf.experiment == "stream") & (perf.metric == "triad_bw")].copy()
    if systems:
        df = df[df.system.isin(systems)]
    local_best = []
    if df.empty:
        no_data(ax_local, "STREAM Triad")
    else:
        df["threads"] = _params(df).map(lambda p: int(p["threads"]))
        df["target"] = [_label(s, p) for s, p in zip(df.system, df.partition)]
        stats = summarise(df, ["target", "threads"])
        for target, part in stats.groupby("target"):
            part = part.sort_values("threads")
            yerr = [part["median"] - part["low"], part["high"] - part["median"]]
            ax_local.errorbar(part["threads"], part["median"] / 1000, yerr=[e / 1000 for e in yerr],
                              marker="o", capsize=3, label=f"{target} (n={int(part['n'].max())})")
            local_best.append((target, part["median"].max() / 1000))
        ax_local.set_xlabel("OpenMP threads")
        ax_local.set_ylabel("Triad bandwidth, best of NTIMES (GB/s)")
        ax_local.set_xscale("log", base=2)
        ax_local.set_xticks(sorted(df["threads"].unique()), [str(t) for t in sorted(df["threads"].unique())])
        ax_local.set_ylim(bottom=0)
        ax_local.set_title("Measured here (median over repeats, bars: min-max)")
        ax_local.legend(fontsize=8)
        ax_local.grid(alpha=0.3)
    names = list(paper["machine"]) + [f"{t} (local)" for t, _ in local_best]
    values = list(paper["triad_no_rdma_GBps"]) + [v for _, v in local_best]
    colors = ["#9aa5b1"] * len(paper) + ["#d9480f"] * len(local_best)
    ax_paper.barh(names, values, color=colors)
    ax_paper.invert_yaxis()
    ax_paper.set_xlabel("Triad bandwidth without injection (GB/s)")
    ax_paper.set_title("Groves 2017 Table 2.4 (grey) and this run's best (orange)", fontsize=10)
    ax_paper.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    caption = ("STREAM Triad (xt-stream, best rate of NTIMES iterations, 10^6 B/s) on one node of each "
               "local system, by OpenMP thread count; right: the paper's machines without RDMA injection. "
               f"Paper values: {citation}.")
    return fig, caption


def draw(fig_id, perf, systems, png, svg):
    """Draw one figure to PNG and SVG; returns its caption."""
    fig, caption = FIGURES[fig_id](perf, systems)
    fig.savefig(png, dpi=110)
    fig.savefig(svg)
    plt.close(fig)
    return caption
