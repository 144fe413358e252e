"""perftest ``ib_write_bw`` (and the other ``ib_*_bw`` tools) stdout/stderr.

The bandwidth table ``#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]``
(``[Gb/sec]`` with ``--report_gbits``) gives per row ``bw_peak`` and ``bw_average`` (unit from the
header) and ``msg_rate`` (Mpps), stat ``peak``/``avg``, with ``msg_bytes`` and ``iterations``.
Header lines ``Device : mlx5_0``, ``Link type : IB``, ``Mtu : 4096[B]`` ... become params.
A machine without RDMA hardware ("Did not detect devices" / "Unable to find the Infiniband/RoCE
device") gives a ``run_failed`` record with reason "no RDMA device".
"""
import re

from crosstalk.errors import InputError
from crosstalk.parsers import failure, number, read_text, record

NO_DEVICE = ("Did not detect devices", "Unable to find the Infiniband/RoCE device", "No IB devices found")
_TITLE = re.compile(r"^\s*(RDMA_Write|RDMA_Read|Send|Atomic)\s+(BW|Bidirectional BW) Test")
_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[[^\]]+\]\s+MsgRate\[Mpps\]")
PARAMS = {"Device": "device", "Link type": "link_type", "Mtu": "mtu", "Connection type": "connection",
          "Number of qps": "qps", "Transport type": "transport", "TX depth": "tx_depth"}


def parse(path, text=None):
    """Records of one ib_*_bw output (stdout, or stderr for the no-device error)."""
    text = read_text(path, text)
    if any(sig in text for sig in NO_DEVICE):
        return [failure("ib_write_bw", "no RDMA device",
                        detail=" / ".join(line.strip() for line in text.splitlines() if line.strip()))]
    lines = text.splitlines()
    tool = "ib_write_bw"
    params, out, unit, start = {}, [], None, None
    for no, line in enumerate(lines, 1):
        if m := _TITLE.match(line):
            tool = f"ib_{m[1].split('_')[-1].lower()}_bw"
        for key, value in re.findall(r"([A-Za-z][A-Za-z .()]*?)\s*:\s*(\S+)", line) if unit is None else []:
            if key.strip() in PARAMS:
                params[PARAMS[key.strip()]] = value
        if m := _HEADER.search(line):
            unit, start = m["unit"].replace("sec", "s"), no
            continue
        if unit is None or not line.strip() or line.strip().startswith("-"):
            continue
        cells = line.split()
        if len(cells) != 5:
            raise InputError(path, f"line {no}", f"{len(cells)} fields in the bandwidth table, expected 5")
        size, iters, peak, avg, rate = (number(c, path, f"line {no}") for c in cells)
        row = {"msg_bytes": int(size), "iterations": int(iters), **params}
        out += [record(tool, "bw_peak", peak, unit, "peak", **row),
                record(tool, "bw_average", avg, unit, "avg", **row),
                record(tool, "msg_rate", rate, "Mpps", "avg", **row)]
    if unit is None:
        raise InputError(path, "bandwidth table", "not ib_*_bw output: no '#bytes #iterations BW peak' header")
    if not out:
        raise InputError(path, f"line {start}", "truncated: bandwidth table has no rows")
    if not lines[-1].strip().startswith("-") or not text.endswith("\n"):
        raise InputError(path, f"line {len(lines)}", "truncated: the table's closing '----' line is missing")
    return out
