"""Energy of a job's measured step: a meter where the nodes have one, else SAND2012-1750 Eq 6.2.

Meters are read on every node of the job right before and right after the measured step (a job
step in the partition's launcher, one task per node), and the difference is the step's energy:

- ``pm_counters``: ``/sys/cray/pm_counters/energy`` (whole node, joules): total = sum over nodes.
- ``rapl``: top-level RAPL/powercap package zones ``intel-rapl:N/energy_uj`` (CPU packages, with
  wrap-around at ``max_energy_range_uj``): E_cpu per node measured, network and memory from Eq 6.2,
  as the paper did (it measured only the CPU).
- ``slurm``: the step's ConsumedEnergyRaw from ``sacct`` (needs accounting and an energy plugin).
- ``modelled``: no meter anywhere: Eq 6.2 with E_cpu = P_cpu x T, P_cpu an assumed constant per
  node (the spec says which); the performance unit carries the label ``modelled``.

``energy_source`` (a test variable, so it is in ReFrame's run report) names what was used and
``energy_model`` holds every Eq 6.2 parameter; both are also written to ``energy.json``.
"""
import json
import os
import re

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, variable

from crosstalk.models import energy as eq
from xtlib.launch import step_command
from xtlib.placement import slurm_steps

#: A fixed script (no spec value in it): one line per readable counter, then "<host> end".
READER = (
    'h=$(hostname); '
    'for f in /sys/cray/pm_counters/energy /sys/class/powercap/intel-rapl:*/energy_uj; do '
    '[ -r "$f" ] || continue; '
    'v=$(cut -d" " -f1 "$f" 2>/dev/null) || continue; '
    'm=$(cat "$(dirname "$f")/max_energy_range_uj" 2>/dev/null || echo 0); '
    'echo "$h $f $v $m"; done; echo "$h end"')
_PACKAGE = re.compile(r"/intel-rapl:\d+/energy_uj$")


def parse_meters(text):
    """``{host: {path: (value, max_range)}}`` from READER output; hosts that answered only."""
    hosts = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[1] == "end":
            hosts.setdefault(words[0], {})
        elif len(words) == 4:
            try:
                hosts.setdefault(words[0], {})[words[1]] = (float(words[2]), float(words[3]))
            except ValueError:
                continue
    return hosts


def meter_deltas(before, after):
    """(source, {host: joules}) from two READER outputs, or (None, {}) without a usable meter."""
    b, a = parse_meters(before), parse_meters(after)
    hosts = sorted(set(b) & set(a))
    if not hosts:
        return None, {}
    for source, keep, scale in (("pm_counters", lambda p: p == "/sys/cray/pm_counters/energy", 1.0),
                                ("rapl", lambda p: bool(_PACKAGE.search(p)), 1e-6)):
        per_host = {}
        for h in hosts:
            paths = [p for p in b[h] if keep(p) and p in a[h]]
            if not paths:
                break
            total = 0.0
            for p in paths:
                d = a[h][p][0] - b[h][p][0]
                if d < 0 and a[h][p][1] > 0:      # the counter wrapped
                    d += a[h][p][1]
                total += d * scale
            per_host[h] = total
        else:
            return source, per_host
    return None, {}


def sacct_energy(text, step_name):
    """Joules of the last step named ``step_name`` in ``sacct -P -n -o JobID,JobName,ConsumedEnergyRaw``."""
    found = None
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) >= 3 and parts[1] == step_name and parts[2].strip().isdigit():
            found = float(parts[2])
    return found if found else None


class Energy(rfm.RegressionTestPlugin):
    """Needs PairedRounds (xtlib.rounds): the energy of each round is a sample."""
    #: pm_counters, rapl, slurm or modelled (set after the run).
    energy_source = variable(str, value="unknown")
    #: Eq 6.2 parameters used (also for metered runs: what was modelled beside the meter).
    energy_model = variable(dict, value={})

    def measure_energy(self, nodes, bw_fraction, cpu_w, network_w=eq.NETWORK_W_FULL,
                       memory_w=eq.MEMORY_W):
        """Meter the measured step on ``nodes`` nodes; ``bw_fraction`` of the nominal network
        bandwidth and the per-node watts feed Eq 6.2 where a part of the energy is modelled."""
        self._energy_setup = {"nodes": int(nodes), "bw_fraction": float(bw_fraction),
                              "cpu_w": float(cpu_w), "network_w_full": float(network_w),
                              "memory_w": float(memory_w)}
        self.keep_files += ["energy.json"]

    def meter_lines(self, tag=""):
        """``(before, after)``: shell lines reading the meters right before and right after a step
        into ``energy.before<tag>`` and ``energy.after<tag>``; empty where the partition has none."""
        if not self.current_partition.extras.get("capabilities", {}).get("rapl"):
            # No meter on this partition's nodes (capabilities.rapl covers RAPL and pm_counters):
            # extra job steps would only cost time. Eq 6.2 (modelled) is used.
            self._energy_setup["meter"] = "none: capabilities.rapl is false for this partition"
            return [], []
        nodes = self._energy_setup["nodes"]
        reader = step_command(self, ["sh", "-c", READER], tasks=nodes, nodes=nodes)
        self.keep_files += [f"energy.before{tag}", f"energy.after{tag}"]
        return ([f"{reader} > energy.before{tag} 2>> energy.err || true"],
                [f"{reader} > energy.after{tag} 2>> energy.err || true"])

    @run_before("run", always_last=True)    # last before the main step: after links and loads are set
    def read_meters_around_step(self):
        if not hasattr(self, "_energy_setup"):
            return
        before, after = self.meter_lines()
        if not before:
            return
        self.prerun_cmds = self.prerun_cmds + before
        if slurm_steps(self):      # Slurm's own energy accounting, where it has one
            after = after + ['command -v sacct >/dev/null && sacct -j "$SLURM_JOB_ID" -n -P '
                             '-o JobID,JobName,ConsumedEnergyRaw > energy.sacct 2>> energy.err || true']
        self.postrun_cmds = after + self.postrun_cmds
        self.keep_files += ["energy.err"]

    def _staged(self, name):
        path = os.path.join(self.stagedir, name)
        if not os.path.exists(path):
            return ""
        with open(path) as fp:
            return fp.read()

    def energy_result(self, runtime_s, tag="", bw_fraction=None, slurm=True):
        """``{"energy_j", "source", "unit", "model"}`` of the step that took ``runtime_s``: the
        main step, or the step whose meters were read with ``tag`` (:meth:`meter_lines`) at
        ``bw_fraction`` of the nominal bandwidth. Slurm's step energy (``slurm``) identifies the
        main step only. Call after the run (e.g. in a run_before('performance') hook)."""
        s = dict(self._energy_setup)
        if bw_fraction is not None:
            s["bw_fraction"] = float(bw_fraction)
        runtime_s = float(runtime_s)
        model = {"equation": eq.SOURCE_62, "nodes": s["nodes"], "bw_fraction": s["bw_fraction"],
                 "network_w_per_node": s["network_w_full"] * s["bw_fraction"],
                 "network_w_full": s["network_w_full"], "memory_w_per_node": s["memory_w"],
                 "runtime_s": runtime_s, "meter": s.get("meter", "read before and after the step")}
        source, per_host = meter_deltas(self._staged(f"energy.before{tag}"), self._staged(f"energy.after{tag}"))
        slurm_j = None
        if slurm and not tag:
            slurm_j = sacct_energy(self._staged("energy.sacct"), os.path.basename(str(self.executable)))
        cpu_j = None      # the CPU's own energy, where a meter reads it (SAND2012-1750 §6 measured only that)
        if source == "pm_counters":
            total, e_cpu = sum(per_host.values()), None
            model = {"equation": "metered (whole node)", "nodes": len(per_host), "per_node_j": per_host}
        elif source == "rapl" or (source is None and slurm_j):
            # CPU energy measured per node (RAPL) or per step (Slurm); network and memory by Eq 6.2.
            e_cpu = (sum(per_host.values()) / len(per_host)) if source == "rapl" else slurm_j / s["nodes"]
            source = source or "slurm"
            rec = eq.total_energy(e_cpu, runtime_s, s["nodes"], s["bw_fraction"], s["memory_w"],
                                  s["network_w_full"])
            total = rec["value"]
            cpu_j = e_cpu * s["nodes"]
            model.update(e_cpu_per_node_j=e_cpu, e_cpu="measured")
        else:
            source = "modelled"
            e_cpu = s["cpu_w"] * runtime_s
            rec = eq.total_energy(e_cpu, runtime_s, s["nodes"], s["bw_fraction"], s["memory_w"],
                                  s["network_w_full"])
            total = rec["value"]
            model.update(cpu_w_per_node=s["cpu_w"], e_cpu_per_node_j=e_cpu,
                         e_cpu="modelled (constant CPU power, no meter on the nodes)")
        unit_label = {"pm_counters": "metered", "rapl": "RAPL CPU + Eq 6.2",
                      "slurm": "Slurm CPU + Eq 6.2", "modelled": "modelled, Eq 6.2"}[source]
        if not tag:
            self.energy_source = source
            self.energy_model = model
        else:
            self.keep_files += [f"energy{tag}.json"]
        with open(os.path.join(self.stagedir, f"energy{tag}.json"), "w") as fp:
            json.dump({"source": source, "energy_j": total, "cpu_energy_j": cpu_j, "model": model}, fp, indent=1)
        return {"energy_j": total, "cpu_energy_j": cpu_j, "source": source, "label": unit_label, "model": model}

    def energy_perf_variables(self, round_times):
        """Performance variables time_s, energy_j and edp_w1..3 (units say how the energy was
        obtained) of a step that ran ``round_times`` rounds, each the median over the rounds; every
        round's value goes to PairedRounds. The step's energy is split over its rounds in
        proportion to their times: exact for Eq 6.2 (linear in the run time at constant power);
        under a meter it assumes the power stayed constant from round to round."""
        times = [float(t) for t in round_times]
        res = self.energy_result(sum(times))
        share = [t / sum(times) for t in times]
        cpu = None if res["cpu_energy_j"] is None else [res["cpu_energy_j"] * f for f in share]
        return self._energy_variables("", times, [res["energy_j"] * f for f in share], res["label"], cpu)

    def step_energy_variables(self, suffix, steps):
        """The variables of :meth:`energy_perf_variables`, named with ``suffix``, of one step per
        round: ``steps`` lists ``(tag, time_s, bw_fraction)`` (tag "" is the main step), each
        step's energy its own (:meth:`energy_result`; Slurm's accounting, which names the main
        step only, is left out so that every step's energy has the same source)."""
        results = [self.energy_result(t, tag, fraction, slurm=False) for tag, t, fraction in steps]
        labels = sorted({r["label"] for r in results})
        cpu = [r["cpu_energy_j"] for r in results]
        return self._energy_variables(suffix, [float(t) for _, t, _ in steps], [r["energy_j"] for r in results],
                                      " / ".join(labels), None if None in cpu else cpu)

    def _energy_variables(self, suffix, times, energies, label, cpu_energies=None):
        """time_s, energy_j (total: Eq 6.2 around what was metered) and edp_w1..3; where a meter
        read the CPU (RAPL, Slurm), cpu_energy_j and cpu_edp_w1..3 too: the paper's CPU-frequency
        results are CPU energy alone. Without a meter they are absent, never modelled."""
        out = {f"time_s{suffix}": sn.make_performance_function(self.over_rounds(f"time_s{suffix}", times), "s"),
               f"energy_j{suffix}": sn.make_performance_function(self.over_rounds(f"energy_j{suffix}", energies),
                                                                 f"J ({label})")}
        for w, unit in ((1, "J s"), (2, "J s^2"), (3, "J s^3")):
            edp = [e * t ** w for e, t in zip(energies, times)]
            out[f"edp_w{w}{suffix}"] = sn.make_performance_function(self.over_rounds(f"edp_w{w}{suffix}", edp),
                                                                    f"{unit} ({label})")
        if cpu_energies is not None and not suffix:     # the claims read the case's own step only
            out[f"cpu_energy_j{suffix}"] = sn.make_performance_function(
                self.over_rounds(f"cpu_energy_j{suffix}", cpu_energies), "J (CPU, metered)")
            for w, unit in ((1, "J s"), (2, "J s^2"), (3, "J s^3")):
                edp = [e * t ** w for e, t in zip(cpu_energies, times)]
                out[f"cpu_edp_w{w}{suffix}"] = sn.make_performance_function(
                    self.over_rounds(f"cpu_edp_w{w}{suffix}", edp), f"{unit} (CPU, metered)")
        return out
