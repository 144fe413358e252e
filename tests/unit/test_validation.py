"""One way to validate a user file against its schema (crosstalk.validation): the field of the
error in one notation for every kind of input."""
from pathlib import Path

import pytest

from crosstalk.errors import InputError
from crosstalk.validation import field_name, first_error, validate

SCHEMA = {"type": "object", "additionalProperties": False,
          "properties": {"items": {"type": "array", "items": {
              "type": "object", "properties": {"rate": {"type": "number"}}}}}}


@pytest.mark.parametrize("parts, root, want", [
    ((), None, "(top level)"),
    ((), "crosstalk_system", "crosstalk_system"),
    (("items", 0, "rate"), None, "items[0].rate"),
    (("items", 0, "rate"), "crosstalk_system", "crosstalk_system.items[0].rate"),
    (("a", 1, 2), None, "a[1][2]"),
])
def test_field_names_in_one_notation(parts, root, want):
    assert field_name(parts, root) == want


def test_validate_names_file_and_field(tmp_path):
    validate({"items": [{"rate": 1}]}, SCHEMA, "x.yaml")          # valid: no error
    with pytest.raises(InputError) as err:
        validate({"items": [{"rate": 1}, {"rate": "fast"}]}, SCHEMA, "x.yaml", root="v")
    assert str(err.value) == "x.yaml: v.items[1].rate: 'fast' is not of type 'number'"
    schema_file = tmp_path / "s.json"
    schema_file.write_text('{"type": "integer"}')
    assert first_error(3, Path(schema_file)) is None
    assert first_error("3", Path(schema_file)).message == "'3' is not of type 'integer'"
