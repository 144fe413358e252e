"""STREAM (C, ``$Revision: 5.10 $``) stdout.

Records: ``<kernel>_bw`` (copy/scale/add/triad; unit ``MB/s`` = 10^6 B/s, stat ``best``) and
``<kernel>_time`` (s; stats ``avg``, ``min``, ``max``); one ``validation`` record (value 1 if
"Solution Validates", 0 on a failed validation). Params: ``array_size``, ``ntimes``,
``bytes_per_element``, ``threads`` (counted; requested as ``threads_requested``), ``version``.
"""
import re

from crosstalk.errors import InputError
from crosstalk.parsers import number, read_text, record, require_newline

KERNELS = ["Copy", "Scale", "Add", "Triad"]
_PARAMS = [(re.compile(r"STREAM version \$Revision: ([\d.]+) \$"), "version", str),
           (re.compile(r"Array size = (\d+)"), "array_size", int),
           (re.compile(r"Each kernel will be executed (\d+) times"), "ntimes", int),
           (re.compile(r"This system uses (\d+) bytes per array element"), "bytes_per_element", int),
           (re.compile(r"Number of Threads requested = (\d+)"), "threads_requested", int),
           (re.compile(r"Number of Threads counted = (\d+)"), "threads", int)]
_ROW = re.compile(r"^(Copy|Scale|Add|Triad):\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


def parse(path, text=None):
    """Records of one STREAM stdout."""
    text = read_text(path, text)
    require_newline(path, text)
    params, rows, valid = {}, {}, None
    for no, line in enumerate(text.splitlines(), 1):
        for pattern, key, cast in _PARAMS:
            if m := pattern.search(line):
                params[key] = cast(m[1])
        if line.split(":")[0] in KERNELS:
            m = _ROW.match(line)
            if not m:
                raise InputError(path, f"line {no}", f"malformed {line.split(':')[0]} row: {line.strip()!r}")
            rows[m[1]] = [number(v, path, f"line {no}: {m[1]}") for v in m.groups()[1:]]
        if line.startswith("Solution Validates"):
            valid = True
        elif line.startswith("Failed Validation") or "Validation failed" in line:
            valid = False
    if "version" not in params:
        raise InputError(path, "line 2", "not STREAM output (no 'STREAM version $Revision' line)")
    missing = [k for k in KERNELS if k not in rows]
    if missing:
        raise InputError(path, "results table", f"truncated: missing {', '.join(missing)}")
    if valid is None:
        raise InputError(path, "validation", "truncated: no 'Solution Validates' or failure line")
    out = []
    for kernel, (rate, avg, tmin, tmax) in rows.items():
        k = kernel.lower()
        out.append(record("stream", f"{k}_bw", rate, "MB/s", "best", **params))
        for stat, v in (("avg", avg), ("min", tmin), ("max", tmax)):
            out.append(record("stream", f"{k}_time", v, "s", stat, **params))
    out.append(record("stream", "validation", 1.0 if valid else 0.0, "", "passed", passed=valid, **params))
    return out
