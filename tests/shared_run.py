"""The shared cluster's one measured quick run, read by the integration tests that only read results.

Each experiment's test module once ran its own ``crosstalk run`` of its part of the quick profile
(congestion three times, energy three sessions, NiMC STREAM seven sessions on one host, ...). The
``shared_run`` fixture runs their cases once per pytest session, in one ``crosstalk run`` on the
shared virtual cluster's mpirun partition, in two ReFrame sessions (``--reruns 1``) so that every
case is measured twice, interleaved in time with all the others: a burst of load from the
machine's other work hits every case of a session, not all repeats of one case. Two sessions, not
three: each reading test's margin holds for the mean of two jobs (see the tests: where a direction
is asserted, the effect was 1.4-146x on every pair of a measured run's three sessions), and a third
session cost about 200 s of the suite. Tests that change a run (interrupt, resume, time limits, bad
specs, second stage) keep runs of their own.

It runs as a stranger's host would: an uncalibrated host class with references only for another one
(the shipped example's), so the run is in explore mode (test_portability reads that too).
"""
import json
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: the cases (ReFrame -n patterns) the reading tests need, and their experiments
SHARED_CASES = (
    "StreamTriad",
    "CongestionCanary%congestors=p2p_incast%pport=1", "CongestionVictim",
    "Energy62",
    "CoreMappingLammps", "CoreStreamBandwidth",
    "NimcStream%injection=(off|max)%cores=all%",
    "ActiveProbing%load=(idle|compressionb:3-4-0)%", "CompressionBIntensity",
)
SHARED_EXPERIMENTS = "stream,congestion,energy,core-mapping,nimc-stream,active-probing"
#: ReFrame sessions of the run (--reruns SESSIONS - 1)
SESSIONS = 2
#: The quick profile made smaller where every reader's margin allows, given to the run as a site's
#: specs (``--specs``). Congestion: two rounds a job, canary and victim (in every round of a measured
#: run the bandwidth and Allreduce impacts were 1.3-287x, the victim 1.9-2.1 s against 1.3-1.34 s
#: alone). Energy: two rounds of 20 steps (LAMMPS 1.9-2.1x slower at half the link in every round;
#: the tests compare loop times, which are per step, and at 100 mbit every step waits on the link).
#: NiMC STREAM and active probing keep theirs: their statistics need every round (a rank test of
#: 2 x 4 pairs), and STREAM's arrays must stay well above this host's 105 MiB L3.
SETTINGS = {"congestion": {"rounds": 2, "victim_rounds": 2}, "energy": {"rounds": 2, "lammps_steps": 20}}
#: the run's time limit: measured 595 s for three sessions on an idle 2-core host
RUN_TIMEOUT_S = 2400


@dataclass
class SharedRun:
    results: Path      # CROSSTALK_RESULTS_DIR of the run
    run_dir: Path
    perf: list         # every experiment's rows (crosstalk.analysis.ingest.load_run)
    cases: list
    proc: subprocess.CompletedProcess
    env: dict          # the run's environment: results, references and host class
    host_class: str
    references: Path   # CROSSTALK_REFERENCES_DIR: the other host class's references only

    def cases_of(self, *tests):
        return [c for c in self.cases if c["test"] in tests]

    def perf_of(self, *tests):
        return [r for r in self.perf if r["test"] in tests]

    def failure(self):
        """The run's output tail, for an assertion message."""
        return self.proc.stdout[-4000:] + self.proc.stderr[-2000:]


@pytest.fixture(scope="session")
def shared_run(vcluster, tool_env_session):
    from xt_testing import OPEN_MPI_ONLY, site_specs, venv_tool

    from crosstalk.analysis.ingest import load_run
    work = REPO / "build" / "test-shared-run" / uuid.uuid4().hex[:8]   # nodes have a private /tmp
    references = work / "refs"
    (references / "vcluster").mkdir(parents=True)
    shipped = next((REPO / "reframe-tests" / "references" / "vcluster").glob("*.yaml"))
    shutil.copy(shipped, references / "vcluster" / shipped.name)
    host_class = f"foreign-{uuid.uuid4().hex[:6]}"
    env = dict(tool_env_session, CROSSTALK_RESULTS_DIR=str(work / "results"),
               CROSSTALK_REFERENCES_DIR=str(references), CROSSTALK_HOST_CLASS=host_class)
    specs = site_specs(work / "specs", SETTINGS)
    names = [w for case in SHARED_CASES for w in ("-n", f"^{case}")]
    argv = [venv_tool("crosstalk"), "run", "--system", "vcluster", "-e", SHARED_EXPERIMENTS,
            "--specs", str(specs), "--partition", "mpi", "--", *OPEN_MPI_ONLY, *names,
            "--reruns", str(SESSIONS - 1), "--max-retries", "3"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    runs = work / "results" / "vcluster" / "runs"
    run_dirs = list(runs.iterdir()) if runs.is_dir() else []
    assert len(run_dirs) == 1 and (run_dirs[0] / "report.json").exists(), \
        proc.stdout[-4000:] + proc.stderr[-2000:]
    perf, cases = load_run(run_dirs[0])
    yield SharedRun(work / "results", run_dirs[0], perf, cases, proc, env, host_class, references)
    shutil.rmtree(work, ignore_errors=True)


def setting(experiment, name):
    """``name`` of ``experiment``'s quick profile as the shared run ran it (SETTINGS, else the spec's)."""
    from crosstalk.specs import load_spec
    return SETTINGS.get(experiment, {}).get(name, load_spec(experiment).setting(name, "quick"))


def params(row):
    return json.loads(row["params"])


@pytest.fixture(scope="session")
def shared_report(shared_run):
    """``crosstalk report --systems vcluster --no-examples`` of the shared run, drawn once for the
    tests that read its figures and pages (the examples' figures are tests/unit's): the finished
    process."""
    from xt_testing import venv_tool
    return subprocess.run([venv_tool("crosstalk"), "report", "--systems", "vcluster", "--no-examples"],
                          capture_output=True,
                          text=True, env=shared_run.env, timeout=900, cwd=str(REPO), stdin=subprocess.DEVNULL)
