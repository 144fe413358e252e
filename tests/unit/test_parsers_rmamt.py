"""RMA-MT parser on the real fixtures (tests/fixtures/upstream/rma-mt): CSV, stdout and failures."""
import pytest
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.parsers import rmamt

DIR = REPO / "tests" / "fixtures" / "upstream" / "rma-mt"


def values(records, metric):
    return {r["bytes_total"]: r["value"] for r in records if r["metric"] == metric}


def test_bw_csv_and_stdout_agree():
    csv = rmamt.parse(DIR / "rmamt_bw_get_fence_t1.csv")
    out = rmamt.parse(DIR / "rmamt_bw_get_fence_t1.stdout.txt")
    bw_csv, bw_out = values(csv, "bandwidth"), values(out, "bandwidth")
    assert len(bw_csv) == len(bw_out) == 21 and min(bw_csv) == 1 and max(bw_csv) == 1048576
    assert bw_csv[1048576] == 759.818125 and bw_out[1048576] == 759.818
    for size in bw_csv:                      # stdout keeps 3 decimals of the CSV's 6
        assert bw_out[size] == pytest.approx(bw_csv[size], abs=5e-4)
    rate = values(csv, "message_rate")
    assert rate[1] == 153871.009932          # messages per second despite the "M/s" label
    r = csv[0]
    assert (r["tool"], r["op"], r["sync"], r["threads"], r["iterations"], r["pairs"], r["windows"], r["unit"]) == \
        ("rmamt_bw", "get", "fence", 1, 100, 1, 1, "MiB/s")
    rmamt.check_complete(DIR / "rmamt_bw_get_fence_t1.csv", csv, 1048576)


def test_two_threads():
    recs = rmamt.parse(DIR / "rmamt_bw_get_flush_t2.csv")
    bw = [r for r in recs if r["metric"] == "bandwidth"]
    assert len(bw) == 20 and bw[0]["bytes_per_thread"] == 1 and bw[0]["bytes_total"] == 2
    assert bw[-1]["bytes_per_thread"] == 524288 and bw[-1]["value"] == 423.610411


def test_latency_layouts():
    csv = rmamt.parse(DIR / "rmamt_lat_get_fence_t1.csv")
    out = rmamt.parse(DIR / "rmamt_lat_get_fence_t1.stdout.txt")   # header "Latency (us)" with a space
    assert values(csv, "latency") == values(out, "latency")
    assert values(csv, "latency")[65536] == 1432.396362
    assert [r["value"] for r in out if r["metric"] == "thread_create_time"] == [2451461.0]
    assert csv[0]["ibarrier"] == "no" and csv[0]["sleep_interval_ns"] == 10000
    retry = rmamt.parse(DIR / "rmamt_lat_put_lock_all_t2_i10.csv")
    assert retry[0]["iterations"] == 10 and retry[0]["threads"] == 2


@pytest.mark.parametrize("name, reason", [
    ("rmamt_bw_get_fence_t2.FAILED-hang-timeout45s.stdout.txt", "hang-timeout45s; no data rows"),
    ("rmamt_lat_get_lock_t2.FAILED-timeout45s.stdout.txt", "timeout45s; no data rows"),
    ("rmamt_lat_put_fence_t2.FAILED-timeout45s.stderr.txt", "timeout45s; UCX endpoint timeout"),
    ("rmamt_bw_put_lock_all_t1.FAILED-osc-pt2pt-no-thread-multiple.stderr.txt",
     "osc-pt2pt-no-thread-multiple; osc/pt2pt does not support MPI_THREAD_MULTIPLE; "
     "window creation failed (MPI_ERR_WIN)"),
    ("rmamt_bw_put_lock_all_t1.FAILED-pml-ucx-not-selectable.stderr.txt",
     "pml-ucx-not-selectable; pml/ucx cannot be selected; no usable pml component"),
])
def test_failures_are_data(name, reason):
    [rec] = rmamt.parse(DIR / name)
    assert rec["failed"] and rec["metric"] == "run_failed" and rec["reason"] == reason
    assert rec["sync"] in ("fence", "lock", "lock_all") and rec["threads"] in (1, 2)


def test_failure_without_name_convention(tmp_path):
    # a header-only stdout under a plain name: the content alone says the run did not finish
    path = tmp_path / "out.txt"
    path.write_text((DIR / "rmamt_bw_get_fence_t2.FAILED-hang-timeout45s.stdout.txt").read_text())
    [rec] = rmamt.parse(path)
    assert rec["failed"] and "did not finish" in rec["reason"] and rec["threads"] == 2


def test_truncated_and_malformed():
    path = DIR / "rmamt_bw_get_fence_t1.csv"
    text = path.read_text()
    with pytest.raises(InputError, match="line 33: truncated: last line has no end of line"):
        rmamt.parse(path, text[:-20])                          # cut inside the last row
    with pytest.raises(InputError, match="line 13: 2 fields, expected 4"):
        rmamt.parse(path, text.replace("1,1,0.146743,153871.009932", "1,1", 1))
    with pytest.raises(InputError, match="size 4 does not follow 1: a row is missing"):
        rmamt.parse(path, text.replace("2,2,0.129334,67808.424926\n", "", 1))
    with pytest.raises(InputError, match="not a number: '0.1x'"):
        rmamt.parse(path, text.replace("0.146743", "0.1x", 1))
    with pytest.raises(InputError, match="header: truncated"):
        rmamt.parse(path, "".join(text.splitlines(keepends=True)[:6]))
    with pytest.raises(InputError, match="unexpected columns"):
        rmamt.parse(path, text.replace("Bandwidth(MiB/s)", "Latency(us)", 1))
    with pytest.raises(InputError, match="not RMA-MT output"):
        rmamt.parse(path, "hello\n")
    # a cut at a row boundary looks like a smaller -m: the caller's check_complete catches it
    cut = rmamt.parse(path, "".join(text.splitlines(keepends=True)[:25]))
    with pytest.raises(InputError, match="last size 4096 B, expected 1048576 B"):
        rmamt.check_complete(path, cut, 1048576)
