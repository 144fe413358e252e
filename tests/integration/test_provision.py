"""The provisioning play is idempotent: run on an already provisioned machine it changes nothing."""
import os
import re
import subprocess

import pytest
from xt_testing import REPO, venv_tool

#: The real provisioning playbook (apt), up to 15 minutes on a fresh machine.
pytestmark = pytest.mark.slow


@pytest.mark.skipif(os.geteuid() != 0, reason="installs system packages: needs root")
def test_second_provision_run_changes_nothing(run_env):
    argv = [venv_tool("ansible-playbook"), "-i", str(REPO / "inventories" / "local"),
            str(REPO / "playbooks" / "provision.yml")]
    env = dict(run_env, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    # test.sh provisioned already; this is at least the second run.
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:]
    recap = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=0", proc.stdout)
    assert recap, proc.stdout[-2000:]
    assert int(recap.group(1)) >= 1 and recap.group(2) == "0"


def test_check_mode_is_clean(run_env):
    """--check must not fail on an unprivileged or provisioned machine (sites run it first)."""
    if os.geteuid() != 0:
        pytest.skip("apt check mode needs root")
    argv = [venv_tool("ansible-playbook"), "--check", "-i", str(REPO / "inventories" / "local"),
            str(REPO / "playbooks" / "provision.yml")]
    proc = subprocess.run(argv, capture_output=True, text=True,
                          env=dict(run_env, ANSIBLE_CONFIG=str(REPO / "ansible.cfg")), cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "changed=0" in proc.stdout
