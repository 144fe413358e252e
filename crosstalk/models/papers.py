"""The papers' tables transcribed under ``results/papers/`` (see its README.md)."""
import pandas as pd

from crosstalk import REPO_ROOT
from crosstalk.errors import InputError

PAPERS_DIR = REPO_ROOT / "results" / "papers"


def paper_tables():
    """Names (file stems) of the transcribed tables."""
    return sorted(p.stem for p in PAPERS_DIR.glob("*.csv"))


def load_paper_table(name, directory=PAPERS_DIR):
    """A transcribed table as a DataFrame; its leading ``#`` line is ``df.attrs['citation']``."""
    path = directory / (name if name.endswith(".csv") else f"{name}.csv")
    try:
        first = path.read_text().splitlines()[0] if path.stat().st_size else ""
    except FileNotFoundError:
        raise InputError(path, None, f"no paper table {name!r} (known: {', '.join(paper_tables())})") from None
    if not first.startswith("#"):
        raise InputError(path, "line 1", "missing the '# <citation>' comment line")
    df = pd.read_csv(path, comment="#", skipinitialspace=True)
    if df.empty:
        raise InputError(path, None, "no rows")
    df.attrs["citation"] = first.lstrip("#").strip()
    df.attrs["name"] = path.stem
    return df
