"""One ReFrame session of a run: its command line and environment, its time limit, its
supervision (Ctrl-C, SIGTERM: ``crosstalk.run.supervise``) and the clean-up after it was stopped."""
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from crosstalk import REPO_ROOT, proc
from crosstalk.run import leftovers
from crosstalk.run.supervise import supervise
from crosstalk.site.configrender import config_path

TESTS_DIR = REPO_ROOT / "reframe-tests"
#: Seconds for squeue/scancel while cleaning up after an interrupt.
CLEANUP_TIMEOUT = 30
#: Time limits of the kernels' build (BenchBuild's build_time_limit) and of a case whose spec sets none.
BUILD_LIMIT = 15 * 60
DEFAULT_CASE_LIMIT = "1h"


def test_module(spec_name):
    return TESTS_DIR / f"{spec_name.replace('-', '_')}.py"


@dataclass
class Session:
    """What every ReFrame session of a run shares: the system, its cluster, the run directory."""
    inventory: Path
    description: dict
    specs: list
    profile: str
    host: dict
    run_id: str
    run_dir: Path
    gate: bool
    reframe_args: list
    cluster: object = None
    out: object = sys.stdout

    @property
    def system(self):
        return self.description["name"]

    @property
    def stage_root(self):
        return REPO_ROOT / "build" / "reframe" / self.system / "stage" / self.run_id

    def argv(self, targets, extra=()):
        argv = [str(Path(sys.executable).with_name("reframe")), "-C", str(config_path(self.system))]
        for spec in self.specs:
            argv += ["-c", str(test_module(spec.name))]
        for target in targets:
            argv += ["--system", target]
        if self.gate:
            argv += ["-S", "require_reference=true"]
        argv += [f"--exec-policy={self.description.get('exec_policy', 'async')}"]
        return argv + ["-r", *extra, *self.reframe_args]

    def env(self, attempt_dir, stage_dir):
        return dict(os.environ, CROSSTALK_RUN_DIR=str(self.run_dir), CROSSTALK_PROFILE=self.profile,
                    CROSSTALK_ATTEMPT_DIR=str(attempt_dir), CROSSTALK_HOST_CLASS=self.host["id"],
                    CROSSTALK_STAGE_DIR=str(stage_dir), PYTHONUNBUFFERED="1")

    def use_lock(self):
        """The lock that keeps two runs off one machine: a virtual cluster's or this host's.
        A real cluster's Slurm queues concurrent runs itself."""
        if self.cluster is not None:
            return self.cluster.run_lock
        if self.description["kind"] == "local":
            base = Path("/run/crosstalk") if os.geteuid() == 0 else Path(
                os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"crosstalk-{os.getuid()}"
            return base / f"{self.system}.run.lock"
        return None

    # -- after an interrupt
    def _squeue(self, args):
        argv = ["squeue", *args]
        if self.cluster is not None:
            done = self.cluster.exec(self.cluster.nodes[0], argv, capture_output=True, text=True,
                                     timeout=CLEANUP_TIMEOUT)
        else:
            done = proc.run(argv, CLEANUP_TIMEOUT, capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else ""

    def _scancel(self, ids):
        argv = ["scancel", *ids]
        if self.cluster is not None:
            self.cluster.exec(self.cluster.nodes[0], argv, capture_output=True, timeout=CLEANUP_TIMEOUT)
        else:
            proc.run(argv, CLEANUP_TIMEOUT, capture_output=True)

    def clean_up(self, outcome):
        """Cancel the run's Slurm jobs still queued and kill its processes left on the nodes."""
        slurm = any(p["scheduler"] in ("squeue", "slurm") for p in self.description["partitions"])
        jobs = leftovers.cancel_jobs(self._squeue, self._scancel, self.stage_root) if slurm else 0
        killed = leftovers.kill_processes(self.stage_root) if self.description["kind"] != "cluster" else 0
        if self.cluster is not None:
            self.cluster.restore_links()
        print(f"crosstalk: run {self.run_id} stopped {'by force ' if outcome.forced else ''}and "
              f"clean {time.monotonic() - outcome.signalled_at:.1f} s after the signal: "
              f"{jobs} Slurm job(s) cancelled, {killed} leftover process(es) killed",
              file=self.out, flush=True)

    def time_limit(self, partitions):
        """Seconds a session on ``partitions`` partitions may take: every case and build run one
        after the other to its own time limit (``--repeat``, ``--reruns``, ``--max-retries`` count)."""
        per_partition = BUILD_LIMIT
        for spec in self.specs:
            limit = spec.profile(self.profile).get("time_limit") or DEFAULT_CASE_LIMIT
            per_partition += (parse_duration(limit) * len(spec.sweep(self.profile))
                              * spec.repeats(self.profile))
        return per_partition * partitions * _session_factor(self.reframe_args)

    def run_reframe(self, targets, attempt_dir, stage_dir, partitions, extra=()):
        """One supervised ReFrame session over ``partitions`` partitions; its Outcome."""
        attempt_dir.mkdir(parents=True, exist_ok=True)
        argv, env = self.argv(targets, extra), self.env(attempt_dir, stage_dir)
        popen = dict(env=env, cwd=str(REPO_ROOT), stdin=subprocess.DEVNULL, process_group=0)
        if self.cluster is not None:
            # ReFrame is the login node's work: outside n1's CPU quota (mpirun and srun join it)
            start = lambda: self.cluster.popen(self.cluster.nodes[0], argv, quota=False, **popen)  # noqa: E731
        else:
            start = lambda: subprocess.Popen(argv, **popen)  # noqa: E731
        try:
            return supervise(start, self.clean_up, limit=self.time_limit(partitions), out=self.out)
        finally:
            if self.cluster is not None:
                # Jobs restore their own changes; this covers killed ones, under the links lock so
                # a job of a concurrent run keeps its shaping.
                with open(self.cluster.links_lock, "a") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    self.cluster.restore_links()


def parse_duration(text):
    """ReFrame's ``30s`` / ``5m`` / ``1h`` (the spec schema's form) in seconds."""
    return int(text[:-1]) * {"s": 1, "m": 60, "h": 3600}[text[-1]]


def _session_factor(reframe_args):
    """How many times ReFrame may run each case with these extra arguments."""
    factor = 1
    for option, scale in (("--repeat", lambda n: n), ("--reruns", lambda n: n + 1),
                          ("--max-retries", lambda n: n + 1)):
        for i, arg in enumerate(reframe_args):
            value = arg.split("=", 1)[1] if arg.startswith(option + "=") else (
                reframe_args[i + 1] if arg == option and i + 1 < len(reframe_args) else None)
            if value is not None and value.isdigit():
                factor *= scale(int(value))
    return factor
