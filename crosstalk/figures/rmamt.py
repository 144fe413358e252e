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
