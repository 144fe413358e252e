"""verdicts.json: what the verdicts job writes the pages job reads back; anything else is refused
with one line naming the file."""
import math

import numpy as np
import pytest

from crosstalk.claims.verdictfile import read, write
from crosstalk.errors import InputError


def test_numbers_nan_and_sets_come_back_as_plain_values(tmp_path):
    verdict = {"id": "c1", "n": np.int64(7), "ci_low": np.float64(0.5), "ci_high": float("nan"),
               "cases": {"b", "a"}, "groups": [{"verdict": "reproduced"}]}
    write(tmp_path / "v.json", [verdict])
    (back,) = read(tmp_path / "v.json")
    assert back["n"] == 7 and type(back["n"]) is int
    assert back["ci_low"] == 0.5 and math.isnan(back["ci_high"])
    assert back["cases"] == ["a", "b"] and back["groups"] == [{"verdict": "reproduced"}]


@pytest.mark.parametrize("text, field", [("{not json", None), ('{"verdicts": []}', "format"),
                                         ('{"format": "crosstalk-verdicts/1", "verdicts": [1]}', "verdicts")])
def test_a_file_that_is_not_one_is_refused_naming_it(tmp_path, text, field):
    path = tmp_path / "verdicts.json"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert err.value.field == field
