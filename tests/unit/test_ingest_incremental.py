"""Incremental collection: each run is read once into Parquet parts under ``<results>/.collect``;
the tables equal a collection from scratch, whatever was added, changed, broken or removed."""
import json
import os
import shutil

import pandas as pd
import pytest
from xt_testing import REPO

from crosstalk import examples_root
from crosstalk.analysis import ingest, ingestcache
from crosstalk.analysis.collect import collect

FIXTURE = next((REPO / "tests" / "fixtures" / "runs" / "local" / "runs").iterdir())
#: The shipped example runs, smallest first (the first has a handful of rows, the others hundreds).
EXAMPLES = sorted((p for p in (examples_root() / "vcluster" / "runs").iterdir() if (p / "report.json").exists()),
                  key=lambda p: (p / "report.json").stat().st_size)


def copy_run(src, root, system, name=None):
    dest = root / system / "runs" / (name or src.name)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("perflogs", "output"))
    return dest


@pytest.fixture
def results(tmp_path):
    """A results directory of real runs on two systems, and a copy of two shipped examples."""
    root = tmp_path / "results"
    copy_run(FIXTURE, root, "local")
    for src in EXAMPLES[:3]:
        copy_run(src, root, "vcluster")
    examples = tmp_path / "examples"
    for src in EXAMPLES[:2]:
        copy_run(src, examples, "vcluster")
    return root, examples


@pytest.fixture
def reads(monkeypatch):
    """The run directories ``load_run`` reads (the cache calls it for every run it reads)."""
    seen = []
    real = ingest.load_run

    def spy(run_dir, origin="user"):
        seen.append(run_dir.name)
        return real(run_dir, origin)

    monkeypatch.setattr(ingest, "load_run", spy)
    return seen


def cached(root, examples=None, systems=None):
    return collect(root, systems, examples, cache=root / ".collect")


def scratch(root, examples=None, systems=None):
    return collect(root, systems, examples)


def assert_same(got, want):
    """Same rows in the same order, same columns and dtypes, same errors."""
    for g, w in zip(got[:2], want[:2]):
        pd.testing.assert_frame_equal(g, w, check_exact=True)
        assert list(g.dtypes) == list(w.dtypes)
        for column in g.columns[g.dtypes == "object"]:      # None stays None (not NaN), 7 stays 7
            assert list(map(repr, g[column])) == list(map(repr, w[column])), column
    assert got[2] == want[2]


def parts(root):
    """{path relative to the cache: mtime_ns} of every file in the cache."""
    cache = root / ".collect"
    return {str(p.relative_to(cache)): p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}


def parts_of(root, run_name):
    return sorted(name for name in parts(root) if os.path.basename(name).startswith(run_name + "."))


def test_second_collection_reads_nothing_and_gives_the_same_tables(results, reads, monkeypatch):
    root, examples = results
    slow_path = []
    real = ingestcache._rows_frame
    monkeypatch.setattr(ingestcache, "_rows_frame", lambda *args: slow_path.append(1) or real(*args))
    first = cached(root, examples)
    assert sorted(reads) == sorted([FIXTURE.name] + [p.name for p in EXAMPLES[:3] + EXAMPLES[:2]])
    before = parts(root)
    # Per run: its perf and cases parts, in the results directory's cache (examples included).
    assert len(before) == 2 * 6 and {name.split("/")[0] for name in before} == {"user", "example"}
    reads.clear()
    second = cached(root, examples)
    assert reads == [] and parts(root) == before            # nothing read, no part rewritten
    assert not slow_path                                     # the table comes from Arrow as is
    assert_same(second, first)
    assert_same(second, scratch(root, examples))
    perf, cases, errors = second
    assert not perf.duplicated().any() and not cases.duplicated().any() and errors == []
    assert set(perf.origin) == {"user", "example"} and set(perf.system) == {"local", "vcluster"}


def test_the_shipped_examples_are_cached_in_the_results_directory(tmp_path):
    root = tmp_path / "results"
    copy_run(FIXTURE, root, "local")
    shipped = examples_root()
    before = sorted(p.relative_to(shipped) for p in shipped.rglob("*"))
    got = cached(root, shipped)
    assert sorted(p.relative_to(shipped) for p in shipped.rglob("*")) == before   # nothing written there
    assert len(parts_of(root, EXAMPLES[0].name)) == 2 and (root / ".collect" / "example" / "vcluster").is_dir()
    assert_same(cached(root, shipped), got)
    assert_same(got, scratch(root, shipped))


def edit_report(run, factor):
    report = json.loads((run / "report.json").read_text())
    for case in report["runs"][-1]["testcases"]:
        for values in (case.get("perfvalues") or {}).values():
            values[0] *= factor
    (run / "report.json").write_text(json.dumps(report))


def test_a_changed_run_alone_is_read_again(results, reads):
    root, examples = results
    old = cached(root, examples)[0]
    run = root / "local" / "runs" / FIXTURE.name
    old_parts = parts_of(root, run.name)
    edit_report(run, 2.0)
    reads.clear()
    got = cached(root, examples)
    assert reads == [run.name]
    assert_same(got, scratch(root, examples))
    mine = got[0].run_id == FIXTURE.name
    assert (got[0].value[mine].to_numpy() == 2.0 * old.value[old.run_id == FIXTURE.name].to_numpy()).all()
    new_parts = parts_of(root, run.name)
    assert len(new_parts) == 2 and not set(new_parts) & set(old_parts)   # the stale parts are gone


def test_touching_a_run_without_changing_it_reads_nothing(results, reads):
    """The key is the files' content: a new mtime (a copy, a checkout) is no change."""
    root, examples = results
    cached(root, examples)
    before = parts(root)
    report = root / "local" / "runs" / FIXTURE.name / "report.json"
    os.utime(report, ns=(report.stat().st_atime_ns, report.stat().st_mtime_ns + 10**9))
    reads.clear()
    cached(root, examples)
    assert reads == [] and parts(root) == before


@pytest.mark.parametrize("change", ["reframe.log", "provenance.json", "status.json", "attempt"])
def test_every_file_the_rows_come_from_is_in_the_key(results, reads, change):
    root, examples = results
    cached(root, examples)
    run = root / "vcluster" / "runs" / EXAMPLES[1].name
    if change == "reframe.log":
        with open(run / "reframe.log", "a") as fp:
            fp.write("one more line\n")
    elif change == "provenance.json":
        prov = json.loads((run / "provenance.json").read_text())
        (run / "provenance.json").write_text(json.dumps(dict(prov, git_commit="0" * 40)))
    elif change == "status.json":       # a run still going: no rows until its report is written
        (run / "status.json").write_text(json.dumps({"state": "running", "attempts": []}))
        (run / "report.json").unlink()
    else:                               # crosstalk run --resume: a second attempt's report
        attempt = run / "attempts" / "2" / "default"
        attempt.mkdir(parents=True)
        shutil.copy(run / "report.json", attempt / "report.json")
    reads.clear()
    got = cached(root, examples)
    assert reads == [run.name]
    assert_same(got, scratch(root, examples))
    reads.clear()
    assert_same(cached(root, examples), got)
    assert reads == []


def test_a_new_run_is_read_alone(results, reads):
    root, examples = results
    before = cached(root, examples)[0]
    new = copy_run(EXAMPLES[3], root, "vcluster")
    other = copy_run(FIXTURE, root, "newsys", "20270101T000000Z-00000000")
    reads.clear()
    got = cached(root, examples)
    assert sorted(reads) == sorted([new.name, other.name])
    assert_same(got, scratch(root, examples))
    assert len(got[0]) == len(before) + len(ingest.load_run(new)[0]) + len(ingest.load_run(other)[0])


def test_a_deleted_run_leaves_the_table_and_the_cache(results, reads):
    root, examples = results
    cached(root, examples)
    gone = root / "vcluster" / "runs" / EXAMPLES[2].name
    shutil.rmtree(gone)
    shutil.rmtree(root / "local")                      # a whole system
    shutil.rmtree(examples / "vcluster" / "runs" / EXAMPLES[1].name)
    reads.clear()
    got = cached(root, examples)
    assert reads == []
    assert_same(got, scratch(root, examples))
    assert EXAMPLES[2].name not in set(got[0].run_id[got[0].origin == "user"])
    assert set(got[0].system) == {"vcluster"}
    assert parts_of(root, EXAMPLES[2].name) == [] and not (root / ".collect" / "user" / "local").exists()
    assert sorted(parts(root)) == sorted(
        [f"user/vcluster/{n}" for n in os.listdir(root / ".collect" / "user" / "vcluster")]
        + [f"example/vcluster/{n}" for n in os.listdir(root / ".collect" / "example" / "vcluster")])
    assert len(parts(root)) == 2 * 3


def test_a_broken_run_is_listed_every_time_and_the_rest_collected(results, reads):
    root, examples = results
    bad = root / "local" / "runs" / FIXTURE.name
    text = (bad / "report.json").read_text()
    (bad / "report.json").write_text(text[: len(text) // 2])
    want = scratch(root, examples)
    assert len(want[2]) == 1 and str(bad / "report.json") in want[2][0] and "\n" not in want[2][0]
    reads.clear()
    first = cached(root, examples)
    assert_same(first, want)
    assert bad.name in reads and set(first[0].system) == {"vcluster"}
    assert [os.path.basename(p) for p in parts_of(root, bad.name)][0].endswith(".error.json")
    reads.clear()
    second = cached(root, examples)
    assert reads == [] and second[2] == want[2]           # listed again, not parsed again
    assert_same(second, want)
    # Repaired: read again, its rows come back and the error goes.
    (bad / "report.json").write_text(text)
    reads.clear()
    repaired = cached(root, examples)
    assert reads == [bad.name] and repaired[2] == [] and "local" in set(repaired[0].system)
    assert_same(repaired, scratch(root, examples))


@pytest.mark.parametrize("link", ["report.json", "provenance.json", "attempts"])
def test_a_link_out_of_a_run_is_refused_and_never_cached(results, tmp_path, link):
    """A run's files are its own: a link that leaves the run directory (to a file, or a resumed
    attempt's directory) is refused with the one-line error; links inside it are followed."""
    root, _ = results
    run = root / "local" / "runs" / FIXTURE.name
    outside = tmp_path / "elsewhere"
    if link == "attempts":
        (outside / "1" / "default").mkdir(parents=True)
        shutil.copy(run / "report.json", outside / "1" / "default" / "report.json")
    else:
        outside.mkdir()
        shutil.copy(run / link, outside / link)
    (run / link).unlink(missing_ok=True)
    (run / link).symlink_to(outside if link == "attempts" else outside / link)
    got = cached(root)
    assert len(got[2]) == 1 and "a link out of its run directory" in got[2][0] and "\n" not in got[2][0]
    assert set(got[0].system) == {"vcluster"} and parts_of(root, run.name) == []
    # The same file linked from inside the run is its own: collected.
    if link != "attempts":
        (run / link).unlink()
        shutil.copy(outside / link, run / f"{link}.orig")
        (run / link).symlink_to(f"{link}.orig")
        assert "local" in set(cached(root)[0].system)


def test_a_cached_error_names_the_run_where_it_is_now(results):
    """The same results reached by another path: the message names the path given now."""
    root, examples = results
    bad = root / "local" / "runs" / FIXTURE.name
    (bad / "provenance.json").write_text("{")
    cached(root)
    elsewhere = root.parent / "moved"
    root.rename(elsewhere)
    got = cached(elsewhere)
    assert got[2] == scratch(elsewhere)[2] and str(elsewhere / "local") in got[2][0]


def test_a_selection_of_systems_leaves_the_other_systems_parts(results, reads):
    root, examples = results
    cached(root, examples)
    before = parts(root)
    reads.clear()
    got = cached(root, examples, systems=["local"])
    assert reads == [] and parts(root) == before
    assert_same(got, scratch(root, examples, systems=["local"]))
    assert set(got[0].system) == {"local"}


def test_an_interrupted_collection_leaves_no_half_part(results, reads, monkeypatch):
    root, examples = results
    real = ingestcache.pq.write_table
    written = []

    def interrupted(table, where):
        if written:                   # the second part: half written, then Ctrl-C
            with open(where, "wb") as fp:
                fp.write(b"PAR1 half")
            raise KeyboardInterrupt
        written.append(where)
        real(table, where)

    monkeypatch.setattr(ingestcache.pq, "write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cached(root, examples)
    monkeypatch.setattr(ingestcache.pq, "write_table", real)
    # One perf part landed, its cases part did not: no temporary file, no half part.
    assert [p for p in parts(root) if p.endswith(".tmp") or os.path.basename(p).startswith(".")] == []
    assert len(parts(root)) == 1 and list(parts(root))[0].endswith(".perf.parquet")
    # A killed collection's leftover and a damaged part: removed, and the runs read again.
    cache_dir = root / ".collect" / "user" / "vcluster"
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / ".leftover.perf.parquet.123.tmp").write_bytes(b"PAR1")
    reads.clear()
    got = cached(root, examples)
    assert len(reads) == 6 and not (cache_dir / ".leftover.perf.parquet.123.tmp").exists()
    assert_same(got, scratch(root, examples))
    damaged = next(cache_dir.glob("*.cases.parquet"))
    damaged.write_bytes(damaged.read_bytes()[:100])
    reads.clear()
    assert_same(cached(root, examples), got)
    assert reads == [damaged.name.split(".")[0]]


def test_new_ingestion_code_reads_every_run_again(results, reads, monkeypatch):
    root, examples = results
    cached(root, examples)
    monkeypatch.setattr(ingestcache, "_code", b"another version of the ingestion")
    reads.clear()
    got = cached(root, examples)
    assert len(reads) == 6 and len(parts(root)) == 2 * 6
    assert_same(got, scratch(root, examples))


def test_values_a_part_cannot_hold_are_read_every_time(results, reads):
    """A unit that is a number (not a string): no part, but the same table as from scratch."""
    root, examples = results
    run = root / "local" / "runs" / FIXTURE.name
    report = json.loads((run / "report.json").read_text())
    case = next(c for c in report["runs"][0]["testcases"] if c.get("perfvalues"))
    next(iter(case["perfvalues"].values()))[4] = 7
    (run / "report.json").write_text(json.dumps(report))
    want = scratch(root, examples)
    assert want[0]["unit"].dtype == object
    assert_same(cached(root, examples), want)
    for _ in range(2):
        reads.clear()
        assert_same(cached(root, examples), want)
        assert reads == [run.name] and parts_of(root, run.name) == []


def test_no_runs(tmp_path):
    assert_same(cached(tmp_path), scratch(tmp_path))
    assert_same(cached(tmp_path, tmp_path / "none"), scratch(tmp_path))
