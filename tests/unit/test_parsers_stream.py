"""STREAM 5.10 stdout parser on the real fixtures (tests/fixtures/upstream/stream)."""
import pytest
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.parsers import stream

DIR = REPO / "tests" / "fixtures" / "upstream" / "stream"


def get(recs, metric, stat):
    [v] = [r["value"] for r in recs if r["metric"] == metric and r["stat"] == stat]
    return v


@pytest.mark.parametrize("name, threads, triad", [("stream_c_80M_ntimes20_omp1.stdout.txt", 1, 23344.3),
                                                  ("stream_c_80M_ntimes20_omp2.stdout.txt", 2, 32436.8),
                                                  ("stream_c_80M_ntimes20_omp2_run5.stdout.txt", 2, 43528.4)])
def test_fixtures(name, threads, triad):
    recs = stream.parse(DIR / name)
    assert len(recs) == 17                      # 4 kernels x (rate + 3 times) + validation
    assert get(recs, "triad_bw", "best") == triad
    assert get(recs, "validation", "passed") == 1.0
    r = recs[0]
    assert (r["threads"], r["array_size"], r["ntimes"], r["bytes_per_element"], r["version"], r["unit"]) == \
        (threads, 80000000, 20, 8, "5.10", "MB/s")


def test_best_rate_matches_min_time():
    # STREAM's rate = bytes moved / min time: Triad moves 3 arrays x 8 B x 80e6 = 1.92e9 B;
    # omp1: 1.92e9 / 0.082247 s = 23344.0e6 B/s, printed 23344.3 (min time printed to 1 us)
    recs = stream.parse(DIR / "stream_c_80M_ntimes20_omp1.stdout.txt")
    assert 3 * 8 * 80e6 / get(recs, "triad_time", "min") / 1e6 == pytest.approx(get(recs, "triad_bw", "best"), rel=1e-4)


def test_broken_variants():
    path = DIR / "stream_c_80M_ntimes20_omp1.stdout.txt"
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("Solution Validates"))
    for n in range(cut):                         # every cut before the validation line
        with pytest.raises(InputError):
            stream.parse(path, "".join(lines[:n]))
    with pytest.raises(InputError, match="truncated: missing Add, Triad"):
        stream.parse(path, "".join(line for line in lines if not line.startswith(("Add:", "Triad:"))))
    with pytest.raises(InputError, match="malformed Scale row"):
        stream.parse(path, text.replace("0.066127     0.062643", "0.066127", 1))
    with pytest.raises(InputError, match="line 30: truncated: last line has no end of line"):
        stream.parse(path, text[:text.index("Triad:") + 20])
    failed = stream.parse(path, text.replace("Solution Validates: avg error less than 1.000000e-13 on all three arrays",
                                             "Failed Validation on array a[]"))
    assert get(failed, "validation", "passed") == 0.0
