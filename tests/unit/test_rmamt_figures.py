"""RMA-MT's figures on Groves' size axis: a case of ``sizes: total`` splits each size over its threads;
a case recorded before that parameter gave each thread the whole size, so its series is kept apart and
labelled "per-thread sizes". The implementation comparison draws Groves' quantities only (bandwidth,
latency), never our two-rank op_rate beside his halo-exchange message rate."""
import json

import pandas as pd

from crosstalk.figures import plt
from crosstalk.figures.rmamt import rmamt_cases, rmamt_mpis, rmamt_threads


def _rows(threads, metrics, **params):
    case = {"op": "put", "sync": "lock", "threads": threads, **params}
    return [{"system": "s", "host_class": "h", "host_label": "l", "origin": "user", "platform": "s@h",
             "partition": "p", "environ": "ompi", "experiment": "rma-mt", "test": "RmaMt",
             "case": "RmaMt " + json.dumps(case), "params": json.dumps(case), "metric": metric, "value": value,
             "unit": "u", "sample": 0, "round": 0, "run_id": "r", "result": "pass"}
            for metric, value in metrics.items()]


#: A run on Groves' axis (one case of 2 threads measuring one thread too) and an older run (a case per
#: thread count, no ``sizes``, the old metric name).
PERF = pd.DataFrame(
    _rows(2, {"latency": 30.0, "latency_one_thread": 20.0, "bandwidth": 5.0, "bandwidth_one_thread": 9.0,
              "op_rate": 4.0, "op_rate_one_thread": 7.0}, sizes="total")
    + _rows(1, {"latency": 21.0, "bandwidth": 8.0, "message_rate": 6.0})
    + _rows(2, {"latency": 33.0, "bandwidth": 7.5, "message_rate": 9.0}))


def test_cases_before_the_sizes_parameter_are_per_thread_sizes_and_kept_apart():
    cases = rmamt_cases(PERF, ["s"])
    got = {(r.sizes, r.threads): (r.latency, r.bandwidth) for r in cases.itertuples()}
    assert got == {("total", 2): (30.0, 5.0), ("total", 1): (20.0, 9.0),     # its in-job baseline
                   ("per_thread", 1): (21.0, 8.0), ("per_thread", 2): (33.0, 7.5)}


def test_the_thread_figure_labels_each_axis_and_the_older_series():
    fig, caption = rmamt_threads(PERF, ["s"])
    ax_bw, ax_lat = fig.axes                 # one synchronisation and operation: one row of two
    labels = ax_lat.get_legend_handles_labels()[1]
    assert sorted(labels) == ["paper: Skybridge mvapich-2.1 (Fig 2.6 (almost 8X))",    # Groves' growth, same sync
                              "paper: Skybridge openmpi-2.x (Fig 2.9 (6X))",
                              "s:p (n=1)", "s:p (per-thread sizes) (n=1)"]
    assert " ".join(ax_bw.get_xlabel().split()) == \
        "Threads (the total message size split over them; per thread where marked)"
    assert ax_bw.get_title() == "put, lock: bandwidth" and "1-thread" in ax_bw.get_ylabel()
    assert "ratio" in ax_bw.get_ylabel()
    # latency relative to one thread, as Groves gives its growth (his 16-thread us are increases)
    assert "1-thread" in ax_lat.get_ylabel() and "ratio" in ax_lat.get_ylabel()
    lines = {c.get_label(): list(c.lines[0].get_ydata()) for c in ax_lat.containers}    # medians, error bars
    assert lines == {"s:p (n=1)": [1.0, 30.0 / 20.0], "s:p (per-thread sizes) (n=1)": [1.0, 33.0 / 21.0]}
    groves = {ln.get_label(): list(ln.get_ydata()) for ln in ax_lat.lines if ln.get_label().startswith("paper")}
    assert groves == {"paper: Skybridge mvapich-2.1 (Fig 2.6 (almost 8X))": [1.0, 8.0],
                      "paper: Skybridge openmpi-2.x (Fig 2.9 (6X))": [1.0, 6.0]}
    ratios = {c.get_label(): list(c.lines[0].get_ydata()) for c in ax_bw.containers}
    assert ratios == {"s:p (n=1)": [1.0, 5.0 / 9.0], "s:p (per-thread sizes) (n=1)": [1.0, 7.5 / 8.0]}
    assert "split over the threads" in caption and "per-thread sizes" in caption
    plt.close(fig)
    old_only = PERF[~PERF["params"].str.contains("sizes")]
    fig, _ = rmamt_threads(old_only, ["s"])
    assert " ".join(fig.axes[0].get_xlabel().split()) == \
        "Threads (each moving the whole message size: per-thread sizes)"
    plt.close(fig)


def test_the_implementation_comparison_draws_no_rate_beside_groves_message_rate():
    fig, caption = rmamt_mpis(PERF, ["s"])
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["put, lock", "put, lock"]
    assert [ax.get_ylabel().split(":")[1].split(",")[0].strip() for ax in fig.axes] == ["bandwidth",
                                                                                      "median epoch latency"]
    assert "six neighbours" in caption and "op_rate" in caption
    plt.close(fig)
