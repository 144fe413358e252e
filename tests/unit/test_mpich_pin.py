"""The MPICH the bootstrap installs is the one crosstalk expects, and it is the one found."""
import re
import subprocess

from xt_testing import REPO

from crosstalk.site import mpich


def test_bootstrap_installs_the_pinned_mpich():
    text = (REPO / "scripts" / "bootstrap.sh").read_text()
    assert re.search(rf"^mpich_version={re.escape(mpich.VERSION)}$", text, re.M)


def test_the_installed_mpich_is_the_pinned_one():
    # bootstrap.sh ran before pytest (test.sh), so the prefix exists
    assert mpich.prefix() is not None, "scripts/bootstrap.sh did not install MPICH"
    out = subprocess.run([mpich.tool("mpichversion"), "-v"], capture_output=True, text=True, timeout=30).stdout
    assert out.split()[-1] == mpich.VERSION
