"""Paired rounds: a job that measures its conditions in turn, K times over (A B A B ...: a kernel's
``--rounds``), reports each performance value as the median over the rounds and keeps every round's
value in ``round_values``. The run report carries it; crosstalk.analysis.ingest makes one row per round, so
the claims pair the conditions round by round (drift of a shared host between rounds cancels)."""
import statistics

import reframe as rfm
import reframe.utility.osext as osext
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, variable


class PairedRounds(rfm.RegressionTestPlugin):
    #: Every round's value of each performance variable measured in rounds, in round order.
    round_values = variable(typ.Dict[str, typ.List[float]], value={})

    def rounds_in_process(self, setting="rounds"):
        """Rounds the measured program runs in one process: the spec's ``setting``, or 1 where the
        job alternates with a load (BackgroundLoad.alternate_with_load: its steps are the rounds)."""
        return 1 if getattr(self, "load_rounds", 1) > 1 else int(self.setting(setting))

    def over_rounds(self, name, values):
        """The deferred per-round ``values`` of performance variable ``name`` as their median;
        the values themselves go to ``round_values`` once the job has run."""
        if not hasattr(self, "_round_lists"):
            self._round_lists = {}
        self._round_lists[name] = values
        return _median(values)

    @run_before("performance", always_last=True)   # after the tests' own hooks that set values
    def keep_round_values(self):
        with osext.change_dir(self.stagedir):      # where the job's files are, as for sanity
            # A performance function runs (and so calls over_rounds) only when its value is
            # evaluated, which ReFrame does after this hook: evaluate them here first.
            for value in self.perf_variables.values():
                _evaluated(value)
            rounds = {name: _evaluated(values) for name, values in getattr(self, "_round_lists", {}).items()}
            self.round_values = {name: [float(v) for v in values] for name, values in rounds.items()
                                 if values is not None}


def reversed_round(rounds, round_no):
    """Whether round ``round_no`` of ``rounds`` measures its two conditions in reverse (B A): every
    other round, counted back from the last, which is A B. A warm-up only the first step pays, or a
    drift through the job, then does not always fall on the same side of the pairs."""
    return (int(rounds) - 1 - round_no) % 2 == 1


def _evaluated(expression):
    """The value of a deferred expression, or None where it fails: the failure is ReFrame's to
    report, in its performance stage (which evaluates the same expression again)."""
    try:
        return sn.evaluate(expression)
    except Exception:    # noqa: BLE001 - any failure of a performance function
        return None


@sn.deferrable
def values_of(*values):
    """Deferred values (one per round) as one deferred list."""
    return list(values)


@sn.deferrable
def one_round(value):
    """The rounds of a step that runs once: its one value."""
    return [value]


@sn.deferrable
def _median(values):
    return statistics.median(values)
