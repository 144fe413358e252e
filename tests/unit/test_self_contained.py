"""Nothing tracked in the repository points outside it (issue 10 item 6): papers are cited
bibliographically (results/papers/bibliography.yaml), not by files only the authors had."""
import re
import subprocess
from pathlib import Path

import pytest
from xt_testing import REPO

# Character classes, so that this pattern does not match its own source text.
OUTSIDE = re.compile(rb"[.][.]/shared|shared/seeds|[.]mirror[/]|[.]library[/]|[0-9]{3}_[0-9a-f]{16}[.]txt")


def test_no_references_outside_the_repository():
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    this = Path(__file__).resolve().relative_to(REPO).as_posix()
    hits = []
    for name in listed.decode().split("\0"):
        path = REPO / name
        if not name or name == this or not path.is_file():   # deleted in the work tree
            continue
        hits += [f"{name}: {m.group().decode()}" for m in OUTSIDE.finditer(path.read_bytes())]
    assert not hits, "\n".join(hits)
