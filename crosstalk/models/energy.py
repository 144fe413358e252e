"""Energy models of Barrett et al. SAND2012-1750 [sand2012], ch. 6.

- Eq 6.1 chip power: P = A C V^2 f + t A V I_short f + V I_leak.
- Eq 6.2 total energy: (E_cpu + E_network + E_memory) x nodes; E_cpu measured per node,
  E_network = 25 W per node at full bandwidth, linear in the bandwidth fraction (12.5, 6.25, 3.125 W
  at 1/2, 1/4, 1/8), E_memory = 20 W per node; watts x run time = joules.
- §6.4 / Fig 6.2: energy-delay product E * T^w, w = 1, 2, 3, with E and T normalised to the baseline.
Only E_cpu is measured: every other value here is returned as modelled.
"""
from crosstalk.models import modelled

NETWORK_W_FULL = 25.0
MEMORY_W = 20.0
SOURCE_62 = "Barrett et al. SAND2012-1750 Eq 6.2"


def chip_power(a, c, v, f, t=0.0, i_short=0.0, i_leak=0.0):
    """Eq 6.1: dynamic A C V^2 f + short-circuit t A V I_short f + leakage V I_leak (W)."""
    return a * c * v * v * f + t * a * v * i_short * f + v * i_leak


def network_power(bw_fraction, full_w=NETWORK_W_FULL):
    """Per-node network power, linear in the bandwidth fraction (25 W at 1, 3.125 W at 1/8)."""
    if not 0 < bw_fraction <= 1:
        raise ValueError(f"bandwidth fraction must be in (0, 1], got {bw_fraction}")
    return full_w * bw_fraction


def total_energy(e_cpu_per_node, runtime_s, nodes, bw_fraction=1.0, memory_w=MEMORY_W,
                 network_full_w=NETWORK_W_FULL):
    """Eq 6.2 in joules, with E_network and E_memory as watts x run time. Modelled record."""
    e_net = network_power(bw_fraction, network_full_w) * runtime_s
    e_mem = memory_w * runtime_s
    total = (e_cpu_per_node + e_net + e_mem) * nodes
    return modelled("total_energy", total, "J", SOURCE_62, e_cpu_per_node=float(e_cpu_per_node),
                    e_network_per_node=e_net, e_memory_per_node=e_mem, nodes=nodes,
                    bw_fraction=bw_fraction, runtime_s=runtime_s)


def cpu_energy_from_total(total_j, runtime_s, nodes, bw_fraction=1.0):
    """Eq 6.2 solved for E_cpu per node (J): total / nodes - (P_net + P_mem) x T."""
    return total_j / nodes - (network_power(bw_fraction) + MEMORY_W) * runtime_s


def edp(energy, time, baseline_energy, baseline_time, w=1):
    """Fig 6.2: (E / E_base) * (T / T_base)^w."""
    if w not in (1, 2, 3):
        raise ValueError(f"w must be 1, 2 or 3, got {w}")
    return (energy / baseline_energy) * (time / baseline_time) ** w


def edp_from_pct(rt_pct, e_pct, w=1):
    """EDP of a Table 6.1/6.2 cell given as % differences from the baseline (negative = less)."""
    return edp(1 + e_pct / 100.0, 1 + rt_pct / 100.0, 1.0, 1.0, w)


def edp_records(rt_pct, e_pct):
    """Normalised E, T and E*T^w for w = 1..3 as modelled records (one configuration)."""
    src = "Barrett et al. SAND2012-1750 §6.4 Fig 6.2"
    out = [modelled("energy_normalised", 1 + e_pct / 100.0, "x", src),
           modelled("runtime_normalised", 1 + rt_pct / 100.0, "x", src)]
    out += [modelled(f"edp_w{w}", edp_from_pct(rt_pct, e_pct, w), "x", src, w=w) for w in (1, 2, 3)]
    return out


def energy_change_pct(base_j, base_s, nodes, rt_pct, bw_fraction):
    """Table 6.2 'Energy %Diff' predicted by Eq 6.2 from the baseline and the run-time change.

    Assumes average CPU power per node stays at its baseline value (E_cpu = P_cpu x T), which the
    paper measured rather than assumed; so this is a model of Table 6.2, not a restatement.
    """
    p_cpu = cpu_energy_from_total(base_j, base_s, nodes) / base_s
    if p_cpu <= 0:
        raise ValueError(f"baseline energy {base_j} J is below network+memory energy alone: "
                         "no CPU energy left (typo in the table?)")
    t = base_s * (1 + rt_pct / 100.0)
    e = total_energy(p_cpu * t, t, nodes, bw_fraction)["value"]
    return modelled("total_energy_change", 100.0 * (e - base_j) / base_j, "%", SOURCE_62,
                    p_cpu_w=p_cpu, bw_fraction=bw_fraction)
