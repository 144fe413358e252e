"""The Python code passes ruff with the rules in pyproject.toml (pycodestyle, pyflakes, bugbear,
import order); the shipped examples, results and build trees are excluded there."""
import subprocess

from xt_testing import REPO, tool_env, venv_tool


def test_ruff_finds_nothing():
    proc = subprocess.run([venv_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "."],
                          capture_output=True, text=True, cwd=REPO, env=tool_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
