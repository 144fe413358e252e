"""The papers' tables transcribed under ``results/papers/`` (see its README.md)."""
import pandas as pd

from crosstalk import REPO_ROOT
from crosstalk.bibliography import bibliography, short_citation
from crosstalk.errors import InputError

PAPERS_DIR = REPO_ROOT / "results" / "papers"


def paper_tables():
    """Names (file stems) of the transcribed tables."""
    return sorted(p.stem for p in PAPERS_DIR.glob("*.csv"))


def load_paper_table(name, directory=PAPERS_DIR):
    """A transcribed table as a DataFrame. Its leading line ``# <paper key>, <table>: <note>`` becomes
    ``df.attrs['paper']`` (the bibliography key) and ``df.attrs['citation']`` (short citation, rest)."""
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
    df = pd.read_csv(path, comment="#", skipinitialspace=True)
    if df.empty:
        raise InputError(path, None, "no rows")
    df.attrs["paper"] = key
    df.attrs["citation"] = short_citation(key) + sep + rest
    df.attrs["name"] = path.stem
    return df
