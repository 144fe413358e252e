"""Link benchmark of the virtual cluster (a benchmark, not a test): ``crosstalk vcluster bench``.

* achieved/configured bandwidth: iperf3 (TCP, n1 -> n2) on a private 2-node cluster whose two
  links are set to each rate;
* bring-up time (``up`` until every slurmd is idle) and teardown time for N nodes.

Runs on clusters of its own (name ``vcbench``, 198.19.3.0/24), never on the shared one.
Writes results/vcluster/linkbench-<timestamp>.json and results/vcluster/linkbench.md.
"""
import datetime
import json
import os
import platform
import statistics
import time
from pathlib import Path

from crosstalk.errors import CrosstalkError
from crosstalk.vcluster import VCluster, parse_rate
from crosstalk.vcluster.iperf import iperf_flows

BENCH_NAME, BENCH_SUBNET = "vcbench", "198.19.3.0/24"


def _cluster(inventory, nodes):
    return VCluster.from_inventory(inventory, name=BENCH_NAME, subnet=BENCH_SUBNET, nodes=nodes)


def iperf(vc, seconds):
    """TCP throughput n1 -> n2 in bit/s (receiver side)."""
    return iperf_flows(vc, [("n1", "n2")], seconds)[0]


def bench_rates(inventory, rates, seconds, repeats):
    vc = _cluster(inventory, 2)
    vc.up()
    rows = []
    try:
        for rate in rates:
            bps = parse_rate(rate, "--rates")
            for n in vc.nodes:
                vc.set_link(n, rate=rate)
            # best of a few runs: the machine is shared, contention only lowers throughput
            runs = [round(iperf(vc, seconds)) for _ in range(repeats)]
            best = max(runs)
            rows.append({"rate": rate, "configured_bps": bps, "achieved_bps": best,
                         "efficiency": round(best / bps, 4), "runs_bps": runs,
                         "median_efficiency": round(statistics.median(runs) / bps, 4),
                         "tool": "iperf3 tcp", "seconds": seconds,
                         "loadavg": _loadavg()})
            print(f"  {rate:>8}: {best / 1e6:9.1f} Mbit/s  ({best / bps:6.1%}; median "
                  f"{statistics.median(runs) / bps:6.1%}, load {_loadavg()[0]})", flush=True)
    finally:
        vc.down()
    return rows


def _loadavg():
    return Path("/proc/loadavg").read_text().split()[:3]


def host_facts():
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "loadavg": _loadavg()}


def write_results(out, stem, doc, text):
    """``out/<stem>-<time>.json`` (the measurements) and ``out/<stem>.md`` (what the report shows)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}-{doc['time'].replace('-', '').replace(':', '')}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{stem}.md").write_text(text)
    print(f"wrote {path} and {out / f'{stem}.md'}")


def bench_bringup(inventory, sizes):
    rows = []
    for n in sizes:
        vc = _cluster(inventory, n)
        vc.down()                      # start from nothing
        t0 = time.monotonic()
        vc.up()
        t_up = time.monotonic() - t0
        t0 = time.monotonic()
        vc.up()
        t_noop = time.monotonic() - t0
        t0 = time.monotonic()
        vc.down()
        t_down = time.monotonic() - t0
        rows.append({"nodes": n, "up_s": round(t_up, 3), "noop_up_s": round(t_noop, 3),
                     "down_s": round(t_down, 3)})
        print(f"  N={n:>2}: up {t_up:6.2f} s, second up {t_noop:5.2f} s, down {t_down:5.2f} s",
              flush=True)
    return rows


def markdown(doc):
    lines = [f"# Virtual cluster link benchmark ({doc['time']})", "",
             f"Host: {doc['host']['kernel']}, {doc['host']['cpus']} CPUs, load before "
             f"{doc['host']['loadavg'][0]} (shared machine). iperf3 TCP n1 -> n2, "
             f"{doc['rates'][0]['seconds']} s per run, tbf on both ends of both links." if doc["rates"] else "", "",
             "| configured | achieved (best) | achieved/configured | median of runs | load |",
             "|---:|---:|---:|---:|---:|"]
    for r in doc["rates"]:
        lines.append(f"| {r['rate']} | {r['achieved_bps'] / 1e6:.1f} Mbit/s | "
                     f"{r['efficiency']:.1%} | {r['median_efficiency']:.1%} "
                     f"({len(r['runs_bps'])} runs) | {r['loadavg'][0]} |")
    lines += ["", "Bring-up: `up` from nothing until every slurmd is idle; second `up` (no-op); "
              "`down` (all processes gone).", "",
              "| nodes | up (s) | second up (s) | down (s) |", "|---:|---:|---:|---:|"]
    for r in doc["bringup"]:
        lines.append(f"| {r['nodes']} | {r['up_s']:.2f} | {r['noop_up_s']:.2f} | "
                     f"{r['down_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main(args):
    if os.geteuid() != 0:
        raise CrosstalkError("vcluster bench: needs root")
    rates = [r.strip() for r in args.rates.split(",") if r.strip()]
    for r in rates:
        parse_rate(r, "--rates")
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        raise CrosstalkError(f"--sizes: {args.sizes!r}: give node counts like 2,4,8,16") from None
    if any(not 1 <= s <= 16 for s in sizes):
        raise CrosstalkError(f"--sizes: {args.sizes!r}: node counts must be 1..16")
    now = datetime.datetime.now(datetime.timezone.utc)
    doc = {"time": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "host": host_facts()}
    print("link rate (iperf3):", flush=True)
    doc["rates"] = bench_rates(args.inventory, rates, args.seconds, args.repeats)
    print("bring-up:", flush=True)
    doc["bringup"] = bench_bringup(args.inventory, sizes)
    write_results(args.out, "linkbench", doc, markdown(doc))
    return 0
