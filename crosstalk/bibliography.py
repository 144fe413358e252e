"""The papers crosstalk reproduces (``results/papers/bibliography.yaml``), cited by key."""
from functools import lru_cache

import yaml

from crosstalk import REPO_ROOT
from crosstalk.errors import InputError
from crosstalk.validation import validate

BIBLIOGRAPHY_PATH = REPO_ROOT / "results" / "papers" / "bibliography.yaml"
_TEXT = {"type": "string", "minLength": 1}
SCHEMA = {
    "type": "object", "minProperties": 1,
    "additionalProperties": {
        "type": "object", "additionalProperties": False,
        "required": ["kind", "authors", "title", "venue", "year", "short"],
        "properties": {"kind": {"enum": ["dissertation", "thesis", "conference", "article", "report"]},
                       "authors": {"type": "array", "minItems": 1, "items": _TEXT},
                       "title": _TEXT, "venue": _TEXT, "short": _TEXT,
                       "year": {"type": ["integer", "null"]},
                       "doi": {"type": "string", "pattern": "^10\\.[0-9]+/"},
                       "number": _TEXT, "url": {"type": "string", "pattern": "^https?://"},
                       "note": _TEXT}},
}


@lru_cache(maxsize=None)
def bibliography(path=BIBLIOGRAPHY_PATH):
    """Entries by key, validated: a bad entry is one line naming the file and the field."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise InputError(path, None, f"unreadable bibliography: {err}".splitlines()[0]) from None
    validate(data, SCHEMA, path)
    return data


def entry(key):
    papers = bibliography()
    if key not in papers:
        raise InputError(BIBLIOGRAPHY_PATH, None, f"no paper {key!r} (known: {', '.join(papers)})")
    return papers[key]


def short_citation(key):
    """E.g. ``Groves 2017``: for captions and model sources."""
    return entry(key)["short"]


def citation(key):
    """``Authors (year). Title. Venue. Number/DOI/URL.`` for the report."""
    e = entry(key)
    *rest, last = e["authors"]
    authors = f"{', '.join(rest)} and {last}" if rest else last
    parts = [f"{authors} ({e['year'] or 'n.d.'})", e["title"], e["venue"], e.get("number"),
             e.get("doi") and f"https://doi.org/{e['doi']}", e.get("url")]
    return ". ".join(p for p in parts if p) + "."
