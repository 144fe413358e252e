"""The shipped example runs read the same after a refactoring: their tidy tables (every row and
column, compared through a digest of their canonical text) and the figures the specs list match
the record in tests/fixtures/examples-tables.json. A change that is meant to change them
rewrites the record (``python tests/unit/test_examples_unchanged.py --write``) in the same commit,
where a reviewer sees it."""
import hashlib
import json
import sys
from pathlib import Path

from crosstalk import examples_root
from crosstalk.analysis.collect import collect
from crosstalk.analysis.workflow import figure_experiments

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "examples-tables.json"


def digest(frame):
    """Rows, columns and the sha256 of the table as text, rows sorted (order-free)."""
    text = frame.astype(str).sort_values(list(frame.columns)).to_csv(index=False)
    return {"rows": len(frame), "columns": list(frame.columns), "sha256": hashlib.sha256(text.encode()).hexdigest()}


def current(tmp_dir):
    perf, cases, errors = collect(tmp_dir, examples_dir=examples_root())
    return {"perf": digest(perf), "cases": digest(cases), "errors": errors,
            "figures": dict(sorted(figure_experiments().items()))}


def test_example_tables_and_figures_are_unchanged(tmp_path):
    got, want = current(tmp_path), json.loads(RECORD.read_text())
    for part in ("figures", "errors", "perf", "cases"):    # the most telling difference first
        assert got[part] == want[part], f"{part} of the shipped examples changed (see this module's docstring)"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile
    RECORD.write_text(json.dumps(current(tempfile.mkdtemp()), indent=1) + "\n")
