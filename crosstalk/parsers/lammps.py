"""LAMMPS log (``log.lammps``) or screen output, e.g. the LJ melt benchmark.

Records per ``run``: ``loop_time`` (s), the "Performance:" values named after their unit
(``tau_per_day``, ``timesteps_per_s``, and ``ns_per_day``, ``hours_per_ns``, ``katom_step_per_s``
when printed; stat ``value``),
``cpu_use`` (%), the MPI task timing breakdown (``<section>_time``, s, stats min/avg/max and
``<section>_pct`` of total), ``total_wall_time`` (s). Params: ``run`` (0-based index), ``procs``,
``steps``, ``atoms``, ``mpi_tasks``, ``omp_threads``, ``grid`` ("1x1x2"), ``version``.
"""
import re

from crosstalk.errors import InputError
from crosstalk.parsers import number, read_text, record, require_newline, slug

_VERSION = re.compile(r"^LAMMPS \((.+)\)\s*$")
_GRID = re.compile(r"^\s*(\d+) by (\d+) by (\d+) MPI processor grid")
_LOOP = re.compile(r"^Loop time of (\S+) on (\d+) procs for (\d+) steps with (\d+) atoms")
_PERF = re.compile(r"^Performance: (.+)$")
_PERF_ITEM = re.compile(r"([\d.eE+-]+) ([A-Za-z/%-]+)")
_CPU = re.compile(r"^([\d.]+)% CPU use with (\d+) MPI tasks x (\d+) OpenMP threads")
_NUM = r"\s*([\d.eE+-]*)\s*"
# "Comm    | 0.3871     | 0.40003    | 0.41296    |   2.0 | 20.82"; "Other" has only avg and %total
_SECTION = re.compile(rf"^(\w+)\s*\|{_NUM}\|{_NUM}\|{_NUM}\|\s*([\d.]*)\s*\|\s*([\d.]+)\s*$")
_WALL = re.compile(r"^Total wall time: (\d+):(\d+):(\d+)")


def parse(path, text=None):
    """Records of one LAMMPS log or screen output."""
    text = read_text(path, text)
    require_newline(path, text)
    lines = text.splitlines()
    version = next((m[1] for line in lines[:3] if (m := _VERSION.match(line))), None)
    if version is None:
        raise InputError(path, "line 1", "not LAMMPS output (no 'LAMMPS (<version>)' line)")
    out, grid, run, params = [], None, -1, {}
    for no, line in enumerate(lines, 1):
        if m := _GRID.match(line):
            grid = "x".join(m.groups())
        elif m := _LOOP.match(line):
            run += 1
            params = {"version": version, "run": run, "procs": int(m[2]), "steps": int(m[3]), "atoms": int(m[4])}
            if grid:
                params["grid"] = grid
            out.append(record("lammps", "loop_time", number(m[1], path, f"line {no}"), "s", "value", **params))
        elif m := _PERF.match(line):
            if run < 0:
                raise InputError(path, f"line {no}", "Performance line before any 'Loop time' line")
            for value, unit in _PERF_ITEM.findall(m[1]):
                out.append(record("lammps", slug(unit.replace("/", "_per_")), number(value, path, f"line {no}"),
                                  unit, "value", **params))
        elif m := _CPU.match(line):
            params.update(mpi_tasks=int(m[2]), omp_threads=int(m[3]))
            out.append(record("lammps", "cpu_use", float(m[1]), "%", "value", **params))
        elif run >= 0 and (m := _SECTION.match(line)):
            name = slug(m[1])
            for stat, value in (("min", m[2]), ("avg", m[3]), ("max", m[4])):
                if value:
                    out.append(record("lammps", f"{name}_time", number(value, path, f"line {no}"), "s", stat, **params))
            out.append(record("lammps", f"{name}_pct", number(m[6], path, f"line {no}"), "%", "value", **params))
        elif m := _WALL.match(line):
            h, mi, s = (int(x) for x in m.groups())
            out.append(record("lammps", "total_wall_time", 3600 * h + 60 * mi + s, "s", "value", version=version))
    if run < 0:
        raise InputError(path, "Loop time", "truncated: no 'Loop time of ...' line (run did not finish?)")
    for r in range(run + 1):
        got = {o["metric"] for o in out if o.get("run") == r}
        missing = {"timesteps_per_s", "cpu_use", "pair_time", "comm_time", "other_pct"} - got
        if missing:
            raise InputError(path, f"run {r}", f"truncated: missing {', '.join(sorted(missing))}")
    if not any(o["metric"] == "total_wall_time" for o in out):
        raise InputError(path, "Total wall time", "truncated: no 'Total wall time' line")
    return out
