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


def site_spec(directory, name, parameters=None, settings=None, **profile):
    """A site's copy of experiments/NAME.yaml in ``directory`` (``crosstalk run --specs``), its quick
    profile's ``parameters`` and ``settings`` updated and any other field of it (``time_limit``,
    ``repeats``) set: a run that tests the harness, not the machine, made smaller or changed by
    arguments as a site would. Returns the spec's path."""
    import yaml
    spec = yaml.safe_load((REPO / "experiments" / f"{name}.yaml").read_text())
    quick = spec["profiles"]["quick"]
    quick["parameters"].update(parameters or {})
    quick["settings"].update(settings or {})
    quick.update(profile)
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def site_specs(directory, settings):
    """``site_spec`` of each experiment of ``settings`` (``{experiment: quick-profile settings}``)
    in ``directory``, which is returned (``crosstalk run --specs DIRECTORY``)."""
    for name, changed in settings.items():
        site_spec(directory, name, settings=changed)
    return Path(directory)


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


def dry_run_job_script(tmp_path, inventory, module, name, system):
    """The job script ``reframe --dry-run`` writes for the one case of ``module`` (a file under
    reframe-tests) named ``name`` on ``system`` (e.g. ``example-slurm:debug``), with the config
    rendered from the inventory directory ``inventory`` under Open MPI."""
    import subprocess

    from crosstalk.site.configrender import render
    config = render(inventory, tmp_path / "config")[0]
    (tmp_path / "run").mkdir(exist_ok=True)
    env = {**os.environ, "CROSSTALK_RUN_DIR": str(tmp_path / "run"), "CROSSTALK_STAGE_DIR": str(tmp_path / "stage")}
    proc = subprocess.run([venv_tool("reframe"), "-C", str(config), "--system", system,
                           "-c", str(REPO / "reframe-tests" / module), "-p", "^gnu-openmpi$", "-n", name, "--dry-run"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (script,) = [p.read_text() for p in (tmp_path / "stage").rglob("*/rfm_job.sh")
                 if p.parent.name.startswith(name.split("%")[0] + "_")]
    return script
