"""The queue model's probe samples are read from the output directory of the job that measured
them: keyed by case, partition *and* environment (a case skipped under a second MPI has an empty
directory of its own, which once hid the one that ran and left the queue-model claim "not run"),
from every attempt of the run."""
import json

import numpy as np
import pandas as pd

from crosstalk.analysis.ingest import case_output_dirs, raw_output_files
from crosstalk.figures import casas

NAME = "ActiveProbing %load=idle %repeat=0"


def _case(out, environ, result):
    return {"name": NAME, "partition": "mpi", "environ": environ, "result": result, "outputdir": str(out),
            "system": "vcluster:mpi", "short_name": "ActiveProbing_1"}


def _samples(path, values):
    path.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "sample", "metric": "half_rtt", "value": v}) for v in values]
    (path / "rfm_job.out").write_text("\n".join(["not json", *lines]) + "\n")


def test_probe_samples_come_from_the_environment_that_ran_and_every_attempt(tmp_path, monkeypatch):
    run = tmp_path / "run"
    ran, skipped, again = tmp_path / "ompi", tmp_path / "mpich", tmp_path / "stage2"
    _samples(ran, [1.0, 2.0])
    skipped.mkdir()
    _samples(again, [3.0])
    run.mkdir()
    # the skipped MPICH case comes after the one that ran, as ReFrame lists them
    (run / "report.json").write_text(json.dumps({"runs": [{"testcases": [
        _case(ran, "gnu-openmpi", "pass"), _case(skipped, "gnu-mpich", "skip")]}]}))
    (run / "attempts" / "2" / "mpi").mkdir(parents=True)
    (run / "attempts" / "2" / "mpi" / "report.json").write_text(json.dumps({"runs": [{"testcases": [
        _case(again, "gnu-openmpi", "pass")]}]}))
    case_output_dirs.cache_clear()
    assert case_output_dirs(str(run)) == {(NAME, "mpi", "gnu-openmpi"): [ran, again]}
    monkeypatch.setattr(casas, "run_dir_of", lambda *_: run)
    wide = pd.DataFrame([{"target": "lammps", "load": "idle", "origin": "user", "system": "vcluster", "run_id": "r",
                          "case": NAME, "partition": "mpi", "environ": env} for env in ("gnu-openmpi", "gnu-mpich")])
    assert sorted(casas.probe_samples(wide, "lammps", "idle")) == [1.0, 2.0, 3.0]
    assert casas.probe_samples(wide, "lammps", "app:stream").size == 0
    case_output_dirs.cache_clear()
    assert isinstance(casas.probe_samples(wide, "lammps", "idle"), np.ndarray)


def test_the_raw_outputs_declared_are_those_read(tmp_path):
    """What the workflow declares as the figures' and reports' raw inputs (raw_output_files) is
    what casas reads: the kept outputs of the passed cases, in the run's own output tree."""
    run = tmp_path / "run"
    ran = run / "output" / "vcluster" / "mpi" / "gnu-openmpi" / "ActiveProbing_1"
    _samples(ran, [1.0])
    (ran / "idle_probe.out").write_text("")
    failed = run / "output" / "vcluster" / "mpi" / "gnu-mpich" / "ActiveProbing_1"
    _samples(failed, [2.0])
    (run / "report.json").write_text(json.dumps({"runs": [{"testcases": [
        _case(ran, "gnu-openmpi", "pass"), _case(failed, "gnu-mpich", "fail")]}]}))
    case_output_dirs.cache_clear()
    assert raw_output_files(run) == [ran / "idle_probe.out", ran / "rfm_job.out"]
    assert raw_output_files(tmp_path / "no-outputs") == []
