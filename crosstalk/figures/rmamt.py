"""RMA-MT, Groves 2017 §2.1 (spec: rma-mt).

Message sizes are Groves' axis, the total split over the threads (a case's ``sizes`` parameter:
``total``). Cases recorded before that parameter gave each thread the whole size, so their T-thread
points sit at T times the total of their one-thread points: they are drawn as series of their own,
labelled "per-thread sizes", never pooled with the total-size ones. Our operation rate (``op_rate``,
two ranks) is not Groves' message rate (the SMB halo exchange with six neighbours) and is not drawn
beside his figures."""
import pandas as pd

from crosstalk.analysis.ingest import NO_ENVIRON
from crosstalk.figures import SERIES, experiment_cases, figure, no_data, plt, read_paper_csv

#: A case of T > 1 threads measures one thread too, in turn in the same process: its baselines.
ONE_THREAD = {"bandwidth": "bandwidth_one_thread", "op_rate": "op_rate_one_thread",
              "latency": "latency_one_thread"}
#: A case's ``sizes`` where it has none: recorded before the parameter, each thread moved the size.
OLD_SIZES = "per_thread"


def sizes_note(sizes):
    """A series label's suffix: nothing on Groves' axis (total sizes), else which axis it is on."""
    return "" if sizes == "total" else " (per-thread sizes)"


def threads_label(cases):
    """The thread axis's label, saying what a message size was in the series drawn."""
    kinds = set(cases["sizes"])
    if kinds == {"total"}:
        return "Threads (the total message size split over them)"
    if "total" not in kinds:
        return "Threads (each moving the whole message size: per-thread sizes)"
    return "Threads (the total message size split over them; per thread where marked)"


def rmamt_cases(perf, systems):
    """The RMA-MT cases, with a one-thread point from the one-thread baselines of the cases of more
    threads wherever a series has no one-thread case of its own (the quick profile runs none: every
    case measures it)."""
    cases = experiment_cases(perf, "rma-mt", systems)
    if cases.empty:
        return cases
    cases = cases.assign(sizes=cases["sizes"].fillna(OLD_SIZES) if "sizes" in cases else OLD_SIZES)
    series = [*SERIES, "op", "sync", "sizes"]
    text = cases[series].astype(str)
    key = text[series[0]].str.cat([text[c] for c in series[1:]], sep="|")
    own = set(key[cases["threads"] == 1])
    measured = {m: col for m, col in ONE_THREAD.items() if col in cases}
    donors = cases[(cases["threads"] > 1) & ~key.isin(own)]
    if donors.empty or not measured:
        return cases
    ones = donors.assign(threads=1, **{m: donors.get(col) for m, col in ONE_THREAD.items()})
    return pd.concat([cases, ones.dropna(subset=list(measured), how="all")], ignore_index=True)


def legend_below(fig, ax, top, ncol=3):
    """One legend, ``ax``'s, below the panels: in a panel it hid the data and squeezed the others."""
    handles, labels = ax.get_legend_handles_labels()
    rows = -(-len(labels) // ncol)
    fig.set_figheight(fig.get_figheight() + 0.17 * rows + 0.3)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, (0.17 * rows + 0.3) / fig.get_figheight(), 1, top))


@figure("rmamt_threads")
def rmamt_threads(perf, systems):
    """RMA-MT bandwidth (largest size) and latency (smallest size) by threads, per synchronisation."""
    paper, citation = read_paper_csv("groves2017_rmamt_openmpi.csv")
    fig, (ax_bw, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.5))
    cases = rmamt_cases(perf, systems)
    if cases.empty:
        no_data(ax_bw, "RMA-MT")
        no_data(ax_lat, "RMA-MT")
    else:
        for (target, op, sync, sizes), part in cases.groupby(["target", "op", "sync", "sizes"]):
            part = part.groupby("threads")[["bandwidth", "latency"]].median().reset_index()
            label = f"{target} {op} {sync}{sizes_note(sizes)}"
            ax_bw.plot(part["threads"], part["bandwidth"], marker="o", label=label)
            ax_lat.plot(part["threads"], part["latency"], marker="o", label=label)
        for ax, unit in ((ax_bw, "Bandwidth at the largest message size (MiB/s)"),
                         (ax_lat, "Median epoch latency at the smallest size (us)")):
            ax.set_xlabel(threads_label(cases))
            ax.set_ylabel(unit)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(cases["threads"].unique()), [str(t) for t in sorted(cases["threads"].unique())])
            ax.grid(alpha=0.3)
            ax.set_ylim(bottom=0)
    quotes = [f"{r.mpi} {r.metric} {r.sync} t={r.threads}: {r.value:g} {r.unit} ({r.source})"
              for r in paper.itertuples()]
    fig.text(0.01, -0.02, "Paper (Skybridge, QDR IB): " + "; ".join(quotes[:5]), fontsize=6, wrap=True)
    if cases.empty:
        fig.tight_layout()
    else:
        legend_below(fig, ax_bw, top=1, ncol=2)
    return fig, ("Multithreaded MPI one-sided communication (xt-rmamt, 2 ranks on 2 nodes, threads created "
                 "once): bandwidth at the largest total message size and median latency per epoch at the "
                 "smallest, by thread count, for each operation and synchronisation. A size is the total split "
                 "over the threads (each of T threads moves size/T bytes), Groves' axis; series marked "
                 "\"per-thread sizes\" are runs recorded before that, whose T threads each moved the whole "
                 f"size (T times the total). Paper reference points: {citation}.")


#: Panels of the implementation comparison: metric, axis label. Groves' quantities only: his
#: message rate is the halo exchange's, which our two-rank op_rate is not.
MPI_PANELS = (("bandwidth", "Bandwidth, largest size (MiB/s)"),
              ("latency", "Median epoch latency, smallest size (us)"))


@figure("rmamt_mpis")
def rmamt_mpis(perf, systems):
    """The same RMA-MT cases under each MPI implementation a system offers (its environments),
    per operation and synchronisation, with each implementation's failed cases counted."""
    paper, citation = read_paper_csv("groves2017_rmamt_openmpi.csv")
    cases = rmamt_cases(perf, systems)
    ops = sorted(cases["op"].unique()) if not cases.empty else ["put"]
    fig, axes = plt.subplots(len(ops), len(MPI_PANELS), figsize=(14, 3.6 * len(ops)), squeeze=False)
    if cases.empty:
        for ax in axes.flat:
            no_data(ax, "RMA-MT")
    else:
        cases = cases.assign(environ=cases["environ"].fillna(NO_ENVIRON))
        environs = sorted(cases["environ"].unique())
        syncs = sorted(cases["sync"].unique())
        colour = {sync: f"C{i % 10}" for i, sync in enumerate(syncs)}          # colour: synchronisation
        places = sorted(set(zip(cases["platform"], cases["partition"])))
        marker = {place: "osD^v<>"[i % 7] for i, place in enumerate(places)}  # marker: platform:partition
        for row, op in zip(axes, ops):
            for (platform, partition, environ, sync, sizes), part in cases[cases.op == op].groupby(
                    ["platform", "partition", "environ", "sync", "sizes"]):
                medians = part.groupby("threads")[[m for m, _ in MPI_PANELS if m in part]].median().reset_index()
                for ax, (metric, _) in zip(row, MPI_PANELS):
                    if metric in medians:
                        ax.plot(medians["threads"], medians[metric], color=colour[sync],
                                marker=marker[(platform, partition)],
                                linestyle="-" if environ == environs[0] else "--",   # style: MPI
                                label=f"{platform}:{partition} {environ} {sync}{sizes_note(sizes)}")
            for ax, (metric, label) in zip(row, MPI_PANELS):
                ax.set_title(f"{op}: {metric.replace('_', ' ')}", fontsize=9)
                ax.set_xlabel(threads_label(cases), fontsize=8)
                ax.set_ylabel(label, fontsize=8)
                ax.set_xscale("log", base=2)
                ax.grid(alpha=0.3)
                ax.set_ylim(bottom=0)
        # failures of the drawn platforms only (a shipped example is another machine's)
        drawn = perf[(perf.experiment == "rma-mt") & perf["platform"].isin(cases["platform"].unique())]
        drawn = drawn.assign(environ=drawn["environ"].fillna(NO_ENVIRON))

        def n_cases(df):
            return len(df[["partition", "case"]].drop_duplicates())
        counts = []
        for (platform, environ), ran in cases.groupby(["platform", "environ"]):
            failed = drawn[(drawn.platform == platform) & (drawn.environ == environ)
                           & (drawn.result == "fail")]
            counts.append(f"{platform} {environ}: {n_cases(failed)} of {n_cases(ran)} cases failed")
        fig.suptitle("; ".join(counts), fontsize=8)
        legend_below(fig, axes[0][0], top=0.97)
        return fig, _mpis_caption(paper, citation)
    fig.tight_layout()
    return fig, _mpis_caption(paper, citation)


def _mpis_caption(paper, citation):
    quotes = [f"{r.mpi} {r.metric} {r.sync} t={r.threads}: {r.value:g} {r.unit} ({r.source})"
              for r in paper.itertuples()]
    return ("RMA-MT under each MPI implementation of the system (colour: synchronisation; solid: the first "
            "environment, dashed: the other; marker: platform and partition), per operation: bandwidth at the "
            "largest total message size and median latency per epoch at the smallest, by thread count (a size is "
            "the total split over the threads; \"per-thread sizes\" marks runs recorded before, whose T threads "
            "each moved the whole size); failed cases counted above. Groves' message-rate figures (2.7, 2.10) are "
            "the Sandia micro-benchmarks' halo exchange with six neighbours, which two ranks cannot form: not "
            "drawn here (xt-rmamt's two-rank op_rate is recorded, not compared). Groves measured MVAPICH (an "
            "MPICH derivative) and Open MPI on Skybridge (QDR InfiniBand) and cautions against comparing the two "
            "directly; the paper's points: " + "; ".join(quotes) + f" ({citation}).")
