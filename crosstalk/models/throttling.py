"""Network-induced memory contention (NiMC), Groves 2017 [groves2017], §2.2.

- Fig 2.21(b) / "Throttling": least-squares line of STREAM bandwidth vs injected RDMA bandwidth;
  -slope = memory bytes lost per injected byte (paper: 14 for DRAM, 22 for LLC).
- "Core reservation": the RDMA rate where the N-1-core line (one core reserved for the NIC) meets
  the N-core line; above it reserving a core beats throttling (paper: 400-500 MBps).
- Tables 2.4 / 2.5: bandwidth change and application slowdown under RDMA injection.
"""
import numpy as np

from crosstalk.models import modelled

SOURCE = "Groves 2017 §2.2, Fig 2.21(b)"


def fit_bandwidth_loss(rdma_bw, mem_bw, confidence=0.95):
    """Ordinary least squares mem_bw = intercept + slope * rdma_bw (same units on both axes).

    Returns a modelled record: value = loss per injected byte (-slope) with its two-sided
    ``confidence`` interval (Student t, n-2 dof), ``slope``, ``intercept``, ``r2``, ``n``.
    """
    x, y = np.asarray(rdma_bw, float), np.asarray(mem_bw, float)
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"need >= 3 paired points, got {x.size} and {y.size}")
    if np.ptp(x) == 0:
        raise ValueError("all injected rates are equal: the slope is undefined")
    from scipy import stats  # here: importing it costs every analysis process about 1 s
    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.5 + confidence / 2, x.size - 2) * fit.stderr
    loss = -fit.slope
    return modelled("mem_bw_lost_per_rdma_byte", loss, "B/B", SOURCE, slope=fit.slope,
                    intercept=fit.intercept, r2=fit.rvalue ** 2, slope_stderr=fit.stderr,
                    ci_low=loss - half, ci_high=loss + half, confidence=confidence, n=int(x.size))


def crossover(all_cores, reserved_core):
    """RDMA rate where the reserved-core line meets the all-cores line (two fits above).

    With y = a + b x for each: x* = (a_all - a_res) / (b_res - b_all). Returns a modelled record
    (unit of the x axis); raises ValueError for parallel lines.
    """
    a1, b1 = all_cores["intercept"], all_cores["slope"]
    a2, b2 = reserved_core["intercept"], reserved_core["slope"]
    if np.isclose(b1, b2):
        raise ValueError("the two lines are parallel: no crossover")
    x = (a1 - a2) / (b2 - b1)
    return modelled("core_reservation_crossover", x, "rdma bw unit", SOURCE,
                    reserved_beats_throttling_above=bool(b2 > b1))


def bandwidth_change_pct(without, with_rdma):
    """Table 2.4 'Diff %': 100 (with - without) / without."""
    return 100.0 * (with_rdma - without) / without


def slowdown(t_without, t_with):
    """Table 2.5 slowdown = time with injection / time without; also core-reservation cost + 1."""
    return t_with / t_without
