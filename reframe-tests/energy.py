"""E6 energy: LAMMPS under link width / injection bandwidth and CPU frequency (spec: experiments/energy.yaml)."""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_after, run_before, sanity_function

from crosstalk.skips import platform_reason
from crosstalk.specs import load_spec
from crosstalk.vcluster import format_rate, parse_rate
from xtlib.apps import installed_app
from xtlib.betweenruns import HOOK as BETWEEN_RUNS, between_runs_lines
from xtlib.energy import Energy
from xtlib.experiment import XtExperiment
from xtlib.lammps import INPUTS, lammps_args, loop_times
from xtlib.linkcontrol import LINKS_AFTER, LINKS_BEFORE, LinkControl
from xtlib.placement import job_nodes, partition_nodes, slurm_steps
from xtlib.rounds import PairedRounds, reversed_round, values_of

SPEC = load_spec("energy")
#: Fraction of the nominal network bandwidth in each link case (Table 6.2: 1/2, 1/4, 1/8).
BW_FRACTION = {"4X": 1.0, "2X": 0.5, "1X": 0.25, "inj8": 0.125}
#: The next wider case of each narrower one: the bandwidth it is paired with inside its job.
WIDER = {"2X": "4X", "1X": "2X", "inj8": "1X"}


@rfm.simple_test
class Energy62(XtExperiment, LinkControl, Energy, PairedRounds, rfm.RunOnlyRegressionTest):
    """A narrower link case measures in rounds, each a LAMMPS run at the next wider link and one at
    its own, in either order in turn (links set between the runs of the one LAMMPS process), so each
    round pairs the two bandwidths seconds apart in one job: metrics ``*_wider``. The 4X case, and a partition without
    link control, runs its rounds in one LAMMPS process too."""
    spec_name = "energy"
    link = parameter(SPEC.parameter("link"))
    cpu_freq = parameter(SPEC.parameter("cpu_freq"))
    repeat = parameter(range(SPEC.repeats()))
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    sourcesdir = INPUTS

    @run_after("setup")
    def configure(self):
        part = self.current_partition
        extras = part.extras
        caps = extras.get("capabilities", {})
        _, why = installed_app(self, "lmp")
        self.skip_if(why is not None, f"LAMMPS: {why}")
        # Table 6.1 varies the CPU frequency at full bandwidth; Table 6.2 the bandwidth at full speed.
        self.skip_if(self.cpu_freq != "default" and self.link != "4X",
                     "CPU frequency is swept at full bandwidth (4X) only, as in Table 6.1")
        self.skip_if(self.cpu_freq != "default" and not caps.get("cpufreq"), platform_reason(
                     f"{part.fullname} cannot set the CPU frequency (capabilities.cpufreq is false: "
                     f"no /sys/devices/system/cpu/*/cpufreq); Table 6.1 cases need it"))
        self.skip_if(self.cpu_freq != "default" and not slurm_steps(self), platform_reason(
                     f"{part.fullname} launches with {part.launcher_type.registered_name}: crosstalk sets "
                     f"the frequency through Slurm's --cpu-freq only"))
        nodes = partition_nodes(self, self.setting("nodes"))
        ranks = int(self.setting("ranks"))
        self.num_tasks = ranks
        self.num_tasks_per_node = max(1, ranks // nodes)
        self.executable = "lmp"
        self.keep_files += ["log.lammps"]       # every run's loop time
        self.rounds = int(self.setting("rounds"))
        self.wider = None
        if self.cpu_freq != "default":
            self.job.launcher.options += [f"--cpu-freq={self.cpu_freq}"]
        if caps.get("link_control"):
            self.skip_if(nodes < 2, platform_reason("link cases need the job on two or more nodes"))
            names, why = job_nodes(self, nodes)
            self.skip_if(names is None, why)
            self.link_nodes = names
            # 4X too: the baseline runs at nominal even if a killed job left a link changed.
            self.shape_links(names, **self.link_option(self.link))
            self.wider = WIDER.get(self.link)
        else:
            self.skip_if(self.link != "4X", platform_reason(
                         f"{part.fullname} cannot change link width or rate (no virtual cluster, "
                         f"no extras.link_hook)"))
        self.executable_opts = self.lammps_opts(rounds=2 * self.rounds if self.wider else self.rounds,
                                                before_run=BETWEEN_RUNS if self.wider else None)
        self.measure_energy(nodes, BW_FRACTION[self.link], self.setting("model_cpu_w"),
                            self.setting("model_network_w"), self.setting("model_memory_w"))

    def lammps_opts(self, rounds, before_run=None):
        return lammps_args(self.setting("lammps_box"), self.setting("lammps_steps"), rounds=rounds,
                           screen=False, before_run=before_run)

    def nominal_rate(self):
        """Full bandwidth (4X) of this experiment: the spec's link_nominal_rate where set (shaped
        below the fabric's rate so the network dominates), else the partition's link_rate. A system
        shaped like a paper machine (extras.like) keeps its own rate: its balance was planned on it."""
        extras = self.current_partition.extras
        if extras.get("like"):
            return extras.get("link_rate")
        return self.setting("link_nominal_rate") or extras.get("link_rate")

    def link_option(self, link):
        """``{"width": ...}`` or ``{"rate": ...}`` that sets a node's link for the case ``link``."""
        if link == "inj8" or self.setting("link_nominal_rate"):
            nominal = self.nominal_rate()
            self.skip_if(not nominal, platform_reason(
                f"{self.current_partition.fullname}: no nominal link_rate for the {link} case"))
            return {"rate": format_rate(int(parse_rate(nominal) * BW_FRACTION[link]))}
        return {"width": link}

    def step_tag(self, which, round_no):
        """The tag of round ``round_no``'s step at the ``which`` ("wider" or "own") link; "" for
        the main step (the last round's own, the last run)."""
        return "" if which == "own" and round_no == self.rounds - 1 else f".{which}.{round_no}"

    def sequence(self):
        """``(round, which, link)`` of the LAMMPS runs in order: each round the wider link's run
        and its own, own first every other round (counterbalanced: xtlib.rounds.reversed_round)."""
        runs = []
        for k in range(self.rounds):
            pair = [("wider", self.wider), ("own", self.link)]
            runs += [(k, which, link) for which, link in (pair[::-1] if reversed_round(self.rounds, k) else pair)]
        return runs

    @run_before("run")
    def alternate_with_wider_link(self):
        """One LAMMPS process runs the rounds (:meth:`sequence`); the job sets the links (and reads
        the meters) between the runs (xtlib.betweenruns)."""
        if not self.wider:
            return
        actions, previous = [], None
        for k, which, link in self.sequence():
            tag = self.step_tag(which, k)
            before, _ = self.meter_lines(tag)
            after = self.meter_lines(previous)[1] if previous is not None else []
            actions.append([*after, *self.link_set_lines(self.link_nodes, **self.link_option(link)),
                            self.link_log_line(f"links{tag or '.own.last'}.json"), *before])
            previous = tag
        prerun, postrun = between_runs_lines(actions)
        self.prerun_cmds += prerun
        self.postrun_cmds = postrun + self.postrun_cmds
        self.keep_files += [f"{BETWEEN_RUNS}.out"]

    def link_expected(self, link):
        """What a node's logged link must show for the case ``link``: its rate, or its width."""
        option = self.link_option(link)
        return {"bps": parse_rate(option["rate"])} if "rate" in option else {"width": option["width"]}

    @sn.deferrable
    def links_as_asked(self):
        """The links of the job's nodes were at each step's rate while it ran (the job logs
        `crosstalk link show` after setting them); a failed `link set` fails the case."""
        if not getattr(self, "link_nodes", None) or self.current_partition.extras.get("link_hook"):
            return True     # a site hook's `show` format is its own
        checks = [(LINKS_BEFORE, self.link, "at the start of the job"), (LINKS_AFTER, self.link, "after the step")]
        if self.wider:
            checks += [(f"links{self.step_tag(which, k) or '.own.last'}.json",
                        self.wider if which == "wider" else self.link, f"before {which} step {k}")
                       for k in range(self.rounds) for which in ("wider", "own")]
        for name, link, when in checks:
            self.links_were(name, self.link_nodes, when, **self.link_expected(link))
        return True

    @sanity_function
    def finished(self):
        steps = [self.round_times()] + ([self.round_times("wider")] if self.wider else [])
        return sn.all([*(sn.assert_gt(sn.min(times), 0) for times in steps), self.links_as_asked()])

    def round_times(self, which="own"):
        """LAMMPS' loop time in each round at the ``which`` link: where the job alternates with
        the wider link, its runs in :meth:`sequence`'s order."""
        log = os.path.join(self.stagedir, "log.lammps")
        if not self.wider:
            return loop_times(log, self.rounds)
        times = loop_times(log, 2 * self.rounds)
        return values_of(*[sn.getitem(times, i) for i, (_, w, _) in enumerate(self.sequence()) if w == which])

    @run_before("performance")
    def set_perf_variables(self):
        if self.is_dry_run():           # the energy model reads the steps' times: nothing ran
            return
        if not self.wider:
            self.perf_variables = self.energy_perf_variables(self.round_times().evaluate())
            return
        self.perf_variables = {}
        for which, link, suffix in (("own", self.link, ""), ("wider", self.wider, "_wider")):
            times = self.round_times(which).evaluate()
            self.perf_variables.update(self.step_energy_variables(
                suffix, [(self.step_tag(which, k), t, BW_FRACTION[link]) for k, t in enumerate(times)]))
