"""Apptainer definition-file lint: the shipped recipe passes, broken variants name file and section."""
import subprocess
import sys

import pytest
from xt_testing import REPO

from crosstalk.errors import InputError
from crosstalk.site.containers import DEF_FILE, INSTALL_SCRIPT, lint_def, parse_def

ORIGINAL = DEF_FILE.read_text()


def test_shipped_recipe_passes():
    header, sections, labels = lint_def(DEF_FILE)
    assert header["Bootstrap"][1] == "debootstrap"
    assert header["OSVersion"][1] == "bookworm"
    assert labels["org.crosstalk.install-script"] == "containers/install.sh"
    assert "xt-stream" in "\n".join(text for _, text in sections["test"])


def test_files_copies_bench_and_the_install_script():
    _, sections = parse_def(DEF_FILE)
    pairs = [text.split() for _, text in sections["files"] if text.strip()]
    for source, _dest in pairs:
        assert (REPO / source).exists(), source
    assert ["containers/install.sh", INSTALL_SCRIPT] in pairs


def test_install_script_is_valid_posix_sh():
    proc = subprocess.run(["sh", "-n", str(REPO / "containers" / "install.sh")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_cli_reports_ok_and_errors(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "crosstalk.site.containers"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip().endswith(": ok")
    broken = tmp_path / "x.def"
    broken.write_text(ORIGINAL.replace("Bootstrap: debootstrap", "Bootstrap: floppy"))
    bad = subprocess.run([sys.executable, "-m", "crosstalk.site.containers", str(broken)],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr == f"crosstalk: error: {broken}: header.Bootstrap: unknown agent 'floppy'\n"


BROKEN = [
    ("no bootstrap", ("Bootstrap: debootstrap\n", ""), "header.Bootstrap", "missing"),
    ("unknown agent", ("Bootstrap: debootstrap", "Bootstrap: floppy"), "header.Bootstrap", "unknown"),
    ("no OSVersion", ("OSVersion: bookworm\n", ""), "header.OSVersion", "required by"),
    ("fixed mirror", ("MirrorURL: {{ MIRROR }}", "MirrorURL: http://mirror.example.org/debian"),
     "header.MirrorURL", "build argument"),
    ("bad header line", ("Include: ca-certificates", "Include ca-certificates"), "header", "Key: value"),
    ("no %test", ("%test\n", "%startscript\n"), "%test", "required section missing"),
    ("no %help", ("%help\n", "%setup\n"), "%help", "required section missing"),
    ("unknown section", ("%help\n", "%helpme\n"), "%helpme", "unknown section"),
    ("repeated", ("%runscript\n", "%environment\n"), "%environment", "repeated"),
    ("app section", ("%runscript\n", "%apprun foo\n"), "%apprun", "SCIF"),
    ("post does more", ("    /bin/sh /opt/crosstalk/src/install.sh /opt/crosstalk/src\n",
                        "    /bin/sh /opt/crosstalk/src/install.sh /opt/crosstalk/src\n    apt-get install -y vim\n"),
     "%post", "must only run"),
    ("post other script", ("/bin/sh /opt/crosstalk/src/install.sh /opt/crosstalk/src",
                           "/bin/sh /tmp/other.sh"), "%post", "must only run"),
    ("post chained", ("/bin/sh /opt/crosstalk/src/install.sh /opt/crosstalk/src",
                      "/bin/sh /opt/crosstalk/src/install.sh /opt/crosstalk/src && rm -rf /"),
     "%post", "must only run"),
    ("script not copied", ("    containers/install.sh /opt/crosstalk/src/install.sh\n", ""),
     "%files", "must copy"),
    ("label missing", ("    org.crosstalk.mpi openmpi-4.1.4 mpich-4.0.2\n", ""), "%labels", "org.crosstalk.mpi"),
    ("label empty", ("org.crosstalk.mpi openmpi-4.1.4 mpich-4.0.2", "org.crosstalk.mpi"), "%labels", "no value"),
    ("stale version", ("org.crosstalk.version 0.1.0", "org.crosstalk.version 0.0.9"), "%labels",
     "crosstalk is"),
    ("registry in help", ("in /opt/crosstalk/bin,", "in /opt/crosstalk/bin, pulled from docker.io,"),
     "%help", "docker.io"),
    ("url in environment", ("export PATH=/opt/crosstalk/bin:$PATH",
                            "export PATH=/opt/crosstalk/bin:$PATH\n    export M=https://10.0.0.1/x"),
     "%environment", "https://1"),
]


@pytest.mark.parametrize("old_new, section, problem", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_broken_variants_name_file_and_section(tmp_path, old_new, section, problem):
    old, new = old_new
    assert old in ORIGINAL, f"test out of date: {old!r} not in the recipe"
    path = tmp_path / "broken.def"
    path.write_text(ORIGINAL.replace(old, new, 1))
    with pytest.raises(InputError) as err:
        lint_def(path)
    assert err.value.path == str(path)
    assert err.value.field == section
    assert problem in err.value.problem
    assert "\n" not in str(err.value)


def test_empty_required_section(tmp_path):
    path = tmp_path / "empty.def"
    head, _, rest = ORIGINAL.partition("%test\n")
    _, _, after = rest.partition("%labels\n")
    path.write_text(head + "%test\n    # nothing\n\n%labels\n" + after)
    with pytest.raises(InputError, match=r"%test: required section missing or empty"):
        lint_def(path)


def test_other_bootstrap_agents_need_their_keys(tmp_path):
    path = tmp_path / "docker.def"
    text = ORIGINAL.replace("Bootstrap: debootstrap\nOSVersion: bookworm\nMirrorURL: {{ MIRROR }}\n"
                            "Include: ca-certificates\n", "Bootstrap: docker\n")
    path.write_text(text)
    with pytest.raises(InputError, match=r"header.From: required by 'Bootstrap: docker'"):
        lint_def(path)
    path.write_text(text.replace("Bootstrap: docker\n", "Bootstrap: docker\nFrom: {{ BASE }}\n"))
    lint_def(path)
