"""JSON lines of our ``xt-*`` kernels (docs/architecture.md, "Kernel output").

One object per line with ``kernel`` (``xt-...``) and ``type``: ``result`` (``metric``, ``value``,
``unit``, ``stat`` + parameters), ``sample`` (``metric``, ``value``, ``unit``, ``iteration``),
``validation`` (``passed`` bool, ``detail``) or ``info``. Returns the objects in order, each with
``tool`` (= ``kernel``) and ``line`` added; a bad line raises InputError naming its line number.
"""
import numbers

from crosstalk.errors import InputError
from crosstalk.parsers import read_text
from crosstalk.userfiles import loads_json

REQUIRED = {"result": ("metric", "value", "unit", "stat"), "sample": ("metric", "value", "unit", "iteration"),
            "validation": ("passed", "detail"), "info": ()}


def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def check(obj):
    """The problem with one decoded object, or None."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    kernel, kind = obj.get("kernel"), obj.get("type")
    if not isinstance(kernel, str) or not kernel.startswith("xt-"):
        return f"'kernel' must name an xt-* program, got {kernel!r}"
    if kind not in REQUIRED:
        return f"'type' must be one of {', '.join(REQUIRED)}, got {kind!r}"
    missing = [k for k in REQUIRED[kind] if k not in obj]
    if missing:
        return f"{kind} without {', '.join(repr(k) for k in missing)}"
    if kind in ("result", "sample") and not _is_number(obj["value"]):
        return f"'value' must be a number, got {obj['value']!r}"
    if kind in ("result", "sample") and not (isinstance(obj["metric"], str) and isinstance(obj["unit"], str)):
        return "'metric' and 'unit' must be strings"
    if kind == "sample" and not (isinstance(obj["iteration"], int) and not isinstance(obj["iteration"], bool)):
        return f"'iteration' must be an integer, got {obj['iteration']!r}"
    if kind == "validation" and not isinstance(obj["passed"], bool):
        return f"'passed' must be true or false, got {obj['passed']!r}"
    return None


def parse(path, text=None):
    """Validated objects of one kernel's stdout (see the module docstring)."""
    text = read_text(path, text)
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        obj = loads_json(line, path, f"line {no}")
        problem = check(obj)
        if problem:
            raise InputError(path, f"line {no}", problem)
        out.append({**obj, "tool": obj["kernel"], "line": no})
    if not out:
        raise InputError(path, None, "no JSON lines: empty output")
    return out


def among_lines(text, type_=None, **match):
    """The kernel objects among the lines of a job's output, in order: other lines (a launcher's
    warnings, a tool's table) are skipped, not errors. Only those of ``type_`` whose keys equal
    ``match`` (e.g. ``metric="triad"``). The one reader of xt JSON lines in a job's output: the
    ReFrame tests' sanity and performance (``xtlib.records``) and the analysis read through it."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = loads_json(line, "output")
        except InputError:
            continue
        if not isinstance(obj, dict) or (type_ and obj.get("type") != type_):
            continue
        if all(obj.get(k) == v for k, v in match.items()):
            found.append(obj)
    return found


def results(objects):
    """Only the ``result`` objects (the tidy performance values)."""
    return [o for o in objects if o["type"] == "result"]
