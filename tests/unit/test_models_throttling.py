"""Groves 2017 §2.2: NiMC throttling fit and core-reservation crossover (Fig 2.21b),
Tables 2.4 / 2.5."""
import numpy as np
import pytest

from crosstalk.models.papers import load_paper_table
from crosstalk.models.throttling import bandwidth_change_pct, crossover, fit_bandwidth_loss, slowdown


def test_exact_line():
    # mem = 40000 - 14 rdma (MBps): the paper's DRAM slope; no noise -> loss 14, r^2 1, zero-width CI
    x = np.array([0, 500, 1000, 2000, 3000.0])
    fit = fit_bandwidth_loss(x, 40000 - 14 * x)
    assert fit["value"] == pytest.approx(14) and fit["intercept"] == pytest.approx(40000)
    assert fit["r2"] == pytest.approx(1) and fit["ci_high"] - fit["ci_low"] == pytest.approx(0, abs=1e-9)
    assert fit["modelled"] and fit["unit"] == "B/B"


def test_ci_by_hand():
    # x = 0,1,2,3; y = 0,1,3,3: Sxx = 5, Sxy = 5.5 -> slope 1.1, intercept 1.75 - 1.65 = 0.1;
    # residuals -0.1, -0.2, 0.7, -0.4 -> SSE 0.7, s^2 = 0.35, se = sqrt(0.35/5) = 0.264575;
    # t(0.975, 2) = 4.302653 -> half width 1.138376; loss = -1.1 -> CI [-2.238376, 0.038376]
    fit = fit_bandwidth_loss([0, 1, 2, 3], [0, 1, 3, 3])
    assert fit["slope"] == pytest.approx(1.1) and fit["intercept"] == pytest.approx(0.1)
    assert fit["slope_stderr"] == pytest.approx(0.264575, abs=1e-6)
    assert fit["ci_low"] == pytest.approx(-2.238376, abs=1e-5)
    assert fit["ci_high"] == pytest.approx(0.038376, abs=1e-5)


def test_ci_coverage():
    # 400 noisy data sets around slope -22 (the paper's LLC value): the 95 % CI must cover 22 in
    # about 95 % of them (binomial sd ~1.1 %, so 91-99 % is a wide acceptance band).
    rng = np.random.default_rng(1)
    x = np.linspace(0, 3000, 12)
    hits = 0
    for _ in range(400):
        f = fit_bandwidth_loss(x, 90000 - 22 * x + rng.normal(0, 2000, x.size))
        hits += f["ci_low"] <= 22 <= f["ci_high"]
    assert 0.91 <= hits / 400 <= 0.99


def test_crossover_by_hand():
    # N cores: 40000 - 14 r; N-1 cores: 37750 - 9 r -> equal at r = 2250 / 5 = 450 MBps, the middle of
    # the paper's "400-500 MBps" (groves2017_fig2_21b_throttling.csv: 450); above it the reserved
    # core loses less per byte, so reserving beats throttling.
    x = np.array([0, 1000, 2000, 3000.0])
    cx = crossover(fit_bandwidth_loss(x, 40000 - 14 * x), fit_bandwidth_loss(x, 37750 - 9 * x))
    paper = load_paper_table("groves2017_fig2_21b_throttling").set_index("quantity")["value"]
    assert cx["value"] == pytest.approx(paper["core_reservation_crossover"]) == 450
    assert cx["reserved_beats_throttling_above"]
    with pytest.raises(ValueError):
        crossover({"intercept": 1, "slope": -2}, {"intercept": 0, "slope": -2})


def test_table_2_4_and_2_5():
    # Table 2.4: Sandy Bridge-X2-onload (36.1 - 73.4) / 73.4 = -50.8 % -> -51; every row to +-0.5
    t24 = load_paper_table("groves2017_table2_4_stream_nimc")
    assert bandwidth_change_pct(73.4, 36.1) == pytest.approx(-50.82, abs=0.01)
    for r in t24.itertuples():
        assert bandwidth_change_pct(r.triad_no_rdma_GBps, r.triad_rdma_GBps) == pytest.approx(r.diff_pct, abs=0.5)
    # Table 2.5: LAMMPS 372.04 / 177.21 = 2.0994 -> 2.10; every row to the printed precision
    for r in load_paper_table("groves2017_table2_5_apps_nimc").itertuples():
        assert slowdown(r.time_no_rdma_s, r.time_rdma_s) == pytest.approx(r.slowdown, abs=0.006)
