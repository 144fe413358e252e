"""E5 active probing (Casas & Bronevetsky): ImpactB on the idle fabric and under each load
(CompressionB configurations, applications); each application under each load
(spec: experiments/active-probing.yaml).

One job per load, every step on the same nodes and links:

1. ImpactB on the idle fabric (``idle_probe.out``): its minimum and variance are the M/G/1 service
   time t_min and Var(S) of Eq 1-3. Then each victim application alone (``*_alone``), the
   baseline of its slowdown in the same job.
2. The load starts in the background (BackgroundLoad) and the job waits until it reports that it
   has started (CompressionB's ``info started`` record, LAMMPS' first thermo line, STREAM's info).
3. ImpactB under the load (the main step), then each victim application in turn under the load.
4. The load is stopped (SIGTERM) and checked: it must have run throughout.

Rounds (the spec's ``rounds`` K): each probe's exchanges are cut into K consecutive blocks in
time, and each victim runs K times; a block's median (and its modelled rho) and a run's time are
one sample each, and the idle and loaded probes (and each victim alone and under the load) pair
round by round. The load runs through all K (it is not restarted: a restart per round would cost
its start-up K times).

Loads: ``idle``, ``compressionb:P-M-B`` (B in microseconds), ``app:lammps``, ``app:stream`` (the
application running continuously). ``rho`` is MODELLED (crosstalk.models.queueing.utilisation).

CompressionBIntensity: a light and a heavy CompressionB configuration in turn in one job
(``xt-compressionb --configs light,heavy --sweeps K``, the order alternating), each injecting for
``cb_compare_s``: Fig 5's comparison of configurations paired round by round, on the same links.
"""
import math
import os
import statistics

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, performance_function, run_after, run_before, sanity_function

from crosstalk.models.queueing import idle_parameters, utilisation
from crosstalk.specs import load_spec
from xtlib.apps import installed_app
from xtlib.build import BenchBuild
from xtlib.experiment import XtExperiment
from xtlib.lammps import INPUTS, lammps_args, loop_times
from xtlib.launch import step_command
from xtlib.linkcontrol import LinkControl
from xtlib.load import START_TIMEOUT_S, XT_STARTED, BackgroundLoad
from xtlib.placement import allocate_nodes, job_nodes, partition_nodes, place_ranks
from xtlib.records import all_validations_pass, records, result_value, round_values
from xtlib.rounds import PairedRounds

SPEC = load_spec("active-probing")
IDLE_PROBE = "idle_probe.out"
LAMMPS_LOG = "victim_lammps.log"
STREAM_OUT = "victim_stream.out"
LAMMPS_ALONE_LOG = "victim_lammps_alone.log"
STREAM_ALONE_OUT = "victim_stream_alone.out"
#: An aggressor application runs "forever" (until SIGTERM): LAMMPS steps, xt-stream seconds.
FOREVER_STEPS = 100_000_000
FOREVER_S = 3600
#: Runs "$0" "$@" until the stop file exists, then SIGTERMs it and waits (sh -c script).
STOPPABLE = ('"$0" "$@" > {out} & p=$!; while kill -0 $p 2>/dev/null && [ ! -e {stop} ]; do sleep 0.2; done; '
             'kill -TERM $p 2>/dev/null; wait $p')
CB_STOP = "compressionb.stop"
#: What each load prints once it is running (grep -F pattern in its output).
STARTED = {"compressionb": XT_STARTED, "lammps": "Step", "stream": '"type":"info"'}


def parse_load(load):
    """``idle`` -> ("idle", None); ``compressionb:P-M-B`` -> ("compressionb", (P, M, B));
    ``app:NAME`` -> ("app", NAME). Anything else is a spec error."""
    if load == "idle":
        return "idle", None
    kind, _, arg = str(load).partition(":")
    if kind == "compressionb":
        try:
            p, m, b = arg.split("-")
            return kind, (int(p), int(m), float(b))
        except ValueError:
            pass
    if kind == "app" and arg in ("lammps", "stream"):
        return kind, arg
    raise ValueError(f"active-probing: load {load!r}: expected idle, compressionb:P-M-B or app:lammps|stream")


@sn.deferrable
def half_rtts(path):
    """Every half round-trip sample (us) an xt-impactb run wrote to ``path``."""
    return [float(r["value"]) for r in records(path, "sample", metric="half_rtt").evaluate()]


def _blocks(path, rounds):
    """The half round trips (us) of each of ``rounds`` consecutive blocks of a probe's exchanges
    (by exchange number, over all pairs), in time order."""
    found = records(path, "sample", metric="half_rtt").evaluate()
    count = max((int(r["iteration"]) for r in found), default=-1) + 1
    if count < rounds:
        raise sn.SanityError(f"{path}: {count} exchanges cannot make {rounds} rounds")
    blocks = [[] for _ in range(rounds)]
    for r in found:
        blocks[int(r["iteration"]) * rounds // count].append(float(r["value"]))
    return blocks


@sn.deferrable
def block_medians(path, rounds):
    """The median half round trip (us) of each of ``rounds`` consecutive blocks of a probe."""
    return [statistics.median(b) for b in _blocks(path, rounds)]


@sn.deferrable
def block_rhos(loaded_path, idle_path, rounds):
    """MODELLED rho of each block: block k of the loaded probe against block k of the idle one."""
    return [modelled_rho(loaded, idle).evaluate()
            for loaded, idle in zip(_blocks(loaded_path, rounds), _blocks(idle_path, rounds))]


@sn.deferrable
def modelled_rho(loaded, idle):
    """MODELLED switch utilisation (Casas & Bronevetsky Eq 1-3): W = mean loaded latency,
    t_min and Var(S) from the idle probe."""
    t_min, var_s = idle_parameters(idle)
    return utilisation(sum(loaded) / len(loaded), t_min, var_s)


def shape_job_links(test, nodes):
    """Narrow the links of the job's nodes to the spec's ``link_width``, where the partition
    controls its veth links and the job spans nodes (its traffic then crosses them)."""
    extras = test.current_partition.extras
    width = test.setting("link_width")
    if width and extras.get("capabilities", {}).get("link_control") and extras.get("fabric") == "veth" \
            and nodes > 1:
        names, why = job_nodes(test, nodes)
        test.skip_if(names is None, why)
        test.shape_links(names, width=width)


@rfm.simple_test
class ActiveProbing(XtExperiment, BackgroundLoad, LinkControl, PairedRounds, rfm.RunOnlyRegressionTest):
    spec_name = "active-probing"
    load = parameter(SPEC.parameter("load"))
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]

    @run_after("init")
    def check_load(self):
        parse_load(self.load)   # a malformed spec value fails here, naming the value

    @property
    def has_lammps(self):
        return installed_app(self, "lmp")[0] is not None

    def _layout(self):
        ranks = int(self.setting("ranks"))
        nodes = max(1, partition_nodes(self, ranks))
        return ranks, nodes

    @run_after("setup")
    def configure(self):
        bin_dir = self.bench.bin_dir
        ranks, nodes = self._layout()
        self.skip_if(ranks < 2 or ranks % 2, f"ranks must be even and >= 2 (ImpactB pairs), got {ranks}")
        kind, arg = parse_load(self.load)
        self.skip_if(arg == "lammps" and not self.has_lammps, installed_app(self, "lmp")[1])
        self.sourcesdir = INPUTS
        allocate_nodes(self, nodes)
        shape_job_links(self, nodes)     # the job's nodes carry the probes, the load and the victims

        # 1. The idle-fabric probe, then (BackgroundLoad) the load; 3. ImpactB as the main step.
        probe = [os.path.join(bin_dir, "xt-impactb"), "--interval", self.setting("probe_interval_ms"),
                 "--count", self.setting("probe_count"), "--msg-size", self.setting("probe_msg_size")]
        self.prerun_cmds += [f"{step_command(self, probe, ranks, nodes)} > {IDLE_PROBE} 2> idle_probe.err"]
        self.executable = probe[0]
        self.executable_opts = [str(w) for w in probe[1:]]
        self.num_tasks = ranks
        self.num_tasks_per_node = math.ceil(ranks / nodes)
        place_ranks(self)

        # 3. Victims under the load, one after the other (before the load is stopped).
        box, steps = self.setting("lammps_box"), self.setting("lammps_steps")
        metrics = ["probe_avg", "probe_median", "probe_p99", "probe_var", "idle_probe_avg", "idle_probe_median",
                   "rho"]
        #    Each victim also runs alone right after the idle probe (before the load starts).
        if self.has_lammps:
            def lmp(log):
                return step_command(self, ["lmp", *lammps_args(box, steps, log, rounds=self.rounds, screen=False)],
                                    ranks, nodes)
            self.prerun_cmds += [f"{lmp(LAMMPS_ALONE_LOG)} > victim_lammps_alone.err 2>&1"]
            self.postrun_cmds += [f"{lmp(LAMMPS_LOG)} > victim_lammps.err 2>&1"]
            metrics += ["lammps_time", "lammps_time_alone"]
        stream = step_command(self, [os.path.join(bin_dir, "xt-stream"), "--threads", 1, "--size",
                                     self.setting("stream_size"), "--ntimes", self.setting("stream_ntimes"),
                                     "--no-samples", "--rounds", self.rounds], 1, 1)
        self.env_vars["OMP_NUM_THREADS"] = "1"
        self.prerun_cmds += [f"{stream} > {STREAM_ALONE_OUT} 2> victim_stream_alone.err"]
        self.postrun_cmds += [f"{stream} > {STREAM_OUT} 2> victim_stream.err"]
        metrics += ["stream_time", "stream_time_alone"]

        # 2. The load.
        warmup = float(self.setting("warmup_s"))
        if kind == "compressionb":
            partners, messages, bubble = arg
            self.prerun_cmds += [f"rm -f {CB_STOP}"]
            self.skip_if(partners > ranks - 1, f"CompressionB with {partners} partners needs more than {ranks} ranks")
            # Every task runs CompressionB under a small sh wrapper (the argv are positional
            # arguments, nothing is interpolated) that stops it with SIGTERM once the job creates
            # compressionb.stop; rank 0 writes its report straight into the file. Stopping srun
            # itself with SIGTERM kills the step's tasks (SIGKILL) and loses the report.
            self.add_load("compressionb", [
                "sh", "-c", STOPPABLE.format(out="compressionb.load.out", stop=CB_STOP),
                os.path.join(bin_dir, "xt-compressionb"), "--partners", partners, "--messages", messages,
                "--bubble", bubble, "--msg-size", self.setting("cb_msg_size"), "--duration", FOREVER_S],
                tasks=ranks, nodes=nodes, warmup_s=warmup, started=STARTED["compressionb"])
            metrics.append("cb_injected_bw")
        elif arg == "lammps":
            self.add_load("lammps", ["lmp", *lammps_args(box, FOREVER_STEPS, "none")], tasks=ranks, nodes=nodes,
                          warmup_s=warmup, reports=False, started=STARTED["lammps"])
        elif arg == "stream":
            # One STREAM process per node, like the victim's on the first node.
            self.add_load("stream", [
                os.path.join(bin_dir, "xt-stream"), "--threads", 1, "--size", self.setting("stream_size"),
                "--duration", FOREVER_S, "--no-samples"], tasks=nodes, nodes=nodes, warmup_s=warmup, reports=False,
                started=STARTED["stream"])
        self.perf_variables = {m: getattr(self, m)() for m in metrics}
        # The figures read the probe distributions (sample records) from the run's output.
        self.keep_files = [IDLE_PROBE, LAMMPS_LOG, STREAM_OUT, LAMMPS_ALONE_LOG, STREAM_ALONE_OUT] + \
            [f"{load.name}.load.out" for load in getattr(self, "_loads", [])]

    @run_before("run")
    def stop_compressionb_first(self):
        """Between BackgroundLoad's "still running" check and its SIGTERM (parents' hooks ran first):
        ask CompressionB to stop and wait (up to START_TIMEOUT_S) for rank 0's report."""
        if not any(load.name == "compressionb" for load in getattr(self, "_loads", [])):
            return
        check = [i for i, c in enumerate(self.postrun_cmds) if c.startswith("kill -0 $compressionb_pid")]
        if not check:
            raise ValueError("active-probing: BackgroundLoad's stop sequence for compressionb not found")
        self.postrun_cmds[check[0] + 1:check[0] + 1] = [
            f"touch {CB_STOP}",
            f"for i in $(seq {START_TIMEOUT_S * 5}); do grep -qF '\"injected_bw\"' compressionb.load.out && break; "
            f"sleep 0.2; done",
        ]

    # -- sanity ------------------------------------------------------------------------------
    @sanity_function
    def validates(self):
        checks = [self.loads_ran_throughout(),
                  sn.assert_gt(sn.len(half_rtts(self._path(self.stdout))), 0),
                  sn.assert_gt(sn.len(half_rtts(self._path(IDLE_PROBE))), 0),
                  all_validations_pass(self._path(STREAM_OUT)), all_validations_pass(self._path(STREAM_ALONE_OUT))]
        if self.has_lammps:
            checks += [sn.assert_gt(self.lammps_time(), 0), sn.assert_gt(self.lammps_time_alone(), 0)]
        return sn.all(checks)

    def _path(self, name):
        return os.path.join(self.stagedir, str(name))

    # -- probe metrics -------------------------------------------------------------------------
    def _probe(self, stat, path=None):
        return result_value(self._path(path or self.stdout), "half_rtt", stat)

    @performance_function("us")
    def probe_avg(self):
        return self._probe("avg")

    @performance_function("us")
    def probe_median(self):
        return self.over_rounds("probe_median", block_medians(self._path(self.stdout), self.rounds))

    @performance_function("us")
    def probe_p99(self):
        return self._probe("p99")

    @performance_function("us^2")
    def probe_var(self):
        return result_value(self._path(self.stdout), "half_rtt_variance", "variance")

    @performance_function("us")
    def idle_probe_avg(self):
        return self._probe("avg", IDLE_PROBE)

    @performance_function("us")
    def idle_probe_median(self):
        return self.over_rounds("idle_probe_median", block_medians(self._path(IDLE_PROBE), self.rounds))

    @performance_function("fraction")
    def rho(self):
        return self.over_rounds("rho", block_rhos(self._path(self.stdout), self._path(IDLE_PROBE), self.rounds))

    # -- load and victims ----------------------------------------------------------------------
    @performance_function("MB/s")
    def cb_injected_bw(self):
        return result_value(self._path("compressionb.load.out"), "injected_bw", "sum")

    @property
    def rounds(self):
        return self.rounds_in_process()

    @performance_function("s")
    def lammps_time(self):
        return self.over_rounds("lammps_time", loop_times(self._path(LAMMPS_LOG), self.rounds))

    @performance_function("s")
    def stream_time(self):
        return self.over_rounds("stream_time", self._stream_times(STREAM_OUT))

    @performance_function("s")
    def lammps_time_alone(self):
        return self.over_rounds("lammps_time_alone", loop_times(self._path(LAMMPS_ALONE_LOG), self.rounds))

    @performance_function("s")
    def stream_time_alone(self):
        return self.over_rounds("stream_time_alone", self._stream_times(STREAM_ALONE_OUT))

    def _stream_times(self, out):
        return round_values(self._path(out), "triad", "best", self.rounds, field="elapsed_s")


@rfm.simple_test
class CompressionBIntensity(XtExperiment, LinkControl, PairedRounds, rfm.RunOnlyRegressionTest):
    """CompressionB's injected bandwidth at the spec's light and heavy configurations, in turn in
    one job on the same links: each round one run of each, the order alternating (Fig 5)."""

    spec_name = "active-probing"
    repeat = parameter(range(SPEC.repeats()))
    bench = fixture(BenchBuild, scope="environment")
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]

    @run_after("init")
    def check_configurations(self):
        """The claim reads heavy against light: heavy must be at least as intense in every knob."""
        (_, light), (_, heavy) = (parse_load(f"compressionb:{self.setting(k)}") for k in ("cb_light", "cb_heavy"))
        if not (heavy[0] >= light[0] and heavy[1] >= light[1] and heavy[2] <= light[2]) or heavy == light:
            raise ValueError(f"active-probing: cb_heavy {self.setting('cb_heavy')} is not more intense than "
                             f"cb_light {self.setting('cb_light')} (more partners and messages, a shorter bubble)")

    @run_after("setup")
    def configure(self):
        ranks = int(self.setting("ranks"))
        nodes = max(1, partition_nodes(self, ranks))
        self.skip_if(ranks < 2, f"CompressionB needs 2 ranks or more, got {ranks}")
        heavy_partners = parse_load(f"compressionb:{self.setting('cb_heavy')}")[1][0]
        self.skip_if(heavy_partners > ranks - 1,
                     f"CompressionB with {heavy_partners} partners needs more than {ranks} ranks")
        allocate_nodes(self, nodes)
        shape_job_links(self, nodes)
        self.executable = os.path.join(self.bench.bin_dir, "xt-compressionb")
        self.executable_opts = ["--configs", f"{self.setting('cb_light')},{self.setting('cb_heavy')}",
                                "--sweeps", str(self.rounds_in_process()),
                                "--duration", str(self.setting("cb_compare_s")),
                                "--msg-size", str(self.setting("cb_msg_size"))]
        self.num_tasks = ranks
        self.num_tasks_per_node = math.ceil(ranks / nodes)
        place_ranks(self)
        self.perf_variables = {"cb_injected_bw_light": self.cb_injected_bw_light(),
                               "cb_injected_bw_heavy": self.cb_injected_bw_heavy()}

    @sanity_function
    def validates(self):
        return sn.assert_eq(sn.len(records(self.stdout, "result", metric="injected_bw", stat="sum")),
                            2 * self.rounds_in_process())

    def _per_round(self, name, config):
        return self.over_rounds(name, round_values(self.stdout, "injected_bw", "sum", self.rounds_in_process(),
                                                   config=config))

    @performance_function("MB/s")
    def cb_injected_bw_light(self):
        return self._per_round("cb_injected_bw_light", self.setting("cb_light"))

    @performance_function("MB/s")
    def cb_injected_bw_heavy(self):
        return self._per_round("cb_injected_bw_heavy", self.setting("cb_heavy"))
