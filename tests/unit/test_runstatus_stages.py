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


def test_a_plan_with_time_for_a_stage_counts_its_look_even_when_it_runs_nothing(tmp_path):
    """The looks a run is judged at are fixed by whether a stage could run (durations alone), not
    by what the plan found: a run whose plan judged it at two looks and found nothing to measure
    again is still judged at two, never again at one look's wider level (that would be peeking)."""
    import json

    from crosstalk.run.secondstage import record_unplanned, stage_possible
    durations = {("slurm", "A"): 12.0, ("mpi", "B"): 30.0}
    assert stage_possible(durations, 12.0) and not stage_possible(durations, 11.9)
    assert not stage_possible({}, 900)
    for looks, expected in ((2, 2), (None, 1)):
        (tmp_path / "provenance.json").write_text(json.dumps({"run_id": "R", "looks": 1}))
        record_unplanned(tmp_path, 11.0, [{"claim": "c", "why": "w", "seconds": 60}], looks)
        prov = json.loads((tmp_path / "provenance.json").read_text())
        assert prov["looks"] == expected
        assert prov["unplanned"] == {"after_stages": 0, "budget_s": 11,
                                     "left_out": [{"claim": "c", "why": "w", "seconds": 60}]}
