"""perftest ib_write_bw: the real no-device errors (tests/fixtures/upstream/perftest) and the
bandwidth table (written here from perftest's documented layout: this machine has no RDMA device)."""
import pytest
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.parsers import perftest

DIR = REPO / "tests" / "fixtures" / "upstream" / "perftest"

# Layout of a perftest client's report (RDMA_Write BW Test, default MB/sec units). The numbers are
# made up for the test; units are kept as printed (MB/s, or Gb/s with --report_gbits).
TABLE = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 TX depth        : 128
 Mtu             : 4096[B]
 Link type       : IB
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      5000             11768.05            11765.10\t\t   0.188242
 131072     5000             11790.33            11789.91\t\t   0.094319
---------------------------------------------------------------------------------------
"""


@pytest.mark.parametrize("name", sorted(p.name for p in DIR.glob("*no_device.stderr.txt")))
def test_no_device(name):
    [rec] = perftest.parse(DIR / name)
    assert rec["failed"] and rec["reason"] == "no RDMA device" and rec["metric"] == "run_failed"
    assert "Unable to find the Infiniband/RoCE device" in rec["detail"]


def test_bandwidth_table():
    recs = perftest.parse("client.txt", TABLE)
    assert len(recs) == 6
    peak = [r for r in recs if r["metric"] == "bw_peak"]
    assert [(r["msg_bytes"], r["value"], r["unit"]) for r in peak] == \
        [(65536, 11768.05, "MB/s"), (131072, 11790.33, "MB/s")]
    avg = [r for r in recs if r["metric"] == "bw_average"][0]
    assert avg["value"] == 11765.10 and avg["device"] == "mlx5_0" and avg["iterations"] == 5000
    assert [r["value"] for r in recs if r["metric"] == "msg_rate"] == [0.188242, 0.094319]
    gbits = perftest.parse("g.txt", TABLE.replace("[MB/sec]", "[Gb/sec]"))
    assert gbits[0]["unit"] == "Gb/s"


def test_help_and_truncation():
    with pytest.raises(InputError, match="not ib_.*_bw output"):
        perftest.parse(DIR / "ib_write_bw_help.txt")
    lines = TABLE.splitlines(keepends=True)
    for n in range(1, len(lines)):
        with pytest.raises(InputError):
            perftest.parse("client.txt", "".join(lines[:n]))
    with pytest.raises(InputError, match="line 11: 4 fields"):
        perftest.parse("client.txt", TABLE.replace("   0.188242", ""))
