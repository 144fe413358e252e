"""A collected table cut short (a kill of an older crosstalk mid-write, a copy between machines
that stopped) exists, so Snakemake would take it for made and every later rule would fail on it:
`crosstalk report` removes it first and collects it again. The collection writes its tables whole."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crosstalk.analysis import write_whole
from crosstalk.analysis.workflow import broken_tables


def _table(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"metric": ["bw"] * 50, "value": [float(i) for i in range(50)]}), path)
    return path


def test_only_tables_that_are_not_whole_parquet_files_are_broken(tmp_path):
    whole = [_table(tmp_path / "table.parquet"), _table(tmp_path / "sysa" / "cases.parquet")]
    cut = _table(tmp_path / "cases.parquet")
    cut.write_bytes(cut.read_bytes()[:-20])                     # no footer
    empty = tmp_path / "sysa" / "table.parquet"
    empty.write_bytes(b"")
    text = tmp_path / "sysb" / "table.parquet"
    text.parent.mkdir()
    text.write_text("PAR1 this is not parquet PAR1\n")
    other = tmp_path / "sysb" / "notes.parquet"                 # not a table the workflow collects
    other.write_bytes(b"x")
    (tmp_path / "sysb" / "cases.parquet").mkdir()               # not a file: left to Snakemake's error
    assert broken_tables(tmp_path) == [cut, empty, text]
    assert all(pq.read_table(p).num_rows == 50 for p in whole)


def test_a_write_that_fails_leaves_the_table_as_it_was(tmp_path):
    table = _table(tmp_path / "table.parquet")
    before = table.read_bytes()

    def fails(tmp):
        tmp.write_bytes(before[:100])
        raise OSError(28, "No space left on device")
    with pytest.raises(OSError):
        write_whole(table, fails)
    assert table.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["table.parquet"]
    assert broken_tables(tmp_path) == []
