"""Background load in the same job as the measurement: started before the measured step, stopped
(SIGTERM; crosstalk's own loads SIGUSR1) and checked after it. A load that died early or reported
nothing fails the test, because the measurement then did not run under the load it claims.

With :meth:`BackgroundLoad.alternate_with_load` the job measures in rounds, each the measured step
without the load and under it, starting and stopping the load every round: a paired comparison
inside one job. The order within a round alternates (A B, B A, A B ...: counterbalanced, ending with
A B so that the job's main step runs under the load), so neither condition always comes first: a
warm-up that only the job's first step pays, or a drift through the job, does not fall on one side.
"""
import shlex
from typing import NamedTuple

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before

from xtlib.launch import main_step_line, step_command
from xtlib.placement import size_main_step, stop_step
from xtlib.records import records
from xtlib.rounds import reversed_round, values_of

#: The longest a load may take to report that it started (a launch on a busy host).
START_TIMEOUT_S = 60
#: What crosstalk's loads (xt-inject, xt-compressionb) print once they run.
XT_STARTED = '"state":"started"'
#: The signal that stops crosstalk's loads (they report, then exit): mpirun forwards SIGUSR1 to
#: its ranks, where on SIGTERM Open MPI tears the job down instead (4 s per load, measured, while
#: the ranks went on injecting).
XT_STOP_SIGNAL = "USR1"


class _Load(NamedTuple):
    name: str
    command: str          # the launcher's line that starts it
    warmup_s: float
    reports: bool
    started: str | None
    stop_signal: str


class BackgroundLoad(rfm.RegressionTestPlugin):
    def add_load(self, name, argv, tasks, nodes=1, warmup_s=1.0, relative_node=0, reports=True, started=None,
                 stop_signal="TERM"):
        """Run ``argv`` in the background for the whole measured step. ``reports``: the load
        prints crosstalk JSON lines whose ``result`` records sanity requires. ``started``: text the
        load prints once it runs; the job waits for it (at most START_TIMEOUT_S), then ``warmup_s``
        more. Without it the job waits ``warmup_s`` from the launch, which a slow launch (seconds on
        a busy 2-core host) can eat into. ``stop_signal``: what stops it (XT_STOP_SIGNAL for
        crosstalk's own loads)."""
        if not hasattr(self, "_loads"):
            self._loads = []
        self._loads.append(_Load(name, step_command(self, argv, tasks, nodes, relative_node,
                                                    step_name=f"xtload-{name}"), warmup_s, reports, started,
                                 stop_signal))

    def alternate_with_load(self, rounds):
        """Measure in ``rounds`` rounds, each the measured step without the load and under it (the
        load is started and stopped every round; the order alternates, see :meth:`loaded_first`), so
        that each round pairs the two conditions seconds apart in one job. Round k's outputs:
        :meth:`alone_output` and :meth:`loaded_output` (the last round's loaded step is the main
        step: its stdout)."""
        self.load_rounds = int(rounds)

    def loaded_first(self, round_no):
        """Whether round ``round_no`` measures under the load first (B A): every other round,
        counted back from the last, which is A B (its loaded step is the job's main step)."""
        return reversed_round(self.load_rounds, round_no)

    @property
    def alternating(self):
        return getattr(self, "load_rounds", 1) > 1 and bool(getattr(self, "_loads", []))

    def alone_output(self, round_no):
        return f"alone.{round_no}.out"

    def loaded_output(self, round_no):
        """The output file of round ``round_no``'s step under the load (the last: the job's stdout)."""
        return self.job.stdout if round_no == self.load_rounds - 1 else f"loaded.{round_no}.out"

    def per_round(self, read, alone=False):
        """``read(output)`` of each round's step under the load (``alone``: without it), as one
        deferred list in round order."""
        output = self.alone_output if alone else self.loaded_output
        return values_of(*[read(output(k)) for k in range(self.load_rounds)])

    def step_outputs(self):
        """Every output of the measured step: each round's two where the job alternates."""
        if not self.alternating:
            return [self.job.stdout]
        return [out(k) for k in range(self.load_rounds) for out in (self.alone_output, self.loaded_output)]

    def _start_lines(self, out):
        lines = []
        for load in getattr(self, "_loads", []):
            name, started = load.name, load.started
            output = f"{name}.load{out}.out"
            lines += [f"{load.command} > {output} 2> {name}.load{out}.err &", f"{name}_pid=$!"]
            if started:
                pattern = shlex.quote(started)
                # until it started, died, or START_TIMEOUT_S passed (bash's SECONDS: a busy host's
                # forks do not stretch it); no wait once a load of this job has failed
                lines += [f"deadline=$((SECONDS + {START_TIMEOUT_S})); until grep -qF {pattern} {output} || "
                          f"! kill -0 ${name}_pid 2>/dev/null || [ $SECONDS -ge $deadline ] || [ -e loads.failed ]; "
                          f"do sleep 0.05; done",
                          f"grep -qF {pattern} {output} || echo 'load {name} never reported that it started' "
                          f">> loads.failed"]
            lines += [
                f"sleep {float(load.warmup_s)}",
                # The load must still be running when the measurement starts.
                f"kill -0 ${name}_pid || echo 'load {name} exited before the measurement' >> loads.failed",
            ]
        return lines

    def _stop_lines(self):
        lines = []
        for load in getattr(self, "_loads", []):
            name = load.name
            lines += [
                f"kill -0 ${name}_pid || echo 'load {name} exited during the measurement' >> loads.failed",
                f"{stop_step(self, f'{name}_pid', f'xtload-{name}', load.stop_signal)}; wait ${name}_pid",
            ]
        return lines

    @run_before("run")
    def wrap_loads(self):
        size_main_step(self)
        if self.alternating:
            for k in range(self.load_rounds - 1):
                alone = [main_step_line(self, self.alone_output(k))]
                loaded = [*self._start_lines(f".{k}"), main_step_line(self, self.loaded_output(k)), *self._stop_lines()]
                self.prerun_cmds += loaded + alone if self.loaded_first(k) else alone + loaded
            self.prerun_cmds += [main_step_line(self, self.alone_output(self.load_rounds - 1))]
            self.keep_files += [out for out in self.step_outputs() if out != self.job.stdout]
        self.prerun_cmds += self._start_lines("")
        self.postrun_cmds += self._stop_lines()

    def load_records(self, name, type_=None, **match):
        return records(f"{name}.load.out", type_, **match)

    @sn.deferrable
    def loads_ran_throughout(self):
        """Sanity: every load ran during the whole measurement and reported a result."""
        import os
        failed = os.path.join(self.stagedir, "loads.failed")
        if os.path.exists(failed):
            with open(failed) as fp:
                raise sn.SanityError(fp.read().strip().replace("\n", "; "))
        for load in getattr(self, "_loads", []):
            if load.reports and not records(os.path.join(self.stagedir, f"{load.name}.load.out"), "result").evaluate():
                raise sn.SanityError(f"load {load.name} reported no result (see {load.name}.load.err)")
        return True
