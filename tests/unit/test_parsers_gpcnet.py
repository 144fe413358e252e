"""GPCNeT stdout parser on the real fixtures (tests/fixtures/upstream/gpcnet) and broken variants."""
import pytest
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.models.congestion import congestion_impact
from crosstalk.parsers import gpcnet

DIR = REPO / "tests" / "fixtures" / "upstream" / "gpcnet"
FILES = sorted(p.name for p in DIR.glob("*.stdout.txt"))


def pick(records, **match):
    found = [r for r in records if all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]["value"]


def test_network_test_normal():
    recs = gpcnet.parse(DIR / "network_test_2nodes_1ppn.stdout.txt")
    assert len(recs) == 16                         # 8 tests x (Avg, 99%)
    assert pick(recs, metric="rr_two_sided_lat", stat="avg") == 23.5
    assert pick(recs, metric="rr_two_sided_lat", stat="p99") == 50.3
    assert pick(recs, metric="multiple_alltoall", stat="p99") == 42.7
    r = recs[0]
    assert (r["tool"], r["version"], r["ranks"], r["nodes"], r["unit"], r["msg_bytes"], r["condition"]) == \
        ("network_test", "1.3", 2, 2, "usec", 8, "isolated")


def test_network_test_verbose():
    recs = gpcnet.parse(DIR / "network_test_2nodes_1ppn_verbose.stdout.txt")
    assert len(recs) == 48                         # 8 tests x 6 statistics
    assert pick(recs, metric="rr_get_lat", stat="avg_worst") == 86.1
    assert pick(recs, metric="rr_two_sided_bw", stat="p999", unit="MiB/s/rank") == 671.3


def test_shaped_link_shows_in_bandwidth():
    plain = gpcnet.parse(DIR / "network_test_4nodes_1ppn.stdout.txt")
    shaped = gpcnet.parse(DIR / "network_test_4nodes_1ppn_n2_shaped_250mbit.stdout.txt")
    assert pick(plain, metric="rr_two_sided_bw", stat="avg") == 834.7
    assert pick(shaped, metric="rr_two_sided_bw", stat="avg") == 17.3


@pytest.mark.parametrize("name", ["network_load_test_10nodes_1ppn.stdout.txt",
                                  "network_load_test_10nodes_1ppn_verbose.stdout.txt"])
def test_key_results_are_the_tool_definition(name):
    # The tool's Key Results are loaded/isolated of the same statistic (Eq 1 for latency, Eq 2 for
    # bandwidth): e.g. normal file 668.7 / 24.4 = 27.41 -> "27.4X", 653.3 / 196.2 = 3.33 -> "3.3X";
    # verbose 980.9 / 228.2 = 4.298 -> "4.3X". Recomputing from the parsed tables must round to the
    # printed value for all six.
    recs = gpcnet.parse(DIR / name)
    assert pick(recs, metric="rr_two_sided_lat_ci", stat="avg") in (27.4, 27.6)
    for test, kind in (("rr_two_sided_lat", "latency"), ("rr_two_sided_bw_sync", "bandwidth"),
                       ("multiple_allreduce", "latency")):
        iso = {s: pick(recs, metric=test, stat=s, condition="isolated") for s in ("avg", "p99")}
        load = {s: pick(recs, metric=test, stat=s, condition="congested", role="canary") for s in ("avg", "p99")}
        for rec in congestion_impact(kind, iso, load, definition="tool"):
            assert round(rec["value"], 1) == pick(recs, metric=f"{test}_ci", stat=rec["ci_stat"]), (test, rec)


def test_load_test_layouts():
    normal = gpcnet.parse(DIR / "network_load_test_10nodes_1ppn.stdout.txt")
    assert len(normal) == 18                       # 3 isolated x 2 + 3 congested x 2 + 3 CI x 2
    assert normal[0]["network_nodes"] == 2 and normal[0]["congestor_nodes"] == 8
    verbose = gpcnet.parse(DIR / "network_load_test_10nodes_1ppn_verbose.stdout.txt")
    assert len(verbose) == 138                     # (3 + 4) x 6 isolated + 3 x 5 x 6 congested + 6 CI
    assert pick(verbose, metric="alltoall", stat="avg", condition="isolated") == 83.9
    assert pick(verbose, metric="put_incast", stat="avg", during="RR Two-sided Lat") == 24.0
    assert pick(verbose, metric="rr_two_sided_lat", stat="p99", condition="congested") == 2654.0


def line_prefixes(text):
    """Every proper prefix of ``text`` that ends at a line boundary, plus a few mid-line cuts."""
    ends = [i + 1 for i, c in enumerate(text) if c == "\n"][:-1]
    return [text[:i] for i in ends] + [text[:i] for i in range(7, len(text) - 1, max(1, len(text) // 9))]


@pytest.mark.parametrize("name", FILES)
def test_every_truncation_is_an_input_error(name):
    text = (DIR / name).read_text()
    assert gpcnet.parse(DIR / name)
    for prefix in line_prefixes(text):
        with pytest.raises(InputError) as err:
            gpcnet.parse(DIR / name, prefix)
        assert str(err.value).startswith(str(DIR / name)) and "\n" not in str(err.value)


def test_malformed_variants():
    path = DIR / "network_load_test_10nodes_1ppn.stdout.txt"
    text = path.read_text()
    with pytest.raises(InputError, match=r"line 16: Avg: not a number: '2x\.4'"):
        gpcnet.parse(path, text.replace("24.4 |", "2x.4 |", 1))
    with pytest.raises(InputError, match="cells, header has 4"):
        gpcnet.parse(path, text.replace("|         43.3 ", "", 1))
    with pytest.raises(InputError, match="Key Results: truncated: missing Multiple Allreduce"):
        cut = text.rindex("|        Multiple Allreduce (8 B)")
        gpcnet.parse(path, text[:cut] + text[cut:].split("\n", 2)[2])
    with pytest.raises(InputError, match="not GPCNeT output"):
        gpcnet.parse(path, "STREAM version $Revision: 5.10 $\n")
    with pytest.raises(InputError, match="no such file"):
        gpcnet.parse(DIR / "missing.txt")


HIST = DIR / "network_load_test_10nodes_verbose_p2p_latency_with_congestors.first200bins.dat"


def test_histogram():
    h = gpcnet.parse_histogram(HIST)
    assert h["test"] == "RR Two-sided Lat (8" and h["unit"] == "usec"
    assert len(h["counts"]) == 200 and h["counts"].sum() == 4301      # awk sum of column 3, rows 3-202
    assert h["values"][0] == 7.28350 and h["counts"][:3].tolist() == [4, 6, 4]
    assert h["values"][1] - h["values"][0] == pytest.approx(0.04049)   # bin width
    text = HIST.read_text()
    with pytest.raises(InputError, match="line 5: bin 3 where bin 2 was expected"):
        gpcnet.parse_histogram(HIST, text.replace("\n                   2 ", "\n                   3 ", 1))
    with pytest.raises(InputError, match="truncated: last line has no end of line"):
        gpcnet.parse_histogram(HIST, text[:-10])
    with pytest.raises(InputError, match="not a GPCNeT histogram"):
        gpcnet.parse_histogram(HIST, (DIR / "network_test_2nodes_1ppn.stdout.txt").read_text())
