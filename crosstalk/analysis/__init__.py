"""Reading runs: ingest and its per-run cache, collection into tables, comparison with
references, the report and the figure cache.
"""
import os
import sys
from pathlib import Path

#: The broken runs a collection of the results directory left out, one line each.
ERRORS_NAME = "collect-errors.txt"


# here, not in crosstalk.analysis.report: `crosstalk compare` prints numbers without importing the report
def format_number(value):
    """Readable numbers: thousands grouped, small ones with 4 significant digits."""
    if value != value:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def tell_skipped(errors, results_dir=None):
    """Each broken run's one line on stderr and, given the results directory it was collected
    from, in its ERRORS_NAME (written whole, then renamed: a reader never sees half of it)."""
    for err in errors:
        print(f"crosstalk: error: {err} (run skipped)", file=sys.stderr)
    if results_dir is not None:
        write_whole(Path(results_dir) / ERRORS_NAME, lambda tmp: tmp.write_text("".join(f"{err}\n" for err in errors)))


def write_whole(path, write):
    """Write ``path`` through a temporary file renamed over it (``write(tmp)``): readers, and a
    later run after a kill or a full disk, see all of it or none."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
