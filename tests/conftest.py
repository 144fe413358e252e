"""Shared pytest fixtures: paths, the venv's tools, and the virtual cluster (when built)."""
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def venv_tool(name):
    path = VENV_BIN / name
    return str(path) if path.exists() else shutil.which(name)


@pytest.fixture(scope="session")
def repo():
    return REPO


def _env():
    return dict(os.environ, PATH=f"{VENV_BIN}:{os.environ.get('PATH', '')}")


@pytest.fixture
def run_env():
    """Environment for subprocesses: the venv first on PATH."""
    return _env()


@pytest.fixture(scope="module")
def run_env_module():
    return _env()
