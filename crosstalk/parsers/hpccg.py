"""HPCCG 1.0 output: the ``hpccg-1.0_<date>.yaml`` file or stdout (residual lines, then the same text).

The "YAML" is HPCCG's own writer, not valid YAML: keys with trailing spaces, empty values that open
a section, and ``#*** Performance Summary ***:`` which YAML reads as a comment. It is read here as
``key: value`` lines nested by two-space indentation.
Records: ``time`` (s; stat ``total``, ``ddot``, ``waxpby``, ``sparsemv``), ``mflops`` (same stats),
``flops``, ``ddot_allreduce_time`` (stats min/max/avg), ``sparsemv_overhead_*``, ``final_residual``,
``iterations``; params ``ranks``, ``nx``, ``ny``, ``nz``, ``version``.
"""
from crosstalk.errors import InputError
from crosstalk.parsers import number, read_text, record, require_newline

KERNELS = ["Total", "DDOT", "WAXPBY", "SPARSEMV"]
REQUIRED = (["Mini-Application Name", "Dimensions/nx", "Dimensions/ny", "Dimensions/nz", "Number of iterations",
             "Final residual"]
            + [f"{s}/{k}" for s in ("Time Summary", "FLOPS Summary", "MFLOPS Summary") for k in KERNELS])
#: printed by MPI builds only (``Number of MPI ranks`` present)
REQUIRED_MPI = ([f"DDOT Timing Variations/{s} DDOT MPI_Allreduce time" for s in ("Min", "Max", "Avg")]
                + ["SPARSEMV OVERHEADS/SPARSEMV MFLOPS W OVERHEAD"]
                + [f"SPARSEMV OVERHEADS/SPARSEMV PARALLEL OVERHEAD {k}" for k in
                   ("Time", "Pct", "Setup Time", "Setup Pct", "Bdry Exch Time", "Bdry Exch Pct")])


def read_tree(path, text):
    """{'Section/key': value string} from HPCCG's indented key: value text."""
    flat, section = {}, None
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or ":" not in line or line.startswith(("Initial Residual", "Iteration =")):
            continue
        key, _, value = line.partition(":")
        indent = len(key) - len(key.lstrip(" "))
        key, value = key.strip(), value.strip()
        if indent == 0:
            section = key if not value else None
            if value:
                flat[key] = value
        elif section is None:
            raise InputError(path, f"line {no}", f"indented key {key!r} outside a section")
        else:
            flat[f"{section}/{key}"] = value
    return flat


def parse(path, text=None):
    """Records of one HPCCG yaml file or stdout."""
    text = read_text(path, text)
    require_newline(path, text)
    tree = read_tree(path, text)
    if tree.get("Mini-Application Name") != "hpccg":
        raise InputError(path, "Mini-Application Name", "not HPCCG output")
    mpi = "Parallelism/Number of MPI ranks" in tree
    missing = [k for k in REQUIRED + (REQUIRED_MPI if mpi else []) if k not in tree]
    if missing:
        more = f" (and {len(missing) - 1} more keys)" if len(missing) > 1 else ""
        raise InputError(path, missing[0], f"truncated: missing{more}")

    def num(key):
        return number(tree[key], path, key)
    params = {"version": tree.get("Mini-Application Version"),
              "ranks": int(num("Parallelism/Number of MPI ranks")) if mpi else 1,
              "nx": int(num("Dimensions/nx")), "ny": int(num("Dimensions/ny")), "nz": int(num("Dimensions/nz"))}
    out = [record("hpccg", "iterations", num("Number of iterations"), "", "count", **params),
           record("hpccg", "final_residual", num("Final residual"), "", "final", **params)]
    for section, metric, unit in (("Time Summary", "time", "s"), ("FLOPS Summary", "flops", "flop"),
                                  ("MFLOPS Summary", "mflops", "MFLOP/s")):
        for key in [k for k in tree if k.startswith(section + "/")]:
            out.append(record("hpccg", metric, num(key), unit, key.split("/")[1].lower(), **params))
    for stat in ("Min", "Max", "Avg"):
        key = f"DDOT Timing Variations/{stat} DDOT MPI_Allreduce time"
        if key in tree:
            out.append(record("hpccg", "ddot_allreduce_time", num(key), "s", stat.lower(), **params))
    for key in [k for k in tree if k.startswith("SPARSEMV OVERHEADS/")]:
        name = key.split("/")[1].replace("SPARSEMV ", "")
        unit = "%" if name.endswith("Pct") else "s" if name.endswith("Time") else "MFLOP/s"
        metric = "sparsemv_" + "_".join(name.lower().split())
        out.append(record("hpccg", metric, num(key), unit, "value", **params))
    return out
