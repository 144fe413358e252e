"""E7 core mapping for real on the virtual cluster (the shared run, tests/shared_run.py: quick
profile, partition vcluster:mpi, every session).

Checked: every numbered core and every Table 3.2 mapping ran, the interrupt-core roles were
skipped as not applicable (the inventory names no interrupt core: a veth raises none), each rank
ran on exactly the core its mapping names and on the node round robin deals it (the ranks report
/proc/self/status after taskset), every window's messages arrived, and the values are sane:
streaming bandwidth is positive and cannot exceed the nodes' shaped link rate; LAMMPS'
communication time is part of its loop time. No per-core or per-mapping direction is asserted:
the virtual cluster's nodes all share the same two host cores, so which core "takes the
interrupts" is not a property of a node here, and the paper's ordering (Fig 3.1, Fig 3.11) has no
reason to reappear.
"""
import json
import shutil
from pathlib import Path

import pytest
from shared_run import SESSIONS
from vcluster_fixtures import REPO

pytestmark = [pytest.mark.root, pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def mapping_run(shared_run, vcluster):
    if shutil.which("lmp") is None:
        pytest.skip("lmp (LAMMPS) is not installed")
    tests = ("CoreStreamBandwidth", "CoreMappingLammps")
    report = json.loads((shared_run.run_dir / "report.json").read_text())
    return shared_run.perf_of(*tests), shared_run.cases_of(*tests), report, shared_run.run_dir, vcluster


def _params(row):
    return json.loads(row["params"])


def test_every_case_ran(mapping_run):
    from crosstalk.skips import is_platform
    perf, cases, *_ = mapping_run
    ran = [c for c in cases if c["result"] == "pass"]
    roles = [c for c in cases if str(_params(c).get("core")) in ("irq", "irq_sibling")]
    assert len(ran) + len(roles) == len(cases)
    assert all(c["result"] == "skip" and is_platform(c["reason"]) and "veth raises no NIC interrupts" in c["reason"]
               for c in roles) and len(roles) == 2 * SESSIONS
    bw = sorted(int(_params(c)["core"]) for c in ran if c["test"] == "CoreStreamBandwidth")
    lmp = sorted(_params(c)["mapping"] for c in ran if c["test"] == "CoreMappingLammps")
    assert bw == sorted([0, 1] * SESSIONS)
    assert lmp == sorted(["A", "A_prime", "B", "B_prime"] * SESSIONS)
    assert {r["metric"] for r in perf} == {"bandwidth", "time_s", "comm_s"}


def test_values_are_sane(mapping_run):
    from crosstalk.vcluster import tbf_burst
    perf, _, _, run_dir, vc = mapping_run
    # tbf shapes every node's link: the B bytes a measurement streams take at least (B - burst) /
    # rate, since only the token bucket's burst may pass at line speed. Rate: the fastest any link
    # had (the nominal one unless another job on the shared cluster raised it); 5 % for rounding.
    from crosstalk.specs import load_spec
    spec = load_spec("core-mapping")
    text = str(spec.setting("bw_msg_size", "quick")).upper()
    size = int(text.rstrip("KMG")) << {"K": 10, "M": 20, "G": 30}.get(text[-1], 0)
    size *= int(spec.setting("bw_window", "quick")) * int(spec.setting("bw_count", "quick"))
    prov = json.loads((run_dir / "provenance.json").read_text())
    rates = list(vc.node_rates.values())
    rates += [link["rate_bps"] for state in (prov.get("link_state") or {}, vc.link_state())
              for link in state.values()]
    rate = max(rates)
    limit_gbit = rate * size / (size - tbf_burst(rate)) / 1e9
    for r in perf:
        assert r["value"] > 0, r
        if r["metric"] == "bandwidth":
            assert r["value"] <= limit_gbit * 1.05, r
    by_case = {}
    for r in perf:
        by_case.setdefault(r["case"], {})[r["metric"]] = r["value"]
    for metrics in by_case.values():
        if "comm_s" in metrics:
            assert metrics["comm_s"] <= metrics["time_s"]


def _pins(report):
    import sys
    sys.path.insert(0, str(REPO / "reframe-tests"))
    from xtlib.pinning import parse_pin_lines
    out = {}
    for session, run in enumerate(report["runs"]):
        for tc in run["testcases"]:
            if tc["name"].startswith(("CoreStreamBandwidth", "CoreMappingLammps")) and tc["result"] == "pass":
                out[(session, tc["name"])] = (tc, parse_pin_lines(Path(tc["outputdir"]) / tc["job_stderr"]))
    return out


def test_ranks_on_mapped_cores_and_nodes(mapping_run):
    from crosstalk.specs import load_spec
    _, _, report, _, _ = mapping_run
    pins = _pins(report)                       # puts reframe-tests on the path
    from xtlib.pinning import node_cores, round_robin_cores
    assert len(pins) == 6 * SESSIONS
    for name, (tc, lines) in pins.items():
        assert lines, name
        for host, local_rank, core, allowed, _rank in lines:
            assert allowed == str(core), (name, host, local_rank)
        if tc["name"].startswith("CoreStreamBandwidth"):
            assert len(lines) == 2 and len({h for h, *_ in lines}) == 2       # one rank per node
            assert all(core == int(tc["core"]) for _, _, core, _, _ in lines)
            continue
        hosts = {int(rank): host for host, _, _, _, rank in lines}
        cores = {int(rank): core for _, _, core, _, rank in lines}
        assert sorted(hosts) == [0, 1, 2, 3]
        assert hosts[0] == hosts[2] and hosts[1] == hosts[3] and hosts[0] != hosts[1]     # round robin
        want = round_robin_cores(node_cores(load_spec("core-mapping").setting(
            f"cores_{tc['mapping'].lower()}", "quick")))
        assert [cores[r] for r in range(4)] == want, name
