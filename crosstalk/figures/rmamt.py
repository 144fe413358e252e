"""RMA-MT, Groves 2017 §2.1 (spec: rma-mt).

Message sizes are Groves' axis, the total split over the threads (a case's ``sizes`` parameter:
``total``). Cases recorded before that parameter gave each thread the whole size, so their T-thread
points sit at T times the total of their one-thread points: they are drawn as series of their own,
labelled "per-thread sizes", never pooled with the total-size ones. Our operation rate (``op_rate``,
two ranks) is not Groves' message rate (the SMB halo exchange with six neighbours) and is not drawn
beside his figures."""
import textwrap

import pandas as pd

from crosstalk.analysis.ingest import NO_ENVIRON
from crosstalk.figures import SERIES, experiment_cases, figure, no_data, ordered_targets, plt, read_paper_csv, summarise
from crosstalk.figures.style import errorbars, legend_below, paper_label, paper_line, short, targets_note

#: A case of T > 1 threads measures one thread too, in turn in the same process: its baselines.
ONE_THREAD = {"bandwidth": "bandwidth_one_thread", "op_rate": "op_rate_one_thread",
              "latency": "latency_one_thread"}
#: A case's ``sizes`` where it has none: recorded before the parameter, each thread moved the size.
OLD_SIZES = "per_thread"


def sizes_note(sizes):
    """A series label's suffix: nothing on Groves' axis (total sizes), else which axis it is on."""
    return "" if sizes == "total" else " (per-thread sizes)"


def threads_label(cases):
    """The thread axis's label, saying what a message size was in the series drawn (wrapped to a
    panel's width: the next panel's label sits beside it)."""
    kinds = set(cases["sizes"])
    if kinds == {"total"}:
        label = "Threads (the total message size split over them)"
    elif "total" not in kinds:
        label = "Threads (each moving the whole message size: per-thread sizes)"
    else:
        label = "Threads (the total message size split over them; per thread where marked)"
    return "\n".join(textwrap.wrap(label, 40))


def series_label(target, targets, sizes):
    """A series' legend label: its place, its MPI where the place has several, its sizes' axis."""
    several = sum(short(t) == short(target) for t in targets) > 1
    environ = f" {str(target).rpartition('+')[2]}" if several and "+" in str(target) else ""
    return f"{short(target)}{environ}{sizes_note(sizes)}"


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


def _series_stats(part, metric):
    """summarise()'s median, low, high and n of ``metric`` per thread count."""
    return summarise(part.rename(columns={metric: "value"}).dropna(subset=["value"]), ["threads"])


def _over_one_thread(ax, stats, target, label, targets):
    """Draw ``stats`` relative to the series' own one-thread median (Groves' quantities are growth
    from one thread); False where it has none to divide by."""
    one = stats.loc[stats["threads"] == 1, "median"]
    if not (len(one) and one.iloc[0] > 0):
        return False
    errorbars(ax, stats["threads"], stats, target, label, scale=one.iloc[0], targets=targets)
    return True


def _threads_axis(ax, threads, label):
    ax.set_xscale("log", base=2)
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.minorticks_off()
    ax.set_xlabel(label, fontsize=8)
    ax.grid(alpha=0.3)


def _groves_points(paper, sync):
    """Groves' (Skybridge, QDR IB) points for ``sync``, each relative to one thread as the text gives
    them: {"ratio": [(threads, B_T/B_1, label)], "latency": [(threads, L_T/L_1, label)]}, from the
    transcribed CSV (his 16-thread latencies are increases over one thread, with their factor)."""
    out = {"ratio": [], "latency": []}
    for r in paper.itertuples():
        if r.sync != sync:
            continue
        machine = f"Skybridge {r.mpi} ({r.source})"
        if str(r.metric).startswith("bandwidth_drop"):
            out["ratio"].append(([1, r.threads], [1.0, 1 - r.value / 100], machine))
        elif r.metric == "latency_growth_1_to_16_threads":
            out["latency"].append(([1, r.threads], [1.0, r.value], machine))
    return out


@figure("rmamt_threads")
def rmamt_threads(perf, systems):
    """RMA-MT bandwidth (largest size, relative to one thread) and latency (smallest size) by
    threads: a row per synchronisation, Groves' points on the same axes."""
    paper, citation = read_paper_csv("groves2017_rmamt_openmpi.csv")
    cases = rmamt_cases(perf, systems)
    syncs = sorted(cases["sync"].unique()) if not cases.empty else ["-"]
    ops = sorted(cases["op"].unique()) if not cases.empty else ["-"]
    fig, axes = plt.subplots(len(syncs), 2 * len(ops), figsize=(3.3 * 2 * len(ops) + 0.5, 2.5 * len(syncs) + 0.6),
                             squeeze=False)
    notes, targets = [], []
    if cases.empty:
        for ax in axes.flat:
            no_data(ax, "RMA-MT")
        fig.tight_layout()
    else:
        targets = ordered_targets(cases)
        threads = sorted(set(cases["threads"].astype(int)) | {16})
        for row, sync in zip(axes, syncs):
            groves = _groves_points(paper, sync)
            for op_i, op in enumerate(ops):
                ax_bw, ax_lat = row[op_i], row[len(ops) + op_i]
                for target in reversed(targets):            # the user's drawn last, on top
                    part = cases[(cases.target == target) & (cases.op == op) & (cases.sync == sync)]
                    for sizes, sub in part.groupby("sizes"):
                        label = series_label(target, targets, sizes)
                        bw = _series_stats(sub, "bandwidth")
                        if _over_one_thread(ax_bw, bw, target, label, targets):
                            notes.append(f"{short(target)} {op} {sync}{sizes_note(sizes)}: "
                                         + ", ".join(f"{int(t)} threads {m:.0f} MiB/s"
                                                     for t, m in zip(bw["threads"], bw["median"])))
                        _over_one_thread(ax_lat, _series_stats(sub, "latency"), target, label, targets)
                for x, y, machine in groves["ratio"]:
                    paper_line(ax_bw, x, y, paper_label(machine))
                for x, y, machine in groves["latency"]:
                    paper_line(ax_lat, x, y, paper_label(machine))
                for ax in (ax_bw, ax_lat):
                    ax.axhline(1.0, color="black", lw=0.6)
                ax_lat.set_ylim(bottom=0)
                ax_bw.set_title(f"{op}, {sync}: bandwidth", fontsize=8)
                ax_lat.set_title(f"{op}, {sync}: latency", fontsize=8)
                for ax in (ax_bw, ax_lat):
                    _threads_axis(ax, threads, "Threads")
                    ax.tick_params(labelsize=7)
            row[0].set_ylabel("bandwidth / 1-thread\nbandwidth (ratio)", fontsize=8)
            row[len(ops)].set_ylabel("latency / 1-thread\nlatency (ratio)", fontsize=8)
        axes[-1][0].set_xlabel(threads_label(cases), fontsize=8)
        legend_below(fig, ncol=3)
    return fig, ("Multithreaded MPI one-sided communication (xt-rmamt, 2 ranks on 2 nodes, threads created "
                 "once), a row per synchronisation: left columns, bandwidth at the largest total message size relative "
                 "to the same series' one-thread bandwidth (the quantity of Groves' drop from 1 to 16 threads); "
                 "right, median latency per epoch at the smallest size relative to the same series' one-thread "
                 "latency (Groves' growth from 1 to 16 threads); a column per operation. Points: medians "
                 "over repeats, bars: min-max, n in the legend. A size is the total "
                 "split over the threads (each of T threads moves size/T bytes), Groves' axis; series marked "
                 "\"per-thread sizes\" are runs recorded before that, whose T threads each moved the whole "
                 "size. Black open markers, dashed: Groves 2017 on Skybridge (QDR InfiniBand) from 1 to 16 threads "
                 "where the synchronisation is the same (his 1-thread Open MPI bandwidth is about 3065 MiB/s; "
                 "his latency rises by 88-365 us, the factors drawn). "
                 f"Measured: {'; '.join(notes) or 'none'}. Series: {targets_note(targets)}. Paper: {citation}.")
    return fig, "Multithreaded MPI one-sided communication (xt-rmamt): no local runs yet. Paper: " + citation + "."


#: Panels of the implementation comparison: metric, axis label. Groves' quantities only: his
#: message rate is the halo exchange's, which our two-rank op_rate is not.
MPI_PANELS = (("bandwidth", "bandwidth,\nlargest size (MiB/s)"),
              ("latency", "median epoch latency,\nsmallest size (us)"))


@figure("rmamt_mpis")
def rmamt_mpis(perf, systems):
    """The same RMA-MT cases under each MPI implementation a system offers (its environments):
    a column per synchronisation, a row per operation and quantity, a series per platform and MPI,
    with each implementation's failed cases counted."""
    paper, citation = read_paper_csv("groves2017_rmamt_openmpi.csv")
    cases = rmamt_cases(perf, systems)
    if cases.empty:
        fig, ax = plt.subplots(figsize=(8, 3))
        no_data(ax, "RMA-MT")
        fig.tight_layout()
        return fig, _mpis_caption(paper, citation, [])
    cases = cases.assign(environ=cases["environ"].fillna(NO_ENVIRON))
    ops, syncs = sorted(cases["op"].unique()), sorted(cases["sync"].unique())
    environs = sorted(cases["environ"].unique())
    rows = [(op, metric, label) for op in ops for metric, label in MPI_PANELS if metric in cases]
    fig, axes = plt.subplots(len(rows), len(syncs), figsize=(3.4 * len(syncs) + 1, 2.3 * len(rows) + 0.8),
                             squeeze=False)
    places = ordered_targets(cases.assign(target=cases["platform"] + ":" + cases["partition"]))
    threads = sorted(cases["threads"].astype(int).unique())
    for row, (op, metric, ylabel) in zip(axes, rows):
        for ax, sync in zip(row, syncs):
            for place in reversed(places):
                for env_i, environ in enumerate(environs):
                    for sizes, part in cases[(cases.platform + ":" + cases.partition == place) & (cases.op == op)
                                             & (cases.sync == sync) & (cases.environ == environ)].groupby("sizes"):
                        stats = _series_stats(part, metric)
                        errorbars(ax, stats["threads"], stats, place, f"{short(place)} {environ}{sizes_note(sizes)}",
                                  targets=places, linestyle="-" if env_i == 0 else "--")
            ax.set_title(f"{op}, {sync}", fontsize=8)
            ax.set_ylabel(f"{op}: {ylabel}" if sync == syncs[0] else "", fontsize=7)
            ax.set_ylim(bottom=0)
            _threads_axis(ax, threads, "Threads" if (op, metric) == rows[-1][:2] else "")
            ax.tick_params(labelsize=7)
    # failures of the drawn platforms only (a shipped example is another machine's)
    drawn = perf[(perf.experiment == "rma-mt") & perf["platform"].isin(cases["platform"].unique())]
    drawn = drawn.assign(environ=drawn["environ"].fillna(NO_ENVIRON))

    def n_cases(df):
        return len(df[["partition", "case"]].drop_duplicates())
    counts = []
    for (platform, environ), ran in cases.groupby(["platform", "environ"]):
        failed = drawn[(drawn.platform == platform) & (drawn.environ == environ) & (drawn.result == "fail")]
        counts.append(f"{short(platform)} {environ}: {n_cases(failed)} of {n_cases(ran)} failed")
    fig.suptitle("; ".join(counts), fontsize=8)
    legend_below(fig, ncol=3)
    return fig, _mpis_caption(paper, citation, places)


def _mpis_caption(paper, citation, places):
    quotes = [f"{r.mpi} {r.metric} {r.sync} t={r.threads}: {r.value:g} {r.unit} ({r.source})"
              for r in paper.itertuples()]
    return ("RMA-MT under each MPI implementation of the system (a column per synchronisation, a row per "
            "operation and quantity; colour: the platform, light grey: the shipped examples; solid: the first "
            "environment, dashed: the other; points: medians, bars: min-max, n in the legend): bandwidth at the "
            "largest total message size and median latency per epoch at the smallest, by thread count (a size is "
            "the total split over the threads; \"per-thread sizes\" marks runs recorded before, whose T threads "
            "each moved the whole size); failed cases counted above. Groves' message-rate figures (2.7, 2.10) are "
            "the Sandia micro-benchmarks' halo exchange with six neighbours, which two ranks cannot form: not "
            "drawn here (xt-rmamt's two-rank op_rate is recorded, not compared). Groves measured MVAPICH (an "
            "MPICH derivative) and Open MPI on Skybridge (QDR InfiniBand) and cautions against comparing the two "
            "directly; the paper's points: " + "; ".join(quotes) + f" ({citation}). Series: {targets_note(places)}.")
