"""HPCCG 1.0 output parser (its own not-quite-YAML) on the real fixtures (tests/fixtures/upstream/hpccg)."""
import pytest
import yaml
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.parsers import hpccg

DIR = REPO / "tests" / "fixtures" / "upstream" / "hpccg"
YAMLS = sorted(DIR.glob("*.yaml"))


def get(recs, metric, stat):
    [v] = [r["value"] for r in recs if r["metric"] == metric and r["stat"] == stat]
    return v


@pytest.mark.parametrize("stem, total, mflops", [("hpccg_np2_local_40x40x40", 0.261573, 4666.41),
                                                 ("hpccg_np2_n1n2_40x40x40", 0.432699, 2820.92)])
def test_yaml_and_stdout_agree(stem, total, mflops):
    [yml] = DIR.glob(f"{stem}.hpccg-1.0_*.yaml")
    from_yaml, from_stdout = hpccg.parse(yml), hpccg.parse(DIR / f"{stem}.stdout.txt")
    assert from_yaml == from_stdout
    assert get(from_yaml, "time", "total") == total and get(from_yaml, "mflops", "total") == mflops
    # FLOPS / time: 1.22061e9 / 0.261573 s = 4666.4 MFLOP/s (local run)
    assert get(from_yaml, "flops", "total") / total / 1e6 == pytest.approx(mflops, rel=1e-4)
    r = from_yaml[0]
    assert (r["ranks"], r["nx"], r["ny"], r["nz"], r["version"]) == (2, 40, 40, 40, "1.0")
    assert get(from_yaml, "iterations", "count") == 149


def test_strict_yaml_loses_the_summary_line():
    # the README's format note: a strict YAML reader takes "#*** Performance Summary ***:" as a comment
    text = YAMLS[0].read_text()
    assert "#********** Performance Summary" not in str(yaml.safe_load(text))
    assert get(hpccg.parse(YAMLS[0]), "ddot_allreduce_time", "avg") == 0.0118804


def test_every_truncation_is_an_input_error():
    text = YAMLS[0].read_text()
    ends = [i + 1 for i, c in enumerate(text) if c == "\n"][:-1]
    for i in ends + [len(text) - 3]:
        with pytest.raises(InputError):
            hpccg.parse(YAMLS[0], text[:i])


def test_malformed():
    text = YAMLS[0].read_text()
    with pytest.raises(InputError, match="Time Summary/Total: not a number"):
        hpccg.parse(YAMLS[0], text.replace("Total   : 0.261573", "Total   : fast"))
    with pytest.raises(InputError, match="not HPCCG output"):
        hpccg.parse(YAMLS[0], text.replace("Name: hpccg", "Name: minife"))
