"""The papers' tables transcribed under ``results/papers/`` (see its README.md)."""
import csv

from crosstalk import REPO_ROOT
from crosstalk.bibliography import bibliography, short_citation
from crosstalk.errors import InputError

PAPERS_DIR = REPO_ROOT / "results" / "papers"


def paper_tables():
    """Names (file stems) of the transcribed tables."""
    return sorted(p.stem for p in PAPERS_DIR.glob("*.csv"))


def _table(name, directory):
    """(path, attrs) of a transcribed table: its leading line ``# <paper key>, <table>: <note>``
    gives ``paper`` (the bibliography key) and ``citation`` (short citation, rest)."""
    path = directory / (name if name.endswith(".csv") else f"{name}.csv")
    try:
        first = path.read_text().splitlines()[0] if path.stat().st_size else ""
    except FileNotFoundError:
        raise InputError(path, None, f"no paper table {name!r} (known: {', '.join(paper_tables())})") from None
    if not first.startswith("#"):
        raise InputError(path, "line 1", "missing the '# <paper key>, <table>: <note>' comment line")
    key, sep, rest = first.lstrip("#").strip().partition(",")
    if key not in bibliography():
        raise InputError(path, "line 1", f"unknown paper {key!r} (known: {', '.join(bibliography())})")
    return path, {"paper": key, "citation": short_citation(key) + sep + rest, "name": path.stem}


def load_paper_table(name, directory=PAPERS_DIR):
    """A transcribed table as a DataFrame, its ``attrs`` those of :func:`_table`."""
    import pandas as pd  # here, not above: link commands read the machines' tables without it

    path, attrs = _table(name, directory)
    df = pd.read_csv(path, comment="#", skipinitialspace=True)
    if df.empty:
        raise InputError(path, None, "no rows")
    df.attrs.update(attrs)
    return df


def paper_table_rows(name, directory=PAPERS_DIR):
    """(rows, attrs) of a transcribed table: each row a dict of its cells as text ('' where empty),
    read without pandas (whose import costs a command 0.4 s)."""
    path, attrs = _table(name, directory)
    with open(path, newline="") as fp:
        rows = list(csv.DictReader((line for line in fp if not line.startswith("#")), skipinitialspace=True))
    if not rows:
        raise InputError(path, None, "no rows")
    return rows, attrs
