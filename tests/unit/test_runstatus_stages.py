"""A run's state across a first pass and a later stage: a stage runs none of the failed cases
again, so a failed run stays failed; after a resume that passed them, a stage keeps it finished."""
from crosstalk.run import runstatus
from crosstalk.run.supervise import Outcome


def test_a_stage_keeps_a_failed_run_failed(tmp_path):
    first = runstatus.begin_attempt(tmp_path, ["mpi"])
    assert runstatus.end_attempt(tmp_path, first, Outcome(returncode=1)) == "failed"
    stage = runstatus.begin_attempt(tmp_path, ["mpi"])
    assert runstatus.end_attempt(tmp_path, stage, Outcome(returncode=0), keep_failed=True) == "failed"
    assert (tmp_path / "exit_status").read_text() == "1\n"
    assert runstatus.read(tmp_path)["attempts"][1]["state"] == "finished"     # the stage itself passed


def test_a_stage_after_a_passing_resume_leaves_the_run_finished(tmp_path):
    first = runstatus.begin_attempt(tmp_path, ["mpi"])
    runstatus.end_attempt(tmp_path, first, Outcome(returncode=1))
    resumed = runstatus.begin_attempt(tmp_path, ["mpi"])
    assert runstatus.end_attempt(tmp_path, resumed, Outcome(returncode=0)) == "finished"
    stage = runstatus.begin_attempt(tmp_path, ["mpi"])
    assert runstatus.end_attempt(tmp_path, stage, Outcome(returncode=0), keep_failed=True) == "finished"
    assert (tmp_path / "exit_status").read_text() == "0\n"


def test_a_stage_drops_the_runs_selection_and_copies_but_keeps_the_rest():
    from crosstalk.run.secondstage import stage_reframe_args
    args = ["--system", "vcluster:slurm", "-n", "^Foo$", "--repeat", "3", "--reruns=2", "-x", "Bar",
            "--max-retries", "2", "-S", "x=1"]
    assert stage_reframe_args(args) == ["--system", "vcluster:slurm", "--max-retries", "2", "-S", "x=1"]
