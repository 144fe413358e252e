"""RMA-MT, Groves 2017 §2.1 (spec: rma-mt)."""
from crosstalk.figures import experiment_cases, figure, no_data, plt, read_paper_csv


@figure("rmamt_threads")
def rmamt_threads(perf, systems):
    """RMA-MT bandwidth (largest size) and latency (smallest size) by threads, per synchronisation."""
    paper, citation = read_paper_csv("groves2017_rmamt_openmpi.csv")
    fig, (ax_bw, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.5))
    cases = experiment_cases(perf, "rma-mt", systems)
    if cases.empty:
        no_data(ax_bw, "RMA-MT")
        no_data(ax_lat, "RMA-MT")
    else:
        for (target, op, sync), part in cases.groupby(["target", "op", "sync"]):
            part = part.groupby("threads")[["bandwidth", "latency"]].median().reset_index()
            label = f"{target} {op} {sync}"
            ax_bw.plot(part["threads"], part["bandwidth"], marker="o", label=label)
            ax_lat.plot(part["threads"], part["latency"], marker="o", label=label)
        for ax, unit in ((ax_bw, "Bandwidth at the largest size (MiB/s)"),
                         (ax_lat, "Median epoch latency at the smallest size (us)")):
            ax.set_xlabel("Threads")
            ax.set_ylabel(unit)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(cases["threads"].unique()), [str(t) for t in sorted(cases["threads"].unique())])
            ax.grid(alpha=0.3)
            ax.set_ylim(bottom=0)
        ax_bw.legend(fontsize=7, ncol=2)
    quotes = [f"{r.mpi} {r.metric} {r.sync} t={r.threads}: {r.value:g} {r.unit} ({r.source})"
              for r in paper.itertuples()]
    fig.text(0.01, -0.02, "Paper (Skybridge, QDR IB): " + "; ".join(quotes[:5]), fontsize=6, wrap=True)
    fig.tight_layout()
    return fig, ("Multithreaded MPI one-sided communication (xt-rmamt, 2 ranks on 2 nodes, threads created "
                 "once): bandwidth at the largest message size and median latency per epoch at the smallest, "
                 f"by thread count, for each operation and synchronisation. Paper reference points: {citation}.")


#: Panels of the implementation comparison: metric, axis label.
MPI_PANELS = (("bandwidth", "Bandwidth, largest size (MiB/s)"), ("message_rate", "Message rate, smallest size (msgs/s)"),
              ("latency", "Median epoch latency, smallest size (us)"))


@figure("rmamt_mpis")
def rmamt_mpis(perf, systems):
    """The same RMA-MT cases under each MPI implementation a system offers (its environments),
    per operation and synchronisation, with each implementation's failed cases counted."""
    paper, citation = read_paper_csv("groves2017_rmamt_openmpi.csv")
    cases = experiment_cases(perf, "rma-mt", systems)
    ops = sorted(cases["op"].unique()) if not cases.empty else ["put"]
    fig, axes = plt.subplots(len(ops), len(MPI_PANELS), figsize=(14, 3.6 * len(ops)), squeeze=False)
    if cases.empty:
        for ax in axes.flat:
            no_data(ax, "RMA-MT")
    else:
        failed = perf[(perf.experiment == "rma-mt") & (perf.result == "fail")]
        for row, op in zip(axes, ops):
            for (system, partition, environ, sync), part in cases[cases.op == op].groupby(
                    ["system", "partition", "environ", "sync"]):
                medians = part.groupby("threads")[[m for m, _ in MPI_PANELS if m in part]].median().reset_index()
                style = "-" if environ == sorted(cases["environ"].unique())[0] else "--"
                for ax, (metric, _) in zip(row, MPI_PANELS):
                    if metric in medians:
                        ax.plot(medians["threads"], medians[metric], style, marker="o",
                                label=f"{system}:{partition} {environ} {sync}")
            for ax, (metric, label) in zip(row, MPI_PANELS):
                ax.set_title(f"{op}: {metric.replace('_', ' ')}", fontsize=9)
                ax.set_xlabel("Threads")
                ax.set_ylabel(label, fontsize=8)
                ax.set_xscale("log", base=2)
                ax.grid(alpha=0.3)
                ax.set_ylim(bottom=0)
            row[0].legend(fontsize=6, ncol=2)
        def n_cases(df):
            return len(df[["system", "partition", "case"]].drop_duplicates())
        counts = [f"{env}: {n_cases(failed[failed.environ == env])} failed of "
                  f"{n_cases(cases[cases.environ == env])} cases" for env in sorted(cases["environ"].unique())]
        fig.suptitle("; ".join(counts), fontsize=9)
    quotes = [f"{r.mpi} {r.metric} {r.sync} t={r.threads}: {r.value:g} {r.unit} ({r.source})"
              for r in paper.itertuples()]
    fig.tight_layout()
    return fig, ("RMA-MT under each MPI implementation of the system (solid: the first environment, dashed: "
                 "the other), per operation and synchronisation: bandwidth at the largest size, message rate "
                 "at the smallest and median latency per epoch, by thread count; failed cases counted above. "
                 "Groves measured MVAPICH (an MPICH derivative) and Open MPI on Skybridge (QDR InfiniBand) and "
                 "cautions against comparing the two directly; the paper's points: " + "; ".join(quotes)
                 + f" ({citation}).")
