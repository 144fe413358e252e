"""E4 congestion, GPCNeT (spec: experiments/congestion.yaml).

Three tests: ``CongestionCanary`` (xt-congestion, each congestor alone and all four, PPort 1 and N),
``CongestionGpcnet`` (upstream ``network_load_test`` where it is on PATH, read with
crosstalk.parsers.gpcnet) and ``CongestionVictim`` (LAMMPS without and with an MPI_Put incast into
its first node). The spec's header explains the layout (endpoints sharing shaped host links).
"""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, performance_function, run_after, sanity_function

from crosstalk.models.congestion import CANARIES, IMPACTS, impact
from crosstalk.models.congestion_layout import (
    CONGESTORS,
    Fabric,
    canary_count,
    congesting_rate,
    congestion_seed,
    shuffled,
)
from crosstalk.skips import platform_reason
from crosstalk.specs import load_spec
from crosstalk.vcluster import format_rate, parse_rate
from crosstalk.vcluster.topology import build as build_topology
from xtlib.apps import installed_app
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.lammps import INPUTS, lammps_args, loop_times, step_loop_time
from xtlib.linkcontrol import LINKS_AFTER, LinkControl
from xtlib.load import XT_STARTED, XT_STOP_SIGNAL, BackgroundLoad
from xtlib.placement import allocate_nodes, job_nodes, partition_nodes, place_ranks, slurm_steps
from xtlib.records import records, result_value, round_values, tool_value
from xtlib.rounds import PairedRounds, one_round

SPEC = load_spec("congestion")


class Shaped(LinkControl):
    """Every host link at one rate (the spec's ``link_rate`` unless given) for the whole job,
    checked again at its end (the virtual cluster is shared: a restore by another run during the
    job must not pass unseen). The links are those of the job's own nodes (xtlib.placement.job_nodes);
    a site hook is not shaped."""

    def fabric_nodes(self, count):
        """The names of the ``count`` nodes the job runs on (the job is pinned to them)."""
        if not hasattr(self, "_fabric_nodes"):
            names, why = job_nodes(self, count)
            self.skip_if(names is None, why)
            self._fabric_nodes = names
        return self._fabric_nodes

    def shape_fabric(self, nodes, rate=None):
        self.skip_if(bool(self.current_partition.extras.get("link_hook")), platform_reason(
                     "link shaping through a site hook: node names for it are not in the inventory"))
        rate = str(rate or self.setting("link_rate"))
        self.shaped_nodes = self.fabric_nodes(nodes)
        self.shape_links(self.shaped_nodes, rate=rate)
        self.shaped_bps = parse_rate(rate)

    @sn.deferrable
    def links_stayed_shaped(self):
        bps = getattr(self, "shaped_bps", None)
        if not bps:
            return True
        return self.links_were(LINKS_AFTER, self.shaped_nodes, "at the end of the job (restored by another run?)",
                               bps=bps)


@sn.deferrable
def round_impacts(kind, suffix, iso_avg, iso_p99, con_avg, con_p99):
    """Each round's congestion impact (crosstalk.models.congestion, the one place it is computed):
    a round's congested phase over its own isolated one."""
    return [impact(kind, {"avg": ia, "p99": ip}, {"avg": ca, "p99": cp}, suffix)
            for ia, ip, ca, cp in zip(iso_avg, iso_p99, con_avg, con_p99)]


class CanaryMetrics(PairedRounds):
    """Perf variables of xt-congestion and GPCNeT alike: each canary isolated and congested (avg,
    p99) and its congestion impact under both definitions, the median over the job's rounds (each
    round's impact of its own pair, so drift of a shared host between rounds cancels). Subclasses
    read each round's values."""

    @staticmethod
    def value_name(prefix, phase, stat):
        return f"{prefix}_{phase}_{stat}"

    @staticmethod
    def impact_name(prefix, suffix):
        return f"ci_{prefix}_{suffix}"

    def canary_rounds(self, prefix, phase, stat):
        """The canary's value in each round (deferred list)."""
        raise NotImplementedError

    def canary_value(self, prefix, phase, stat):
        return self.over_rounds(self.value_name(prefix, phase, stat), self.canary_rounds(prefix, phase, stat))

    def canary_impact(self, prefix, suffix):
        values = [self.canary_rounds(prefix, phase, stat) for phase in ("isolated", "congested")
                  for stat in ("avg", "p99")]
        return self.over_rounds(self.impact_name(prefix, suffix),
                                round_impacts(CANARIES[prefix].kind, suffix, *values))

    @run_after("setup")
    def set_canary_perf_variables(self):
        perf = {}
        for prefix, canary in CANARIES.items():
            for phase in ("isolated", "congested"):
                for stat in ("avg", "p99"):
                    perf[self.value_name(prefix, phase, stat)] = sn.make_performance_function(
                        self.canary_value(prefix, phase, stat), canary.unit)
            for suffix in IMPACTS:
                perf[self.impact_name(prefix, suffix)] = sn.make_performance_function(
                    self.canary_impact(prefix, suffix), "x")
        self.perf_variables = perf


class CongestionBase(XtExperiment, Shaped, rfm.RunOnlyRegressionTest):
    spec_name = "congestion"
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]

    @property
    def hosts(self):
        return partition_nodes(self)

    @property
    def link_control(self):
        return bool(self.current_partition.extras.get("capabilities", {}).get("link_control"))

    @property
    def topology(self):
        """The partition's switch topology (a star where none is described)."""
        return self.current_partition.extras.get("topology") or "star"

    @property
    def nominal_rate(self):
        """The node rate the cluster was built with (its switch links' rates follow from it)."""
        return str(self.current_partition.extras.get("link_rate") or self.setting("link_rate"))

    def fabric_topology(self, names):
        """The partition's switches as the cluster built them: the nominal node rate sets the
        switch links' rates (a machine's fabric balance too), whatever the job shapes host links to."""
        from crosstalk.site.machines import load, ratios
        like = self.current_partition.extras.get("like")
        fabric = ratios(load(like))["fabric"] if like else None
        return build_topology(self.topology, names, parse_rate(self.nominal_rate), fabric=fabric)

    def pport_value(self):
        return self.current_partition.processor.num_cpus if self.pport == "N" else int(self.pport)


@rfm.simple_test
class CongestionCanary(CanaryMetrics, CongestionBase):
    """xt-congestion: canaries isolated, then with the chosen congestors."""
    congestors = parameter(SPEC.parameter("congestors"))
    pport = parameter(SPEC.parameter("pport"))
    repeat = parameter(range(SPEC.repeats()))

    @run_after("setup")
    def configure(self):
        kinds = list(CONGESTORS) if self.congestors == "all" else [self.congestors]
        ppn = self.pport_value()
        per_host = 1
        fraction = float(self.setting("canary_fraction"))
        if self.hosts == 1:
            self.layout = "one-host"
            gnodes = int(self.setting("local_nodes"))
        elif self.link_control and not self.topology.startswith("star"):
            self.layout = "fabric"           # one GPCNeT node per host; switch links are shared
            gnodes = self.hosts
            fraction = float(self.setting("canary_fraction_fabric"))
        elif self.link_control:
            self.layout = "shared-links"
            per_host = int(self.setting("endpoints_per_node"))
            gnodes = self.hosts * per_host
        else:
            self.layout = "nodes"
            gnodes = self.hosts
        need = canary_count(fraction, gnodes) + 2 * len(kinds)
        self.skip_if(gnodes < need, platform_reason(
                     f"congestors={self.congestors} needs {need} GPCNeT nodes (>= 2 canary nodes and >= 2 "
                     f"per congestor); layout {self.layout} gives {gnodes}"))
        self.num_tasks = gnodes * ppn
        if self.layout != "one-host":
            self.num_tasks_per_node = per_host * ppn
            cores = self.current_partition.processor.num_cpus
            self.skip_if(slurm_steps(self) and self.num_tasks_per_node > cores, platform_reason(
                         f"{self.num_tasks_per_node} ranks per host > {cores} cores: Slurm would not place them"))
        seed = int(self.setting("seed"))
        if self.layout in ("shared-links", "fabric"):
            # The spec's seed, or the next one whose congestors fill a link the canaries' traffic
            # crosses the same way (a canary host's link on a star; a global link or an
            # oversubscribed uplink on a routed fabric), with this cluster's real link rates
            # (crosstalk.models.congestion_layout). None: the checks' premise cannot hold here.
            # Host links: the spec's rate on a star (below what the congestors inject, so the link,
            # not the CPU, is narrowest); the nominal rate on a routed fabric, whose switch links
            # are set relative to it (a machine's global:injection balance).
            self.host_rate = self.nominal_rate if self.layout == "fabric" else str(self.setting("link_rate"))
            names = self.fabric_nodes(self.hosts)
            shaped = parse_rate(self.host_rate)
            fabric = Fabric(self.fabric_topology(names), names, shaped,
                            injection_bps=parse_rate(str(self.setting("congestor_injection"))))
            host_of = (lambda v: v) if self.layout == "fabric" else (lambda v: v % self.hosts)
            planned = congestion_seed(seed, gnodes, host_of, fraction, kinds, fabric)
            if planned is None:
                # what would make it applicable: the link rate at which the planner finds a layout
                rate = congesting_rate(seed, gnodes, host_of, fraction, kinds, fabric, shaped)
                where = (f"; at host links of {rate / 1e6:g} Mbit/s or below (switch links scaled alike) it finds "
                         "one" if rate else "; no link rate helps here (more nodes or an oversubscribed "
                         "topology would)")
                self.skip_if(True, platform_reason(
                    f"no layout puts a link the congestors fill on the canaries' routes "
                    f"({self.hosts} hosts, {self.topology}, host links at {format_rate(shaped)}){where}"))
            seed = planned
            if self.layout == "fabric":
                self.planned_canaries = {names[v] for v in shuffled(gnodes, seed)[:canary_count(fraction, gnodes)]}
        self.executable = os.path.join(self.bench.bin_dir, "xt-congestion")
        self.executable_opts = [
            "--congestors", ",".join(kinds), "--time-limit", str(self.setting("time_limit_s")),
            "--bw-iterations", str(self.setting("bw_iterations")), "--rounds", str(self.rounds),
            "--congestor-iterations", str(self.setting("congestor_iterations")),
            "--canary-fraction", str(fraction), "--seed", str(seed), "--ppn", str(ppn)]
        if self.layout in ("one-host", "shared-links"):
            # Every block of ppn consecutive ranks is one GPCNeT node; placed round robin over hosts.
            self.executable_opts.append("--allow-shared-nodes")
        # shared-links (and one host): endpoint v (ranks v*ppn...) round robin over the hosts, its
        # ppn ranks together (srun's plane distribution; a file of hosts per rank for mpirun).
        # nodes, fabric: ppn ranks on every node, node v on host v.
        place_ranks(self, spread="per-node" if self.layout in ("nodes", "fabric") else "node", block=ppn,
                    unbound=True)
        if self.layout in ("shared-links", "fabric"):
            self.shape_fabric(self.hosts, self.host_rate)

    @property
    def rounds(self):
        """Isolated-then-congested rounds in the job (1: GPCNeT's single pass)."""
        return int(self.setting("rounds"))

    def canary_rounds(self, prefix, phase, stat):
        canary = CANARIES[prefix]     # xt-congestion names a canary's values by their kind
        return round_values(self.stdout, canary.kind, stat, self.rounds, canary=canary.kernel, phase=phase)

    @sn.deferrable
    def canaries_apart(self):
        """On shared-link layouts the canary endpoints must be on two hosts at least; on a routed
        fabric the canaries are the hosts whose routes the seed was chosen for."""
        if self.layout not in ("shared-links", "fabric"):
            return True
        info = records(self.stdout, "info").evaluate()
        if not info:
            raise sn.SanityError("xt-congestion printed no layout (info record)")
        hosts = {item.split("#")[0] for item in info[0].get("nodes_canary", "").split(",") if item}
        if self.layout == "fabric" and hosts != self.planned_canaries:
            raise sn.SanityError(f"canaries on {sorted(hosts)}, planned on {sorted(self.planned_canaries)} "
                                 f"(xt-congestion's shuffle differs from congestion_layout's)")
        if len(hosts) < 2:
            raise sn.SanityError(f"canary endpoints all on {hosts}: their traffic never crossed a link "
                                 f"(xt-congestion's layout differs from congestion_layout's)")
        return True

    @sanity_function
    def complete(self):
        found = records(self.stdout, "result").evaluate()
        have = {(r.get("canary"), r.get("phase")) for r in found if r.get("phase")}
        want = {(c.kernel, p) for c in CANARIES.values() for p in ("isolated", "congested")}
        return sn.all([sn.assert_true(want <= have, f"missing canary results: {sorted(want - have)}"),
                       self.canaries_apart(), self.links_stayed_shaped()])

    @run_after("setup")
    def add_congestor_bw(self):
        self.perf_variables["congestor_bw"] = self.congestor_bw()

    @performance_function("MiB/s/rank")
    def congestor_bw(self):
        rates = [r["value"] for r in records(self.stdout, "result", metric="congestor_bandwidth",
                                              during="rr_lat").evaluate()]
        if not rates:
            raise sn.SanityError("no congestor_bandwidth during rr_lat")
        return sum(rates) / len(rates)


@rfm.simple_test
class CongestionGpcnet(CanaryMetrics, CongestionBase):
    """Upstream GPCNeT network_load_test (all four congestors at once) where it is installed."""
    pport = parameter(SPEC.parameter("pport"))
    repeat = parameter(range(SPEC.repeats()))

    @run_after("setup")
    def configure(self):
        _, why = installed_app(self, "network_load_test")
        self.skip_if(why is not None, f"GPCNeT: {why}")
        self.skip_if(self.hosts < 10, platform_reason(
            f"network_load_test needs >= 10 nodes (2 canary, 2 per congestor); "
            f"{self.current_partition.fullname} has {self.hosts}"))
        ppn = self.pport_value()
        self.num_tasks = self.hosts * ppn
        self.num_tasks_per_node = ppn
        self.executable = "network_load_test"
        place_ranks(self, spread="per-node", block=ppn)

    @sanity_function
    def parsed(self):
        return sn.assert_gt(tool_value("gpcnet", self.stdout, CANARIES["lat"].gpcnet, "avg",
                                       condition="isolated"), 0)

    def canary_rounds(self, prefix, phase, stat):
        return one_round(tool_value("gpcnet", self.stdout, CANARIES[prefix].gpcnet, stat, condition=phase))


@rfm.simple_test
class CongestionVictim(CongestionBase, BackgroundLoad, PairedRounds):
    """LAMMPS LJ melt on the first nodes, isolated or under an MPI_Put incast into its first node;
    the spec's ``victim_rounds`` runs of it in the job, each a sample of its time (under the incast:
    alone and under it, in each round)."""
    victim_load = parameter(SPEC.parameter("victim_load"))
    repeat = parameter(range(SPEC.repeats()))

    @run_after("setup")
    def configure(self):
        _, why = installed_app(self, "lmp")
        self.skip_if(why is not None, f"LAMMPS: {why}")
        if self.victim_load == "incast":
            self.alternate_with_load(self.setting("victim_rounds"))
        ranks = int(self.setting("victim_ranks"))
        self.num_tasks = ranks
        if self.hosts > 1:
            self.skip_if(self.hosts < ranks + 1,
                         platform_reason(f"the victim needs {ranks} nodes and the incast one more"))
            self.num_tasks_per_node = 1
            if slurm_steps(self):
                self.num_tasks = self.hosts      # the job holds every node (the incast spans them)
        self.sourcesdir = INPUTS
        self.executable = "lmp"
        self.executable_opts = lammps_args(self.setting("lammps_box"), self.setting("lammps_steps"),
                                           rounds=self.rounds_in_process("victim_rounds"))
        # more than one host: one rank per node, LAMMPS on the first (srun: its ranks of the job's)
        place_ranks(self, **({"spread": "node", "first": ranks, "unbound": True} if self.hosts > 1 else {}))
        if self.link_control and self.hosts > 1:
            self.shape_fabric(self.hosts)     # isolated and congested on the same shaped fabric
        if self.victim_load == "incast":
            # Rank 0 (the window) shares the victim's first node; every other node puts into it.
            nodes = self.hosts if self.hosts > 1 else 1
            tasks = nodes if self.hosts > 1 else 2
            allocate_nodes(self, nodes)
            argv = [os.path.join(self.bench.bin_dir, "xt-inject"), "--target", 0, "--rate", 0,
                    "--msg-size", self.setting("load_msg_size"), "--duration", 3600]
            self.add_load("incast", argv, tasks=tasks, nodes=nodes, warmup_s=self.setting("warmup_s"),
                          started=XT_STARTED, stop_signal=XT_STOP_SIGNAL)
        elif self.hosts > 1:
            allocate_nodes(self, self.hosts)  # same allocation in both conditions
        if self.victim_load == "off":
            self.perf_variables = {"victim_time_s": self.victim_time_s()}

    @sanity_function
    def finished(self):
        return sn.all([sn.assert_gt(self.victim_time_s(), 0), self.loads_ran_throughout(),
                       self.links_stayed_shaped()])

    def _step_times(self, alone=False):
        return self.per_round(lambda output: step_loop_time(self, output), alone)

    @performance_function("s")
    def victim_time_s(self):
        if self.alternating:
            return self.over_rounds("victim_time_s", self._step_times())
        return self.over_rounds("victim_time_s", loop_times("log.lammps", self.rounds_in_process("victim_rounds")))

    @performance_function("s")
    def victim_time_s_alone(self):
        """The victim without the incast, in the same job just before it starts."""
        return self.over_rounds("victim_time_s_alone", self._step_times(alone=True))

    @performance_function("MB/s")
    def load_bw(self):
        return result_value("incast.load.out", "total_rate", "sum")
