"""Inventory names are names: ``-i`` takes a name under inventories/ or a path to an inventory
directory; anything else is refused with one line before ansible-inventory runs, and
ansible-inventory never runs a file as an inventory script. External commands have time limits."""
import os
import shutil
import subprocess
import time

import pytest
from xt_testing import REPO, venv_tool

from crosstalk.errors import CrosstalkError
from crosstalk.proc import run

HANG = "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\nsleep 600\n"


def doctor(*args, cwd=REPO):
    start = time.monotonic()
    proc = subprocess.run([venv_tool("crosstalk"), "doctor", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)
    return proc, time.monotonic() - start


def assert_one_line_error(proc, seconds, *fragments):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert seconds < 30
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crosstalk: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


@pytest.fixture
def local_copy(tmp_path):
    dest = tmp_path / "site"
    shutil.copytree(REPO / "inventories" / "local", dest)
    return dest


def script(path):
    path.write_text(HANG)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("arg, fragments", [
    ("../../etc", ["/etc: inventory: not an inventory directory"]),
    ("/etc", ["/etc: inventory: not an inventory directory"]),
    ("a;b", ["'a;b': inventory: shell metacharacters"]),
    ("x\ny", [r"'x\ny': inventory: shell metacharacters"]),
    ("$(id)", ["inventory: shell metacharacters"]),
    ("..", ["'..': inventory: not an inventory name"]),
    ("no-such-inventory", ["no-such-inventory: inventory: no such inventory", "local"]),
    (str(REPO / "inventories" / "local" / "hosts.yml"), ["hosts.yml: inventory: not a directory"]),
    ("./no/such/dir", ["./no/such/dir: inventory: no such directory"]),
])
def test_bad_inventory_is_one_line(arg, fragments):
    proc, seconds = doctor("-i", arg, cwd="/usr/bin")     # where ../../etc is /etc
    assert_one_line_error(proc, seconds, *fragments)


def test_directory_that_is_not_an_inventory(tmp_path):
    (tmp_path / "group_vars").mkdir()
    script(tmp_path / "hosts")              # an inventory script, no hosts.yml: refused as such
    proc, seconds = doctor("-i", str(tmp_path))
    assert_one_line_error(proc, seconds, f"{tmp_path}: inventory: not an inventory directory")
    assert not (tmp_path / "ran").exists()


def test_executable_in_inventory_is_never_run(local_copy):
    script(local_copy / "hosts")
    proc, seconds = doctor("-i", str(local_copy))
    assert_one_line_error(proc, seconds, "ansible-inventory", str(local_copy / "hosts"))
    assert not (local_copy / "ran").exists()


def test_executable_hosts_yml_is_never_run(local_copy):
    # valid YAML (a comment and a scalar) and executable: the script plugin would run it
    script(local_copy / "hosts.yml")
    proc, seconds = doctor("-i", str(local_copy))
    assert_one_line_error(proc, seconds, "ansible-inventory", str(local_copy / "hosts.yml"))
    assert not (local_copy / "ran").exists()


@pytest.mark.parametrize("arg", ["local", "inventories/local", str(REPO / "inventories" / "local")])
def test_inventory_by_name_and_path(arg):
    proc, _ = doctor("-i", arg)
    assert proc.returncode == 0, proc.stderr
    assert "Inventory 'local'" in proc.stdout


def test_inventory_elsewhere_by_relative_path(local_copy):
    proc, _ = doctor("-i", "./site", cwd=local_copy.parent)
    assert proc.returncode == 0, proc.stderr


def test_time_limit_is_one_line_naming_the_command():
    start = time.monotonic()
    with pytest.raises(CrosstalkError) as err:
        run(["sleep", "5"], 0.5)
    assert time.monotonic() - start < 3
    assert str(err.value) == "`sleep 5` did not finish within 0.5 s"


def test_time_limit_ends_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    with pytest.raises(CrosstalkError, match="`grandchild` did not finish within 0.5 s"):
        run(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], 0.5, "grandchild")
    pid = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"sleep {pid} outlived its time limit")


def test_run_returns_output_and_status():
    proc = run(["sh", "-c", "echo out; echo err >&2; exit 3"], 10, capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out\n", "err\n")
    with pytest.raises(CrosstalkError, match="`false` failed with exit status 1"):
        run(["false"], 10, check=True)


@pytest.mark.parametrize("value", ["abc", "0", "inf"])
def test_report_timeout_must_be_seconds(value, tmp_path):
    env = dict(os.environ, CROSSTALK_RESULTS_DIR=str(tmp_path), CROSSTALK_REPORT_TIMEOUT=value)
    proc = subprocess.run([venv_tool("crosstalk"), "report"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (f"crosstalk: error: CROSSTALK_REPORT_TIMEOUT: {value!r}: "
                           "give a positive number of seconds\n")
