"""Validation of user files against JSON Schemas, one way for every kind of input (spec,
inventory, Spack settings, bibliography): the most relevant error as one line naming the file and
the field, the field always written as ``a.b[0].c`` (under ``root``, the variable that holds the
data, where there is one)."""
import json
from pathlib import Path

from crosstalk.errors import InputError


def field_name(parts, root=None):
    """``root.a[0].b`` for the path ``("a", 0, "b")``; ``(top level)`` for the data itself."""
    out = root or ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def first_error(data, schema):
    """The most relevant way ``data`` breaks ``schema`` (a mapping or a JSON file), or None."""
    import jsonschema  # here: a command refused before any validation does not import it (0.2 s)
    if isinstance(schema, Path):
        schema = json.loads(schema.read_text())
    # sorted by path first, so that best_match's choice does not depend on the validator's order
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data),
                    key=lambda e: [str(p) for p in e.absolute_path])
    return jsonschema.exceptions.best_match(errors)


def validate(data, schema, path, root=None):
    """Raise :class:`InputError` (file ``path``, the field, the schema's message) unless ``data``
    is valid."""
    error = first_error(data, schema)
    if error is not None:
        raise InputError(path, field_name(error.absolute_path, root), error.message)
