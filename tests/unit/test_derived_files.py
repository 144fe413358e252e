"""A file the report workflow derived and reads back, cut short (a kill of an older crosstalk
mid-write, a copy between machines that stopped), still exists, so Snakemake would take it for made
and every later rule would fail on it: `crosstalk report` removes it, and the workflow (each is one
of its targets) makes it again. The workflow writes them whole."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crosstalk.analysis import derived, write_whole
from crosstalk.claims.verdictfile import FORMAT, write
from crosstalk.errors import InputError


def _table(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"metric": ["bw"] * 50, "value": [float(i) for i in range(50)]}), path)
    return path


def test_only_derived_files_that_are_not_whole_are_broken(tmp_path):
    whole = [_table(tmp_path / "table.parquet"), _table(tmp_path / "sysa" / "cases.parquet")]
    cut = _table(tmp_path / "cases.parquet")
    cut.write_bytes(cut.read_bytes()[:-20])                     # no footer
    empty = tmp_path / "sysa" / "table.parquet"
    empty.write_bytes(b"")
    text = tmp_path / "sysb" / "table.parquet"
    text.parent.mkdir()
    text.write_text("PAR1 this is not parquet PAR1\n")
    (tmp_path / "sysb" / "notes.parquet").write_bytes(b"x")     # not a file the workflow derives
    write(tmp_path / "verdicts.json", [{"id": "a", "verdict": "reproduced"}])
    assert derived.broken(tmp_path) == [cut, empty, text]
    assert all(pq.read_table(p).num_rows == 50 for p in whole)

    verdicts = tmp_path / "verdicts.json"
    for bad in ('{"format": "crosstalk-verdicts/1", "verdicts": [', json.dumps({"format": "other", "verdicts": []}),
                json.dumps({"format": FORMAT, "verdicts": [1, "x"]}), ""):
        verdicts.write_text(bad)
        assert verdicts in derived.broken(tmp_path), bad


def test_a_directory_where_a_derived_file_belongs_is_a_one_line_error_and_is_left_alone(tmp_path):
    (tmp_path / "sysa" / "table.parquet").mkdir(parents=True)
    with pytest.raises(InputError, match="table.parquet: not a file crosstalk wrote"):
        derived.broken(tmp_path)
    assert (tmp_path / "sysa" / "table.parquet").is_dir()


def test_a_write_that_fails_leaves_the_file_as_it_was(tmp_path):
    table = _table(tmp_path / "table.parquet")
    before = table.read_bytes()

    def fails(tmp):
        tmp.write_bytes(before[:100])
        raise OSError(28, "No space left on device")
    with pytest.raises(OSError):
        write_whole(table, fails)
    assert table.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["table.parquet"]
    assert derived.broken(tmp_path) == []


def test_a_file_system_error_is_one_line_naming_the_path_and_exit_2(tmp_path, monkeypatch, capsys):
    # the report's lock made a directory: before, a traceback and exit 1 (claims' "contradicted")
    from crosstalk.cli import main
    (tmp_path / ".report.lock").mkdir()
    monkeypatch.setenv("CROSSTALK_RESULTS_DIR", str(tmp_path))
    assert main(["report", "--no-examples"]) == 2
    err = capsys.readouterr().err
    assert err == f"crosstalk: error: {tmp_path / '.report.lock'}: Is a directory\n"
