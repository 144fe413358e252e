"""crosstalk: reproducible HPC network performance and power experiments."""
from pathlib import Path

__version__ = "0.1.0"

#: Root of the source tree (the package lives at its top level).
REPO_ROOT = Path(__file__).resolve().parent.parent
