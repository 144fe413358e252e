"""The papers' tables transcribed under ``results/papers/`` (see its README.md)."""
import io

from crosstalk import REPO_ROOT, userfiles
from crosstalk.bibliography import bibliography, short_citation
from crosstalk.errors import InputError

PAPERS_DIR = REPO_ROOT / "results" / "papers"


def paper_tables():
    """Names (file stems) of the transcribed tables."""
    return sorted(p.stem for p in PAPERS_DIR.glob("*.csv"))


def _table(name, directory):
    """(path, attrs, text) of a transcribed table: its leading line ``# <paper key>, <table>: <note>``
    gives ``paper`` (the bibliography key) and ``citation`` (short citation, rest)."""
    path = directory / (name if name.endswith(".csv") else f"{name}.csv")
    try:
        text = userfiles.read_text(path, "table")
    except userfiles.MissingFile:
        raise InputError(path, None, f"no paper table {name!r} (known: {', '.join(paper_tables())})") from None
    first = text.split("\n", 1)[0]
    if not first.startswith("#"):
        raise InputError(path, "line 1", "missing the '# <paper key>, <table>: <note>' comment line")
    key, sep, rest = first.lstrip("#").strip().partition(",")
    if key not in bibliography():
        raise InputError(path, "line 1", f"unknown paper {key!r} (known: {', '.join(bibliography())})")
    return path, {"paper": key, "citation": short_citation(key) + sep + rest, "name": path.stem}, text


def load_paper_table(name, directory=PAPERS_DIR):
    """A transcribed table as a DataFrame, its ``attrs`` those of :func:`_table`."""
    import pandas as pd  # here, not above: link commands read the machines' tables without it

    path, attrs, text = _table(name, directory)
    try:
        df = pd.read_csv(io.StringIO(text), comment="#", skipinitialspace=True)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise InputError(path, None, f"not a CSV table ({str(err).splitlines()[0][:120]})") from None
    if df.empty:
        raise InputError(path, None, "no rows")
    df.attrs.update(attrs)
    return df


def paper_table_rows(name, directory=PAPERS_DIR):
    """(rows, attrs) of a transcribed table: each row a dict of its cells as text ('' where empty),
    read without pandas (whose import costs a command 0.4 s)."""
    path, attrs, text = _table(name, directory)
    rows = userfiles.csv_rows(path, text)
    if not rows:
        raise InputError(path, None, "no rows")
    return rows, attrs
