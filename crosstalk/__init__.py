"""crosstalk: reproducible HPC network performance and power experiments."""
from pathlib import Path

__version__ = "0.1.0"

#: Root of the source tree (the package lives at its top level).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: What crosstalk and its tools keep between processes to save work (Snakemake's source cache,
#: Matplotlib's font list, inventories Ansible resolved): in the build directory, not in the
#: user's home; safe to delete.
CACHE_DIR = REPO_ROOT / "build" / "cache"


def results_root():
    """Where runs, tables and reports live; tests point CROSSTALK_RESULTS_DIR elsewhere."""
    import os
    return Path(os.environ.get("CROSSTALK_RESULTS_DIR", REPO_ROOT / "results"))


def references_dir():
    """Per-system ReFrame reference files; tests point CROSSTALK_REFERENCES_DIR elsewhere."""
    import os
    return Path(os.environ.get("CROSSTALK_REFERENCES_DIR", REPO_ROOT / "reframe-tests" / "references"))


def reference_file(system, host_class, directory=None):
    """The references that apply to ``system`` on ``host_class``: its own file, else the
    system-wide one, else None (explore mode)."""
    directory = Path(directory or references_dir())
    for path in (directory / system / f"{host_class}.yaml", directory / f"{system}.yaml"):
        if path.is_file():
            return path
    return None


def examples_root():
    """Runs shipped with crosstalk (calibration evidence, ``<system>/runs/<run-id>/``): shown beside
    a user's runs as labelled examples, never merged into them."""
    import os
    return Path(os.environ.get("CROSSTALK_EXAMPLES_DIR", REPO_ROOT / "examples"))
