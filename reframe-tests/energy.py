"""E6 energy: LAMMPS under link width / injection bandwidth and CPU frequency (spec: experiments/energy.yaml)."""
import os
import subprocess

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_after, run_before, sanity_function

from crosstalk.specs import load_spec
from crosstalk.vcluster import format_rate, parse_rate
from xtlib.apps import installed_app
from xtlib.energy import Energy
from xtlib.experiment import XtExperiment
from xtlib.lammps import INPUTS, lammps_args, loop_times
from xtlib.launch import mpirun_hosts
from xtlib.linkcontrol import LinkControl
from xtlib.rounds import PairedRounds

SPEC = load_spec("energy")
#: Fraction of the nominal network bandwidth in each link case (Table 6.2: 1/2, 1/4, 1/8).
BW_FRACTION = {"4X": 1.0, "2X": 0.5, "1X": 0.25, "inj8": 0.125}


def job_nodes(test, count):
    """Names of the ``count`` nodes the job will run on, or (None, reason).

    mpirun fills the partition's hostfile in order; under Slurm the job is pinned (--nodelist) to
    the first ``count`` nodes of its partition, so the links changed are the job's own."""
    part = test.current_partition
    if part.launcher_type.registered_name == "srun":
        slurm_part = next((a.split("=", 1)[1] for a in part.access if a.startswith("--partition=")), None)
        argv = ["sinfo", "-h", "-N", "-o", "%N"] + (["-p", slurm_part] if slurm_part else [])
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"sinfo failed: {err}"
        names = list(dict.fromkeys(out.stdout.split()))
        if len(names) < count:
            return None, f"sinfo lists {len(names)} nodes in the partition, {count} needed"
        test.job.options += [f"--nodelist={','.join(names[:count])}", f"--nodes={count}"]
        return names[:count], None
    names, reason = mpirun_hosts(test)
    if names is None:
        return None, reason
    if len(names) < count:
        return None, f"the mpirun hostfile lists {len(names)} nodes, {count} needed"
    return names[:count], None


@rfm.simple_test
class Energy62(XtExperiment, LinkControl, Energy, PairedRounds, rfm.RunOnlyRegressionTest):
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
        self.skip_if(self.cpu_freq != "default" and not caps.get("cpufreq"),
                     f"{part.fullname} cannot set the CPU frequency (capabilities.cpufreq is false: "
                     f"no /sys/devices/system/cpu/*/cpufreq); Table 6.1 cases need it")
        self.skip_if(self.cpu_freq != "default" and part.launcher_type.registered_name != "srun",
                     f"{part.fullname} launches with {part.launcher_type.registered_name}: crosstalk sets "
                     f"the frequency through Slurm's --cpu-freq only")
        nodes = min(int(self.setting("nodes", 2)), int(extras.get("nodes", 1)))
        ranks = int(self.setting("ranks", 2))
        self.num_tasks = ranks
        self.num_tasks_per_node = max(1, ranks // nodes)
        self.executable = "lmp"
        self.executable_opts = lammps_args(self.setting("lammps_box", 10), self.setting("lammps_steps", 300),
                                           rounds=self.rounds_in_process(), screen=False)
        if self.cpu_freq != "default":
            self.job.launcher.options += [f"--cpu-freq={self.cpu_freq}"]
        if caps.get("link_control"):
            self.skip_if(nodes < 2, "link cases need the job on two or more nodes")
            names, why = job_nodes(self, nodes)
            self.skip_if(names is None, why)
            nominal = self.nominal_rate()
            if self.link == "inj8" or self.setting("link_nominal_rate"):
                self.skip_if(not nominal, f"{part.fullname}: no nominal link_rate for the {self.link} case")
                self.shape_links(names, rate=format_rate(int(parse_rate(nominal) * BW_FRACTION[self.link])))
            else:
                # 4X too: the baseline runs at nominal even if a killed job left a link changed.
                self.shape_links(names, width=self.link)
        else:
            self.skip_if(self.link != "4X",
                         f"{part.fullname} cannot change link width or rate (no virtual cluster, "
                         f"no extras.link_hook)")
        self.measure_energy(nodes, BW_FRACTION[self.link], self.setting("model_cpu_w", 39.6),
                            self.setting("model_network_w", 25.0), self.setting("model_memory_w", 20.0))

    def nominal_rate(self):
        """Full bandwidth (4X) of this experiment: the spec's link_nominal_rate where set (shaped
        below the fabric's rate so the network dominates), else the partition's link_rate. A system
        shaped like a paper machine (extras.like) keeps its own rate: its balance was planned on it."""
        extras = self.current_partition.extras
        if extras.get("like"):
            return extras.get("link_rate")
        return self.setting("link_nominal_rate") or extras.get("link_rate")

    @sn.deferrable
    def links_as_asked(self):
        """The links of the job's nodes were at the case's rate while it ran (the job logs
        `crosstalk link show` after setting them); a failed `link set` fails the case."""
        changes = getattr(self, "_link_changes", [])
        if not changes or self.current_partition.extras.get("link_hook"):
            return True     # a site hook's `show` format is its own
        nominal = parse_rate(self.nominal_rate())
        want = int(nominal * BW_FRACTION[self.link])
        tables = []
        with open(os.path.join(self.stagedir, self.job.stderr)) as fp:
            for words in (line.split() for line in fp):
                if words[:2] == ["node", "width"]:
                    tables.append({})
                elif tables and len(words) >= 5:
                    tables[-1][words[0]] = words
        if len(tables) != 2:
            raise sn.SanityError(f"expected the link state before and after the step, found {len(tables)}")
        for when, rows in zip(("before", "after"), tables):
            for node, *_ in changes:
                row = rows.get(node)
                if row is None:
                    raise sn.SanityError(f"no link state logged for {node} (did `crosstalk link` fail?)")
                if parse_rate(row[2]) != want or parse_rate(row[4]) != want:
                    raise sn.SanityError(f"{node}: link at {row[2]} (tc {row[4]}) {when} the step, case "
                                         f"{self.link} needs {format_rate(want)} (changed by another job?)")
        return True

    @sanity_function
    def finished(self):
        return sn.all([sn.assert_gt(sn.min(self.round_times()), 0), self.links_as_asked()])

    def round_times(self):
        """LAMMPS' loop time in each round (the spec's ``rounds`` runs in one job)."""
        return loop_times(os.path.join(self.stagedir, "log.lammps"), self.rounds_in_process())

    @run_before("performance")
    def set_perf_variables(self):
        self.perf_variables = self.energy_perf_variables(self.round_times().evaluate())
