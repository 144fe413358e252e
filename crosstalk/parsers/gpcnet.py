"""GPCNeT ``network_test`` / ``network_load_test`` stdout (v1.3, normal and ``-DVERBOSE`` layouts).

Records: one per table cell, ``metric`` = slug of the test name (``rr_two_sided_lat``), ``stat`` in
min, max, avg, avg_worst, p99, p999 (verbose adds min/max/avg_worst/p999), ``unit`` from the Units
column, plus ``test`` (printed name), ``msg_bytes``, ``condition`` (``isolated``/``congested``),
``role`` (``canary``/``congestor``), ``during`` (verbose: the canary test a congested table belongs
to), ``tool``, ``version``, ``ranks``, ``nodes`` (and ``network_nodes``, ``congestor_nodes``).
The Key Results table gives ``metric`` = ``<slug>_ci``, unit ``x``, ``condition="impact"`` and
``definition="tool"``: loaded / isolated of the same statistic (Chunduri et al. SC19, Eq 1-2).
Bandwidth ``p99`` is the slow tail, so it is usually below ``avg``.
``parse_histogram`` reads the verbose build's latency histograms (``*.dat``).
"""
import re

import numpy as np

from crosstalk.errors import InputError
from crosstalk.parsers import number, read_text, record, require_newline, slug

NETWORK_TEST_ROWS = ["RR Two-sided Lat", "RR Get Lat", "RR Two-sided BW", "RR Put BW",
                     "RR Two-sided BW+Sync", "Nat Two-sided BW", "Multiple Allreduce", "Multiple Alltoall"]
LOAD_TEST_CANARIES = ["RR Two-sided Lat", "RR Two-sided BW+Sync", "Multiple Allreduce"]
LOAD_TEST_CONGESTORS = ["Alltoall", "Two-sided Incast", "Put Incast", "Get Bcast"]
STATS = {"Min": "min", "Max": "max", "Avg": "avg", "Avg(Worst)": "avg_worst", "99%": "p99", "99.9%": "p999"}
_HEAD = re.compile(r"^(?P<kind>Network|NetworkLoad) Tests v(?P<version>\S+)")
_RANKS = re.compile(r"Test with (\d+) MPI ranks \((\d+) nodes\)")
_SPLIT = re.compile(r"(\d+) nodes running (Network|Congestion) Tests")
_NAME = re.compile(r"^(?P<test>.+?) \((?P<bytes>\d+) B\)$")
_DURING = re.compile(r"Network Tests running with Congestion Tests \(\s*(?P<test>.+?) Network Test\)")


def _tables(path, lines):
    """[(title, columns, [(line_no, cells)])] from the boxed tables."""
    tables, current, pending_key_header = [], None, False
    for no, line in enumerate(lines, 1):
        if not line.startswith("|"):
            continue
        if not line.rstrip().endswith("|"):
            raise InputError(path, f"line {no}", f"truncated table line: {line.strip()[:50]!r}")
        cells = [c.strip() for c in line.strip()[1:-1].split("|")]
        if len(cells) == 1:
            current = {"title": cells[0], "columns": None, "rows": []}
            tables.append(current)
        elif current is None:
            raise InputError(path, f"line {no}", "table row before any table title")
        elif cells[0] == "Name":
            pending_key_header = cells[1:] == ["Congestion Impact Factor"]
            current["columns"] = None if pending_key_header else cells[1:]
        elif pending_key_header and cells[0] == "":
            current["columns"], pending_key_header = cells[1:], False
        elif current["columns"] is None:
            raise InputError(path, f"line {no}", f"row without a header in table {current['title']!r}")
        elif len(cells) != 1 + len(current["columns"]):
            raise InputError(path, f"line {no}", f"{len(cells)} cells, header has {1 + len(current['columns'])}")
        else:
            current["rows"].append((no, cells))
    return tables


def _header(path, lines):
    match = _HEAD.match(lines[0]) if lines else None
    if not match:
        raise InputError(path, "line 1", "not GPCNeT output (no 'Network Tests v...' / 'NetworkLoad Tests v...')")
    params = {"tool": "network_test" if match["kind"] == "Network" else "network_load_test",
              "version": match["version"]}
    for line in lines[1:6]:
        if m := _RANKS.search(line):
            params["ranks"], params["nodes"] = int(m[1]), int(m[2])
        if m := _SPLIT.search(line):
            params["network_nodes" if m[2] == "Network" else "congestor_nodes"] = int(m[1])
    if "ranks" not in params:
        raise InputError(path, "line 2", "missing 'Test with N MPI ranks (M nodes)'")
    return params


def _split_name(path, no, name):
    m = _NAME.match(name)
    if not m:
        raise InputError(path, f"line {no}", f"test name without message size: {name!r}")
    return m["test"], int(m["bytes"])


def _row_records(path, table, base, condition, during=None):
    out = []
    tool, base = base["tool"], {k: v for k, v in base.items() if k != "tool"}
    columns = table["columns"]
    for no, cells in table["rows"]:
        test, size = _split_name(path, no, cells[0])
        role = "congestor" if test in LOAD_TEST_CONGESTORS else "canary"
        extra = {"during": during} if during else {}
        if columns[-1] == "Units":
            unit = cells[-1]
            for col, value in zip(columns[:-1], cells[1:-1]):
                if col not in STATS:
                    raise InputError(path, f"line {no}", f"unknown column {col!r}")
                out.append(record(tool, slug(test), number(value, path, f"line {no}: {col}"), unit,
                                  STATS[col], test=test, msg_bytes=size, condition=condition, role=role,
                                  **extra, **base))
        else:           # Key Results: "27.4X"
            for col, value in zip(columns, cells[1:]):
                out.append(record(tool, f"{slug(test)}_ci",
                                  number(value.rstrip("X"), path, f"line {no}: {col}"), "x", STATS[col],
                                  test=test, msg_bytes=size, condition="impact", role="canary",
                                  definition="tool", **base))
    return out


def _names(table):
    return [_NAME.match(cells[0])["test"] if _NAME.match(cells[0]) else cells[0] for _, cells in table["rows"]]


def _expect(path, table, names, what):
    got = _names(table)
    if got != names:
        missing = [n for n in names if n not in got]
        problem = f"truncated: missing {', '.join(missing)}" if missing else f"rows {got}, expected {names}"
        raise InputError(path, what, problem)


def parse(path, text=None):
    """Records of one GPCNeT stdout file (see the module docstring)."""
    text = read_text(path, text)
    require_newline(path, text)
    lines = text.splitlines()
    base = _header(path, lines)
    last = next((line for line in reversed(lines) if line.strip()), "")
    if not last.startswith("+"):
        raise InputError(path, f"line {len(lines)}", "truncated: output does not end with a table border")
    tables = {}
    for t in _tables(path, lines):
        tables.setdefault(t["title"], t)
    out = []
    iso = tables.get("Isolated Network Tests")
    if iso is None:
        raise InputError(path, "Isolated Network Tests", "truncated: table missing")
    if base["tool"] == "network_test":
        _expect(path, iso, NETWORK_TEST_ROWS, "Isolated Network Tests")
        return _row_records(path, iso, base, "isolated")
    _expect(path, iso, LOAD_TEST_CANARIES, "Isolated Network Tests")
    out += _row_records(path, iso, base, "isolated")
    verbose = "Isolated Congestion Tests" in tables
    if verbose:
        _expect(path, tables["Isolated Congestion Tests"], LOAD_TEST_CONGESTORS, "Isolated Congestion Tests")
        out += _row_records(path, tables["Isolated Congestion Tests"], base, "isolated")
        during = {m["test"]: t for title, t in tables.items() if (m := _DURING.match(title))}
        for canary in LOAD_TEST_CANARIES:
            if canary not in during:
                raise InputError(path, f"Network Tests running with Congestion Tests ({canary})",
                                 "truncated: table missing")
            _expect(path, during[canary], [canary] + LOAD_TEST_CONGESTORS, f"congested ({canary})")
            out += _row_records(path, during[canary], base, "congested", during=canary)
    else:
        congested = tables.get("Network Tests running with Congestion Tests")
        if congested is None:
            raise InputError(path, "Network Tests running with Congestion Tests", "truncated: table missing")
        _expect(path, congested, LOAD_TEST_CANARIES, "Network Tests running with Congestion Tests")
        out += _row_records(path, congested, base, "congested")
    key = tables.get("Network Tests running with Congestion Tests - Key Results")
    if key is None:
        raise InputError(path, "Key Results", "truncated: table missing")
    _expect(path, key, LOAD_TEST_CANARIES, "Key Results")
    return out + _row_records(path, key, base, "impact")


def parse_histogram(path, text=None):
    """A verbose-build latency histogram (``*_p2p_latency_*.dat``): test name (cut to 20 characters
    by the tool), then ``Bin usec count`` rows. Returns ``{"test", "unit", "values", "counts"}``
    (numpy arrays, bin i at ``values[i]``); gaps in the bin numbers or a cut line raise InputError."""
    text = read_text(path, text)
    require_newline(path, text)
    lines = text.splitlines()
    if len(lines) < 3 or lines[1].split() != ["Bin", "usec", "count"]:
        raise InputError(path, "line 2", "not a GPCNeT histogram (no 'Bin usec count' header)")
    values, counts = [], []
    for no, line in enumerate(lines[2:], 3):
        cells = line.split()
        if len(cells) != 3:
            raise InputError(path, f"line {no}", f"{len(cells)} fields, expected 3")
        if cells[0] != str(no - 3):
            raise InputError(path, f"line {no}", f"bin {cells[0]} where bin {no - 3} was expected")
        values.append(number(cells[1], path, f"line {no}: usec"))
        count = number(cells[2], path, f"line {no}: count")
        if count < 0 or count != int(count):
            raise InputError(path, f"line {no}: count", f"not a count: {cells[2]!r}")
        counts.append(int(count))
    return {"test": lines[0].strip(), "unit": "usec", "values": np.array(values), "counts": np.array(counts)}
