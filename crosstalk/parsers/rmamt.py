"""RMA-MT ``rmamt_bw`` / ``rmamt_lat`` output: the ``-r`` CSV file, stdout, and failed runs.

Both layouts start with the same ``#`` header block (Operation, Sync, Thread count, ...). Columns:
CSV ``BpT(N),BxT(N),Bandwidth(MiB/s),Message_Rate(M/s)`` or ``...,Latency(us)``; stdout the same
names tab-separated (bw space-padded; lat prints ``Latency (us)``). Records per row:
``bandwidth`` (MiB/s) and ``message_rate`` (unit ``msg/s``: the values are messages per second
despite the ``M/s`` label) or ``latency`` (us), stat ``avg``, with ``bytes_per_thread``,
``bytes_total``, ``op``, ``sync``, ``threads``, ``iterations``, ``pairs``, ``windows``, ``bench``.
Latency stdout also gives ``thread_create_time`` (ns, stat ``max``).

Failed runs are data: a file named ``*.FAILED-<reason>.*`` (the fixtures' convention), a header
without rows (hang or timeout), or stderr of a failed launch gives a ``run_failed`` record whose
``reason`` combines the name's reason and what the content says.
"""
import re
from pathlib import Path

from crosstalk.errors import InputError
from crosstalk.parsers import failure, number, read_text, record, require_newline

_NAME = re.compile(r"(?P<bench>rmamt_(?:bw|lat))_(?P<op>put|get)_(?P<sync>[a-z_]+?)_t(?P<threads>\d+)"
                   r"(?:_i(?P<iterations>\d+))?(?:\.FAILED-(?P<reason>[^.]+))?\.")
_FIELDS = {"Operation": ("op", str), "Sync": ("sync", str), "Thread count": ("threads", int),
           "Number of MPI process pairs": ("pairs", int), "Iterations": ("iterations", int),
           "Bind worker threads": ("bind", str), "Number of windows": ("windows", int)}
#: content of stderr/stdout -> reason
SIGNATURES = [
    ("Endpoint timeout", "UCX endpoint timeout"),
    ("does not support MPI_THREAD_MULTIPLE", "osc/pt2pt does not support MPI_THREAD_MULTIPLE"),
    ("PML ucx cannot be selected", "pml/ucx cannot be selected"),
    ("No components were able to be opened in the pml framework", "no usable pml component"),
    ("MPI_ERR_WIN", "window creation failed (MPI_ERR_WIN)"),
]
COLUMNS = {"rmamt_bw": ["BpT", "BxT", "Bandwidth(MiB/s)", "Message_Rate(M/s)"],
           "rmamt_lat": ["BpT", "BxT", "Latency(us)"]}


def _drop(params, key):
    return {k: v for k, v in params.items() if k != key}


def _name_params(path):
    m = _NAME.search(Path(path).name + ".")
    if not m:
        return {}, None
    params = {"bench": m["bench"], "op": m["op"], "sync": m["sync"], "threads": int(m["threads"])}
    if m["iterations"]:
        params["iterations"] = int(m["iterations"])
    return params, m["reason"]


def _content_reasons(text):
    return [reason for sig, reason in SIGNATURES if sig in text]


def _header(path, lines):
    """(params, 0-based index of the column line) from the '#' block."""
    params, i = {}, 1
    while i < len(lines) and not lines[i].startswith("####"):
        key, _, value = lines[i].lstrip("# ").partition(":")
        if key == "RMA-MT Bandwidth":
            params["bench"] = "rmamt_bw"
        elif key == "RMA-MT Latency":
            params["bench"] = "rmamt_lat"
        elif key == "Ibarrier":                 # "no, sleep interval: 10000ns"
            flag, _, sleep = value.partition(", sleep interval:")
            params["ibarrier"] = flag.strip()
            if sleep.strip():
                params["sleep_interval_ns"] = int(number(sleep.strip().removesuffix("ns"), path, f"line {i + 1}"))
        elif key in _FIELDS:
            name, cast = _FIELDS[key]
            try:
                params[name] = cast(value.strip())
            except ValueError:
                raise InputError(path, f"line {i + 1}: {key}", f"bad value {value.strip()!r}") from None
        i += 1
    if i >= len(lines) - 1 or "bench" not in params:
        raise InputError(path, "header", "truncated: the '#' header block or the column line is missing")
    return params, i + 1


def _columns(path, line, no, bench):
    names = [re.sub(r"\(\d+\)$", "", c.replace(" ", "")) for c in re.split(r"[,\t]+", line.strip())]
    if names != COLUMNS[bench]:
        raise InputError(path, f"line {no}", f"unexpected columns {names}, expected {COLUMNS[bench]}")


def _rows(path, lines, start, params):
    out, prev, tool = [], None, params["bench"]
    threads = params.get("threads", 1)
    base = {k: v for k, v in params.items() if k != "bench"}
    for no, line in enumerate(lines[start:], start + 1):
        if not line.strip():
            continue
        if line.startswith("Max time for thread create:"):
            ns = line.split(":", 1)[1].strip().removesuffix("ns").strip()
            out.append(record(tool, "thread_create_time", number(ns, path, f"line {no}"), "ns", "max", **base))
            continue
        cells = [c for c in re.split(r"[,\s]+", line.strip()) if c]
        if len(cells) != len(COLUMNS[tool]):
            raise InputError(path, f"line {no}", f"{len(cells)} fields, expected {len(COLUMNS[tool])}")
        values = [number(c, path, f"line {no}") for c in cells]
        bpt, bxt = int(values[0]), int(values[1])
        if bxt != bpt * threads:
            raise InputError(path, f"line {no}", f"BxT {bxt} != BpT {bpt} x {threads} threads")
        if prev is not None and bpt != 2 * prev:
            raise InputError(path, f"line {no}", f"size {bpt} does not follow {prev}: a row is missing")
        prev = bpt
        sizes = {"bytes_per_thread": bpt, "bytes_total": bxt}
        if tool == "rmamt_bw":
            out.append(record(tool, "bandwidth", values[2], "MiB/s", "avg", **sizes, **base))
            out.append(record(tool, "message_rate", values[3], "msg/s", "avg", **sizes, **base))
        else:
            out.append(record(tool, "latency", values[2], "us", "avg", **sizes, **base))
    return out


def parse(path, text=None):
    """Records of one RMA-MT output file (CSV, stdout or stderr of a failed run)."""
    text = read_text(path, text)
    params, name_reason = _name_params(path)
    lines = text.splitlines()
    found = _content_reasons(text)
    if not lines or not lines[0].startswith("####"):
        if name_reason or found or Path(path).name.endswith("stderr.txt") or not text.strip():
            first = next((line.strip() for line in lines if line.strip()), "empty output")
            reason = "; ".join([r for r in [name_reason] if r] + (found or [first]))
            return [failure(params.get("bench", "rmamt"), reason, **_drop(params, "bench"))]
        raise InputError(path, "line 1", "not RMA-MT output (no '####' header block)")
    require_newline(path, text)
    header, col = _header(path, lines)
    params.update(header)
    _columns(path, lines[col], col + 1, params["bench"])
    rows = _rows(path, lines, col + 1, params)
    data = [r for r in rows if r["metric"] != "thread_create_time"]
    reasons = [r for r in [name_reason] if r] + found
    if not data:
        reasons.append("no data rows" if reasons else "no data rows: the run did not finish (hang or timeout)")
    if reasons:
        rows.append(failure(params["bench"], "; ".join(reasons), **_drop(params, "bench")))
    return rows


def check_complete(path, records, max_bytes):
    """InputError unless the rows reach ``max_bytes`` (the run's ``-m``): a cut at a row boundary
    looks exactly like a smaller ``-m``, so only the caller, who knows ``-m``, can tell."""
    sizes = [r["bytes_total"] for r in records if "bytes_total" in r]
    if any(r.get("failed") for r in records) and not sizes:
        return
    if not sizes or max(sizes) < max_bytes:
        raise InputError(path, "rows", f"truncated: last size {max(sizes, default=0)} B, expected {max_bytes} B (-m)")
