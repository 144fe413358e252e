"""playbooks/vcluster.yml: up/down are idempotent and report changed only when they act."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from vcluster_fixtures import REPO, skip_unless_root

pytestmark = [pytest.mark.root, pytest.mark.cluster]
VENV_BIN = Path(sys.executable).parent
ARGS = json.dumps({"vcluster_args": ["--name", "vclp", "--subnet", "198.19.2.0/24"]})


def play(tag):
    out = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "inventories/vcluster",
                          "playbooks/vcluster.yml", "--tags", tag, "-e", ARGS],
                         capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={"PATH": f"{VENV_BIN}:/usr/sbin:/usr/bin:/sbin:/bin",
                              "ANSIBLE_NOCOLOR": "1", "HOME": "/root"})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return int(re.search(r"changed=(\d+)", out.stdout).group(1))


def test_playbook_up_down_idempotent():
    skip_unless_root()
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(REPO / "inventories" / "vcluster", name="vclp",
                                 subnet="198.19.2.0/24")
    try:
        assert play("up") == 1
        assert vc.is_up()
        assert play("up") == 0
        assert play("down") == 1
        assert not vc.state.exists()
        assert play("down") == 0
    finally:
        vc.down()
