"""E5 active probing for real (Casas & Bronevetsky): ImpactB idle vs under CompressionB, rho, figures.

Repeats interleave the idle and loaded jobs in time (on the virtual cluster: the shared run's
sessions, tests/shared_run.py), and medians are compared, so a burst of unrelated load on this
shared 2-core machine cannot fake or hide the effect.
What physics guarantees: probes that share cores, memory and (on the virtual cluster) shaped links
with the heaviest CompressionB configuration (every partner, 4 x 40 KiB per partner, no bubble) wait
longer than on the idle fabric, and that configuration injects more than the lightest one (one
partner, one message, 10 ms bubble). rho is MODELLED (M/G/1, Eq 1-3): it is finite, in [0, 1) by
construction when the loaded mean is above the idle minimum, and larger under the heavy load.
"""
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

import pytest
from shared_run import SESSIONS
from xt_testing import OPEN_MPI_ONLY, REPO, site_specs, venv_tool

from crosstalk.analysis.ingest import load_run
from crosstalk.models.queueing import idle_parameters, utilisation
from crosstalk.specs import load_spec

pytestmark = pytest.mark.slow

HEAVY, LIGHT = "compressionb:3-4-0", "compressionb:1-1-10000"
FIGURES = ("casas_probe_latency", "casas_slowdown_table", "casas_prediction_error")
#: jobs of each load in the one-host run: the light and heavy loads' injected rates differ 7.5x, so
#: the mean of two jobs ranks them (a third cost about 35 s)
LOCAL_REPEATS = 2
#: The one-host run's probes per block, as a site's spec: half the quick profile's. It checks that
#: modelled rho stays below 1 (Eq 3, whatever the count) and ranks CompressionB's injected rates,
#: which the probes do not touch.
LOCAL_SETTINGS = {"active-probing": {"probe_count": 100}}


def run_active_probing(env, system, loads, repeat):
    argv = [venv_tool("crosstalk"), "run", "--system", system, "-e", "active-probing", "--", *OPEN_MPI_ONLY,
            "-n", f"ActiveProbing%load=({'|'.join(loads)})%", "--repeat", str(repeat)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (run_dir,) = (Path(env["CROSSTALK_RESULTS_DIR"]) / system / "runs").iterdir()
    perf, cases = load_run(run_dir)
    assert {c["result"] for c in cases} == {"pass"}, [c["reason"] for c in cases if c["result"] != "pass"]
    assert len(cases) == len(loads) * repeat
    return run_dir, perf


def values(perf, metric, load):
    return [r["value"] for r in perf if r["metric"] == metric and json.loads(r["params"])["load"] == load]


def kept_idle_samples(run_dir):
    """Every idle-fabric ImpactB sample the run kept (each job probes the idle fabric first)."""
    found = []
    for path in run_dir.rglob("ActiveProbing_*/idle_probe.out"):
        for line in path.read_text().splitlines():
            if line.startswith("{") and '"sample"' in line:
                found.append(json.loads(line)["value"])
    return found


def check_modelled_rho(perf, loads, jobs, queued=()):
    # Each block's MODELLED rho (its job's idle probe for t_min, Var(S)) is finite and < 1 (Eq 3, as
    # long as W > t_min / 2). Its sign is that of W - t_min: >= 0 only where the probes queue (the
    # ``queued`` loads). Under no load W and t_min come from the same idle fabric, so rho sits at 0
    # either side (CI saw -0.018 once) and only the upper bound holds.
    rounds = int(load_spec("active-probing").setting("rounds", "quick"))
    for load in loads:
        assert len(values(perf, "probe_median", load)) == jobs * rounds      # a row per probe block
        for rho in values(perf, "rho", load):
            assert rho == rho and rho < 1, f"modelled rho {rho} not below 1 under {load}"
            assert load not in queued or rho >= 0, f"modelled rho {rho} below 0 under {load}"


def check_probe_physics(run_dir, perf, loads, jobs):
    check_modelled_rho(perf, loads, jobs, queued=(HEAVY,))
    # Probes wait behind the heavy load's whole messages (and, on 2 cores, its CPU time). The mean
    # (the queue model's W) is compared, not the median: the median rises only when more than half
    # the probes queue (1.5-63x its idle probe's in 14 recorded vcluster jobs, below 1 once in CI),
    # while the mean was 13-83x above in all 14: the median (the mean) of two jobs keeps that margin.
    assert statistics.median(values(perf, "probe_avg", HEAVY)) > statistics.median(values(perf, "probe_avg", "idle"))
    # The same jobs' idle-fabric probes, just before the load started, were faster.
    assert statistics.median(values(perf, "probe_avg", HEAVY)) > \
        statistics.median(values(perf, "idle_probe_avg", HEAVY))
    # With one idle baseline (every kept idle-fabric probe pooled) rho rises with the mean latency W,
    # so it must rank the heavy load above the idle fabric. (Across jobs, each job's own Var(S) is
    # dominated by this shared host's scheduling noise, so per-job rho values do not rank reliably.)
    t_min, var_s = idle_parameters(kept_idle_samples(run_dir))
    rho = {load: utilisation(statistics.median(values(perf, "probe_avg", load)), t_min, var_s) for load in loads}
    assert 0 <= rho["idle"] < rho[HEAVY] < 1, rho
    for v in values(perf, "stream_time", "idle") + values(perf, "lammps_time", "idle"):
        assert v > 0


@pytest.fixture(scope="module")
def local_run(run_env_module):
    results = tempfile.mkdtemp(prefix="active-probing-", dir=REPO / "build")
    specs = site_specs(Path(results + "-specs"), LOCAL_SETTINGS)
    env = dict(run_env_module, CROSSTALK_RESULTS_DIR=results, CROSSTALK_SPECS_DIR=str(specs))
    loads = ["idle", LIGHT, HEAVY]
    run_dir, perf = run_active_probing(env, "local", loads, repeat=LOCAL_REPEATS)
    return env, run_dir, perf, loads


@pytest.mark.machine("local")
def test_impactb_and_compressionb_run_and_model_rho_local(local_run):
    _, run_dir, perf, loads = local_run
    # One host's loopback has no link for probes to queue on: under CompressionB they ran faster
    # than idle in a CI job on a busy host (37 vs 49 us), so the latency's direction is checked on
    # the virtual cluster's shaped links only (test below); here the method runs and rho is sane.
    check_modelled_rho(perf, loads, LOCAL_REPEATS)
    # Fewer partners, one message and a 10 ms bubble inject less than all partners without a bubble.
    assert statistics.median(values(perf, "cb_injected_bw", HEAVY)) > \
        statistics.median(values(perf, "cb_injected_bw", LIGHT))


@pytest.mark.root
@pytest.mark.cluster
def test_report_draws_the_casas_figures(shared_run, shared_report):
    """The shared run's report (tests/shared_run.py): its results directory is the run's own, so the
    files below come from it."""
    proc = shared_report
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    figures = shared_run.results / "figures"        # drawn once, shown by every page
    for fig in FIGURES:
        assert (figures / f"{fig}.png").exists(), f"{fig} not drawn: " + proc.stdout[-2000:] + proc.stderr[-2000:]
        assert (figures / f"{fig}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", fig
        caption = (figures / f"{fig}.caption.txt").read_text()
        assert "MODELLED" in caption or "modelled" in caption, fig
    probe_caption = (figures / "casas_probe_latency.caption.txt").read_text()
    assert f"{HEAVY} median" in probe_caption and "idle median" in probe_caption
    # Kept outputs: the figures read the probe distributions from them.
    kept = list(shared_run.run_dir.rglob("idle_probe.out"))
    assert kept and any('"type":"sample"' in p.read_text() for p in kept)
    page = (shared_run.results / "vcluster" / "report.html").read_text()
    assert all(f"../figures/{fig}.png" in page for fig in FIGURES)


@pytest.mark.root
@pytest.mark.cluster
def test_impactb_latency_rises_under_compressionb_on_the_vcluster(shared_run):
    """The shared run's ActiveProbing cases (tests/shared_run.py: mpi partition, every session)."""
    loads = ["idle", HEAVY]
    cases = shared_run.cases_of("ActiveProbing")
    assert {c["result"] for c in cases} == {"pass"}, [c["reason"] for c in cases if c["result"] != "pass"]
    assert len(cases) == len(loads) * SESSIONS
    run_dir, perf = shared_run.run_dir, shared_run.perf_of("ActiveProbing")
    check_probe_physics(run_dir, perf, loads, SESSIONS)
    # The job shaped its links to the spec's width (1X) before the probes (logged by `crosstalk link show`).
    links = json.loads(next(run_dir.rglob("ActiveProbing_*/links.before.json")).read_text())
    assert sum(row["width"] == "1X" for row in links.values()) >= 2, links


@pytest.mark.root
@pytest.mark.cluster
def test_compressionb_configurations_in_turn_in_one_job_on_the_vcluster(shared_run):
    """CompressionBIntensity: the light and heavy configurations in turn in one job (the order
    alternating by round), one paired sample per round. The heavy one (3 partners x 4 x 40 KiB,
    no bubble) injects more than the light one (1 x 40 KiB, then 10 ms asleep) in every round: the
    light one sends at most 4 x 40 KiB per 10 ms in all (16 MB/s) while the heavy one fills the
    shaped links (7.4-7.6x the light one in the first recorded runs on both partitions). One job
    per session of the shared run (tests/shared_run.py)."""
    cases = shared_run.cases_of("CompressionBIntensity")
    perf = shared_run.perf_of("CompressionBIntensity")
    assert [c["result"] for c in cases] == ["pass"] * SESSIONS
    spec = load_spec("active-probing")
    rounds, light, heavy = (spec.setting(k, "quick") for k in ("rounds", "cb_light", "cb_heavy"))
    for session in range(SESSIONS):
        by = {m: {r["round"]: r["value"] for r in perf if r["metric"] == m and r["session"] == session}
              for m in ("cb_injected_bw_light", "cb_injected_bw_heavy")}
        assert sorted(by["cb_injected_bw_light"]) == sorted(by["cb_injected_bw_heavy"]) == list(range(rounds))
        assert all(by["cb_injected_bw_heavy"][k] > by["cb_injected_bw_light"][k] for k in range(rounds)), by
    for job_out in shared_run.run_dir.rglob("CompressionBIntensity_*/rfm_job.out"):
        out = job_out.read_text().splitlines()
        order = [(r["round"], r["config"]) for r in map(json.loads, filter(lambda line: line.startswith("{"), out))
                 if r["type"] == "result" and r["metric"] == "injected_bw" and r["stat"] == "sum"]
        assert order == [(k, c) for k in range(rounds) for c in ((light, heavy) if k % 2 == 0 else (heavy, light))]
