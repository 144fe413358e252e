"""JSON lines of the xt-* kernels (docs/architecture.md, "Kernel output")."""
import json

import pytest

from crosstalk.errors import InputError
from crosstalk.parsers import kernel

GOOD = [
    {"kernel": "xt-stream", "type": "info", "detail": "array 80000000"},
    {"kernel": "xt-stream", "type": "sample", "metric": "triad_bw", "value": 23001.5, "unit": "MB/s", "iteration": 1},
    {"kernel": "xt-stream", "type": "result", "metric": "triad_bw", "value": 23344.3, "unit": "MB/s", "stat": "best",
     "threads": 1, "array_size": 80000000},
    {"kernel": "xt-stream", "type": "validation", "passed": True, "detail": "avg error < 1e-13"},
]


def text(objs):
    return "".join(json.dumps(o) + "\n" for o in objs)


def test_good_lines():
    objs = kernel.parse("out.jsonl", text(GOOD) + "\n")
    assert [o["type"] for o in objs] == ["info", "sample", "result", "validation"]
    [res] = kernel.results(objs)
    assert res["tool"] == "xt-stream" and res["line"] == 3 and res["threads"] == 1 and res["value"] == 23344.3


@pytest.mark.parametrize("change, problem", [
    (lambda o: o.pop("stat"), "result without 'stat'"),
    (lambda o: o.update(value="fast"), "'value' must be a number"),
    (lambda o: o.update(value=True), "'value' must be a number"),
    (lambda o: o.update(type="score"), "'type' must be one of"),
    (lambda o: o.update(kernel="stream"), "'kernel' must name an xt-\\* program"),
])
def test_bad_result_line(change, problem):
    objs = [dict(o) for o in GOOD]
    change(objs[2])
    with pytest.raises(InputError, match=f"out.jsonl: line 3: {problem}"):
        kernel.parse("out.jsonl", text(objs))


def test_bad_lines():
    objs = [dict(o) for o in GOOD]
    objs[1]["iteration"] = 1.5
    with pytest.raises(InputError, match="line 2: 'iteration' must be an integer"):
        kernel.parse("k", text(objs))
    objs = [dict(o) for o in GOOD]
    objs[3]["passed"] = "yes"
    with pytest.raises(InputError, match="line 4: 'passed' must be true or false"):
        kernel.parse("k", text(objs))
    with pytest.raises(InputError, match="line 4: not valid JSON"):
        kernel.parse("k", text(GOOD)[:-15])                    # truncated last line
    with pytest.raises(InputError, match="line 1: not a JSON object"):
        kernel.parse("k", "[1, 2]\n")
    with pytest.raises(InputError, match="empty output"):
        kernel.parse("k", "\n")
