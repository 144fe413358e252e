"""Playbooks, roles and inventories pass ansible-lint's production profile."""
import subprocess

from xt_testing import REPO, tool_env, venv_tool


def test_ansible_lint_production_profile():
    proc = subprocess.run([venv_tool("ansible-lint"), "--profile", "production", "--nocolor",
                           "playbooks/", "inventories/"], capture_output=True, text=True, cwd=REPO,
                          env=tool_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "Profile 'production' was required, and it passed" in proc.stdout + proc.stderr
