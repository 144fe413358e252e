"""crosstalk.parsers.parse dispatches by tool name; shared helpers."""
import pytest
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.parsers import TOOLS, parse, slug

UP = REPO / "tests" / "fixtures" / "upstream"


@pytest.mark.parametrize("tool, path, metric", [
    ("gpcnet", UP / "gpcnet/network_test_2nodes_1ppn.stdout.txt", "rr_two_sided_lat"),
    ("hpccg", UP / "hpccg/hpccg_np2_local_40x40x40.stdout.txt", "iterations"),
    ("lammps", UP / "lammps/lj_melt_32k_np1_n1.log.lammps", "loop_time"),
])
def test_dispatch(tool, path, metric):
    recs = parse(tool, path)
    assert recs[0]["metric"] == metric
    assert all({"metric", "value", "unit", "stat", "tool"} <= set(r) for r in recs)


def test_unknown_tool_and_helpers(tmp_path):
    assert set(TOOLS) == {"gpcnet", "hpccg", "lammps", "xt"}     # the outputs the tests read
    with pytest.raises(InputError, match="no parser for 'hpl'"):
        parse("hpl", "x")
    with pytest.raises(InputError, match="is a directory"):
        parse("hpccg", tmp_path)
    assert slug("RR Two-sided BW+Sync") == "rr_two_sided_bw_sync"
