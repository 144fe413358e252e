"""Every reader of a user's file goes through crosstalk.userfiles (issue 42): a generated family of
bad files (nesting depth, size, file type, encoding) for each reader, each one InputError naming
the file (or, where a reader tolerates it, no error), never a crash or a hang; and the reported
failures through the real commands: a FIFO as a spec, a broken run beside good ones."""
import os
import shutil
import subprocess
import threading
import time

import pytest
from xt_testing import REPO, tool_env, venv_tool

from crosstalk import userfiles
from crosstalk.analysis.ingest import load_run
from crosstalk.errors import InputError
from crosstalk.models.papers import paper_table_rows
from crosstalk.parsers import kernel, parse
from crosstalk.run import runstatus
from crosstalk.site import inventory
from crosstalk.specs import load_spec_file
from crosstalk.vcluster import settings

(GOOD_RUN,) = sorted((REPO / "tests" / "fixtures" / "runs" / "local" / "runs").iterdir())
HPCCG = REPO / "tests" / "fixtures" / "upstream" / "hpccg" / "hpccg_np2_local_40x40x40.stdout.txt"
PAPER_TABLE = REPO / "results" / "papers" / "casas_model_results.csv"
#: Seconds any read may take here (a FIFO opened for reading would block for ever).
LIMIT = 20
MAX = userfiles.MAX_DEPTH


def json_nested(depth):
    """A JSON value nested ``depth`` levels (a list in lists)."""
    return "[" * depth + "]" * depth


def yaml_block(depth):
    """A YAML mapping nested ``depth`` levels in block style."""
    return "".join("  " * i + "k:\n" for i in range(depth - 1)) + "  " * (depth - 1) + "k: v\n"


# ---------------------------------------------------------------- the layer's limits, exactly

@pytest.mark.parametrize("make", [
    lambda d: '{"a": ' + json_nested(d - 1) + "}",
    lambda d: json_nested(d),
], ids=["object", "list"])
def test_json_nested_to_the_limit_is_read_and_one_more_level_is_refused(tmp_path, make):
    path = tmp_path / "x.json"
    path.write_text(make(MAX))
    userfiles.load_json(path, "report")
    for depth in (MAX + 1, 1000, 100_000):
        path.write_text(make(depth))
        with pytest.raises(InputError, match=rf"^{path}: line 1: nested deeper than {MAX} levels, refused$"):
            userfiles.load_json(path, "report")


@pytest.mark.parametrize("make", [
    lambda d: "a: " + json_nested(d - 1) + "\n",
    lambda d: "a: " + "{k: " * (d - 1) + "v" + "}" * (d - 1) + "\n",
    yaml_block,
], ids=["flow-sequence", "flow-mapping", "block"])
def test_yaml_nested_to_the_limit_is_read_and_one_more_level_is_refused(tmp_path, make):
    path = tmp_path / "x.yaml"
    path.write_text(make(MAX))
    assert userfiles.load_yaml(path, "spec")
    depths = (MAX + 1, 1000) if make is yaml_block else (MAX + 1, 1000, 100_000)
    for depth in depths:
        path.write_text(make(depth))
        with pytest.raises(InputError, match=rf"^{path}: line \d+: nested deeper than {MAX} levels, refused$"):
            userfiles.load_yaml(path, "spec")


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path):
    lines = ["a0: &a0 [" + ", ".join(["x"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    start = time.monotonic()
    with pytest.raises(InputError, match=r"line \d+: expands to more than .* nodes through aliases"):
        userfiles.load_yaml(path, "inventory")
    assert time.monotonic() - start < 5
    path.write_text("\n".join(lines[:3]) + "\n")       # a few aliases are YAML as usual
    assert len(userfiles.load_yaml(path, "inventory")["a2"]) == 10


def test_a_file_past_its_kind_limit_is_refused_and_one_at_it_read(tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_bytes(b"x" * 100)
    monkeypatch.setitem(userfiles.MAX_BYTES, "output", 100)
    assert userfiles.read_text(path, "output") == "x" * 100
    monkeypatch.setitem(userfiles.MAX_BYTES, "output", 99)
    with pytest.raises(InputError, match=rf"^{path}: 100 bytes: larger than the 99 bytes an? output file may hold"):
        userfiles.read_text(path, "output")


def test_every_kind_has_a_limit_of_at_least_a_mebibyte():
    assert min(userfiles.MAX_BYTES.values()) >= userfiles.MiB


# ---------------------------------------------------------------- the family, reader by reader

class Reader:
    """One reader of a user file: how to place a file's bytes where it reads them, how to call it,
    and whether it tolerates bad encoding (logs and job outputs: a stray byte is not an error)."""

    def __init__(self, name, kind, good, place, call, fmt, lenient=False, never_fails=False):
        self.name, self.kind, self.good, self.place, self.call = name, kind, good, place, call
        self.fmt, self.lenient, self.never_fails = fmt, lenient, never_fails


def _in_run(file_name):
    def place(tmp_path):
        run = tmp_path / "local" / "runs" / GOOD_RUN.name
        shutil.copytree(GOOD_RUN, run)
        (run / file_name).unlink(missing_ok=True)
        return run / file_name, run
    return place


def _named(*parts):
    def place(tmp_path):
        path = tmp_path.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path, path if parts[0] != "inv" else tmp_path / "inv"
    return place


def _kernel_line(value):
    return '{"kernel": "xt-stream", "type": "info", "detail": %s}\n' % value


READERS = [
    Reader("spec", "spec", (REPO / "experiments" / "stream.yaml").read_bytes(), _named("stream.yaml"),
           load_spec_file, "yaml"),
    Reader("inventory", "inventory", b"site_extra: 1\n", _named("inv", "group_vars", "all", "extra.yml"),
           lambda inv: inventory._check_yaml_syntax(inv), "yaml"),
    Reader("vcluster-settings", "inventory", b"vcluster_subnet: 198.18.0.0/24\n",
           _named("vc", "group_vars", "all", "vcluster.yml"), settings.load_yaml, "yaml"),
    Reader("report", "report", (GOOD_RUN / "report.json").read_bytes(), _in_run("report.json"), load_run, "json"),
    Reader("provenance", "provenance", (GOOD_RUN / "provenance.json").read_bytes(), _in_run("provenance.json"),
           load_run, "json"),
    Reader("reframe-log", "log", (GOOD_RUN / "reframe.log").read_bytes(), _in_run("reframe.log"), load_run,
           "text", lenient=True),
    Reader("status", "provenance", b'{"state": "finished", "attempts": []}\n', _in_run("status.json"),
           runstatus.read, "json", never_fails=True),
    Reader("kernel-lines", "output", _kernel_line('"ok"').encode(), _named("xt.out"), lambda p: kernel.parse(p),
           "jsonl", lenient=True),
    Reader("upstream-output", "output", HPCCG.read_bytes(), _named("hpccg.out"), lambda p: parse("hpccg", p),
           "text", lenient=True),
    Reader("paper-table", "table", PAPER_TABLE.read_bytes(), _named("papers", "t.csv"),
           lambda p: paper_table_rows("t", p.parent), "text"),
]


READER = {r.name: r for r in READERS}


def _nested(reader, depth):
    """The reader's good file with a value nested ``depth`` levels deep in it."""
    if reader.fmt == "yaml":
        return reader.good + b"deep: " + json_nested(depth).encode() + b"\n"
    if reader.fmt == "json":
        return reader.good.replace(b"{", b'{"deep": ' + json_nested(depth).encode() + b", ", 1)
    return _kernel_line(json_nested(depth)).encode()


def _bad_byte(reader):
    """The reader's good file with a byte that is not UTF-8 in it (in a comment or a string)."""
    if reader.fmt == "yaml":
        return reader.good + b"# caf\xe9\n"
    if reader.fmt == "jsonl":
        return _kernel_line('"caf\xe9"').encode("latin-1")
    if reader.fmt == "json":
        return reader.good.replace(b'"', b'"\xe9', 1)
    first, rest = reader.good.split(b"\n", 1)
    return first + b"\n# caf\xe9\n" + rest


def _call(reader, target):
    """The reader's result or its InputError, in a thread: a read that blocks fails the test
    (the FIFO is then opened for writing, which ends the blocked open)."""
    out = {}

    def work():
        try:
            out["value"] = reader.call(target)
        except InputError as err:
            out["error"] = err
        except BaseException as err:      # noqa: BLE001  (anything else is the defect under test)
            out["crash"] = err
    thread = threading.Thread(target=work, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(LIMIT)
    return out, thread, time.monotonic() - start


def _unblock(path):
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


VARIANTS = ["good", "depth-deep", "depth-pathological", "size", "fifo", "directory", "device", "encoding"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_generated_bad_file(reader, variant, tmp_path, monkeypatch):
    path, target = reader.place(tmp_path)
    expect = None                        # the problem the one line must state; None: read as usual
    if variant == "good":
        path.write_bytes(reader.good)
    elif variant.startswith("depth"):
        if reader.fmt == "text":
            pytest.skip("not a nested format")
        path.write_bytes(_nested(reader, MAX + 1 if variant == "depth-deep" else 100_000))
        expect = f"nested deeper than {MAX} levels, refused"
    elif variant == "size":
        path.write_bytes(reader.good)
        monkeypatch.setitem(userfiles.MAX_BYTES, reader.kind, len(reader.good) - 1)
        expect = "larger than the"
    elif variant == "fifo":
        os.mkfifo(path)
        expect = "cannot read: is a FIFO, not a regular file"
    elif variant == "directory":
        if reader.name == "inventory":
            pytest.skip("a directory in group_vars holds a group's files")
        path.mkdir()
        expect = "cannot read: is a directory, not a regular file"
    elif variant == "device":
        path.symlink_to("/dev/zero")     # never opened: refused on os.stat
        # a run's file must not lead out of its run directory: refused before it is read
        expect = ("a link out of its run directory" if target != path and reader.name != "inventory"
                  else "cannot read: is a character device, not a regular file")
    elif variant == "encoding":
        path.write_bytes(_bad_byte(reader))
        expect = None if reader.lenient else "not UTF-8 text"
    out, thread, seconds = _call(reader, target)
    if thread.is_alive():
        _unblock(path)
        pytest.fail(f"{reader.name}: still reading {path} after {LIMIT} s")
    assert "crash" not in out, f"{type(out.get('crash')).__name__}: {out.get('crash')}"
    if expect is None or reader.never_fails:
        assert "error" not in out, out["error"]
        return
    assert "error" in out, f"{variant} read without an error"
    message = str(out["error"])
    assert "\n" not in message and message.startswith(f"{path}: ") and expect in message, message
    assert seconds < 5, f"{seconds:.1f} s"


# ---------------------------------------------------------------- through the real commands

def _crosstalk(*argv, env=None, timeout=300):
    start = time.monotonic()
    proc = subprocess.run([venv_tool("crosstalk"), *argv], capture_output=True, text=True, cwd=REPO,
                          env={**tool_env(), **(env or {})}, timeout=timeout)
    return proc, time.monotonic() - start


def _crosstalk_forked(work, *argv, env, timeout=300):
    """As ``_crosstalk``, in a child of tests/cli_forkserver.py (pandas and scipy imported once,
    about 1.5 s of each run): the finished process's status and output."""
    from cli_forkserver import run
    return subprocess.CompletedProcess(argv, *run([venv_tool("crosstalk"), *argv], {**tool_env(), **env}, REPO,
                                                  work, timeout))


def test_a_fifo_as_spec_is_one_line_at_once(tmp_path):
    fifo = tmp_path / "stream.yaml"
    os.mkfifo(fifo)
    try:
        proc, seconds = _crosstalk("spec", "check", str(fifo), timeout=LIMIT * 3)
    finally:
        _unblock(fifo)
    assert proc.returncode == 2 and not proc.stdout, proc.stderr
    assert proc.stderr == f"crosstalk: error: {fifo}: cannot read: is a FIFO, not a regular file\n"
    assert seconds < LIMIT


def test_a_broken_run_leaves_the_verdicts_of_the_others_byte_for_byte(tmp_path):
    """`crosstalk claims` on a good run and the shipped examples, then with a run whose report
    nests 100 000 levels beside them: the same output, the same exit status, one line more."""
    outputs = []
    for name, broken in (("without", False), ("with", True)):
        results = tmp_path / name / "results"
        shutil.copytree(GOOD_RUN, results / "local" / "runs" / GOOD_RUN.name)
        if broken:
            bad = results / "local" / "runs" / "20990101T000000Z-nested"
            shutil.copytree(GOOD_RUN, bad)
            (bad / "report.json").write_bytes(_nested(READER["report"], 100_000))
        # one matplotlib font cache for both runs: built by the first, read by the second
        env = {"CROSSTALK_RESULTS_DIR": str(results), "MPLCONFIGDIR": str(tmp_path / "mpl")}
        outputs.append((_crosstalk_forked(tmp_path / name, "claims", "--examples", env=env), results))
    (clean, _), (skipped, results) = outputs
    assert clean.returncode == skipped.returncode == 0, clean.stderr + skipped.stderr
    assert skipped.stdout == clean.stdout and "(example)" in clean.stdout and "local@" in clean.stdout
    line = f"{bad}/report.json: line 1: nested deeper than {MAX} levels, refused"
    assert not clean.stderr and skipped.stderr == f"crosstalk: error: {line} (run skipped)\n"
    assert (results / "collect-errors.txt").read_text() == line + "\n"
