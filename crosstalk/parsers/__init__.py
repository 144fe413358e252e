"""Parsers for the outputs of upstream tools and of our ``xt-*`` kernels, one module per tool.

Every parser has ``parse(path, text=None) -> list of records``; a record is a dict in the tidy
shape of ``docs/architecture.md`` ("Kernel output"): ``metric``, ``value``, ``unit``, ``stat`` plus
the parameters that produced it (``tool`` always). A run that failed is data, not an error: it
gives one record with ``metric="run_failed"``, ``failed=True`` and a ``reason``. Malformed or
truncated files raise ``crosstalk.errors.InputError(path, field, problem)``.
"""
import re

from crosstalk import userfiles
from crosstalk.errors import InputError


def read_text(path, text=None):
    """The file's text (or ``text`` if given, for in-memory variants)."""
    if text is not None:
        return text
    return userfiles.read_text(path, "output", errors="replace")


def number(token, path, field):
    """float(token) or InputError naming the field."""
    try:
        return float(token)
    except (TypeError, ValueError):
        raise InputError(path, field, f"not a number: {token!r}") from None


def record(tool, metric, value, unit, stat, **params):
    return {"tool": tool, "metric": metric, "value": float(value), "unit": unit, "stat": stat, **params}


def failure(tool, reason, **params):
    """The record of a failed run (failures are data: the papers count them)."""
    return {"tool": tool, "metric": "run_failed", "value": 1.0, "unit": "", "stat": "status",
            "failed": True, "reason": reason, **params}


def slug(name):
    """'RR Two-sided BW+Sync' -> 'rr_two_sided_bw_sync'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def require_newline(path, text):
    """Tool output ends with a newline; a file that does not was cut off mid-line."""
    if text and not text.endswith("\n"):
        last = text.splitlines()[-1]
        raise InputError(path, f"line {len(text.splitlines())}",
                         f"truncated: last line has no end of line ({last[:40]!r})")


def parse(tool, path, text=None):
    """Dispatch to ``crosstalk.parsers.<tool>.parse``."""
    import importlib
    if tool not in TOOLS:
        raise InputError(path, "tool", f"no parser for {tool!r} (known: {', '.join(TOOLS)})")
    return importlib.import_module(f"crosstalk.parsers.{TOOLS[tool]}").parse(path, text)


#: tool name -> module
TOOLS = {"gpcnet": "gpcnet", "hpccg": "hpccg", "lammps": "lammps", "xt": "kernel"}
