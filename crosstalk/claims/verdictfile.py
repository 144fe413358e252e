"""The verdicts as a JSON file (the report workflow's ``<results>/verdicts.json``): judged by one
job while another draws the figures, read by the job that writes the pages, and readable by any
tool (one object per claim and platform, as :func:`crosstalk.claims.judge` returns them)."""
import json

from crosstalk.analysis import write_whole
from crosstalk.errors import InputError

FORMAT = "crosstalk-verdicts/1"


def _plain(value):
    """NumPy scalars as Python numbers, sets as sorted lists (what json cannot write itself)."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    raise TypeError(f"{type(value).__name__} is not a verdict value")


def to_json(value, **kwargs):
    """Verdicts as JSON text; NaN stays NaN (an interval not computed): Python's json reads it back."""
    return json.dumps(value, default=_plain, allow_nan=True, **kwargs)


def write(path, verdicts):
    """Whole or not at all (a reader, or the next report after a kill, never sees half of it)."""
    text = to_json({"format": FORMAT, "verdicts": verdicts}, indent=1) + "\n"
    write_whole(path, lambda tmp: tmp.write_text(text))


def read(path):
    """The verdicts in ``path``; InputError naming the file if it is not such a file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(path, None, f"not a verdicts file ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(path, "format", f"expected {FORMAT!r} (run crosstalk report again)")
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, list) or not all(isinstance(v, dict) for v in verdicts):
        raise InputError(path, "verdicts", "expected a list of objects (run crosstalk report again)")
    return verdicts


