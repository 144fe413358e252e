"""Helpers shared by test modules (a uniquely named module: tests/bench has its own conftest)."""
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


#: ReFrame arguments that keep an experiment's integration test to Open MPI: the test is about the
#: experiment, and its assertions read every case (the quick profile would add the second MPI's as
#: skipped, and RMA-MT's run again). MPICH has its own tests, tests/vcluster/test_vcluster_mpich.py.
OPEN_MPI_ONLY = ("-p", "^gnu-openmpi$")


def venv_tool(name):
    path = VENV_BIN / name
    return str(path) if path.exists() else shutil.which(name)


def tool_env():
    """Environment for subprocesses: the venv first on PATH."""
    return dict(os.environ, PATH=f"{VENV_BIN}:{os.environ.get('PATH', '')}")


def reported_values(perf, metric, test=None, **params):
    """``[value]`` of ``metric`` per case sample, as ReFrame reported it (crosstalk.analysis.ingest.reported:
    the median over the rows of a case measured in rounds)."""
    import json

    import pandas as pd

    from crosstalk.analysis.ingest import PERF_COLUMNS, reported
    df = reported(pd.DataFrame(perf, columns=PERF_COLUMNS))
    keep = (df["metric"] == metric) & (df["test"] == test if test else True) & df["params"].map(
        lambda text: all(json.loads(text).get(k) == v for k, v in params.items()))
    return list(df.loc[keep, "value"])
