"""results/papers/*.csv load with their citation line; bad tables fail in one line."""
import math
import subprocess
import sys

import pytest

from crosstalk.bibliography import bibliography, short_citation
from crosstalk.errors import InputError
from crosstalk.models import congestion, energy, queueing, throttling
from crosstalk.models.papers import PAPERS_DIR, load_paper_table, paper_table_rows, paper_tables


def test_every_table_loads_with_citation():
    names = paper_tables()
    assert "chunduri2019_gpcnet_table2" in names and len(names) >= 10
    readme = (PAPERS_DIR / "README.md").read_text()
    for name in names:
        df = load_paper_table(name)
        assert df.attrs["paper"] in bibliography() and not df.empty, name
        assert df.attrs["citation"].startswith(short_citation(df.attrs["paper"]) + ","), name
        assert f"{name}.csv" in readme, f"{name} not listed in results/papers/README.md"


def test_table2_values():
    df = load_paper_table("chunduri2019_gpcnet_table2")
    assert df.attrs["citation"].startswith("Chunduri et al. SC19, Table 2: canary performance")
    edison = df[(df.system == "Edison") & (df.pport == 24)].iloc[0]
    assert edison.load_p99_lat == 27117.9 and edison.iso_avg_lat == 3.0
    assert len(df) == 19


def test_bad_tables(tmp_path):
    with pytest.raises(InputError, match="no paper table"):
        load_paper_table("nope", tmp_path)
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="x.csv: line 1: missing"):
        load_paper_table("x", tmp_path)
    (tmp_path / "y.csv").write_text("# Someone 2020, Table 1: t\na,b\n1,2\n")
    with pytest.raises(InputError, match="y.csv: line 1: unknown paper 'Someone 2020'"):
        load_paper_table("y", tmp_path)


def test_model_sources_start_with_a_short_citation():
    shorts = tuple(short_citation(key) for key in bibliography())
    for source in (congestion.SOURCE, energy.SOURCE_62, queueing.SOURCE, throttling.SOURCE):
        assert source.startswith(shorts), source


def test_groves_rmamt_quotes_are_consistent():
    # §2.1: "as we scale up the number of threads from 1 to 16, we see a decrease to bandwidth of
    # 849 MiB/s or 28%": 849 / 3077 (fence, 1 thread, 1 MiB) = 27.6 % -> 28
    df = load_paper_table("groves2017_rmamt_openmpi")
    fence = df[(df.metric == "bandwidth") & (df["sync"] == "fence")].value.iloc[0]
    drop = df[df.metric == "bandwidth_drop_1_to_16_threads"].value.iloc[0]
    assert round(100 * 849 / fence) == drop == 28



@pytest.mark.parametrize("name", paper_tables())
def test_rows_read_without_pandas_are_the_frames_cells(name):
    """The machines read the tables as text (link commands do not import pandas); the same cells."""
    frame = load_paper_table(name)
    rows, attrs = paper_table_rows(name)
    assert attrs == frame.attrs and len(rows) == len(frame) and list(rows[0]) == list(frame.columns)

    def same(text, value):
        if isinstance(value, float) and math.isnan(value):
            return text == ""
        return float(text) == value if isinstance(value, (int, float)) else text == value

    for row, values in zip(rows, frame.itertuples(index=False)):
        assert all(same(text, value) for text, value in zip(row.values(), values)), (row, values)


def test_the_machines_load_without_pandas():
    code = ("import sys; from crosstalk.site.machines import all_machines; assert len(all_machines()) > 10; "
            "assert 'pandas' not in sys.modules, 'pandas imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
