"""Link control, shaping accuracy and lifecycle on private clusters (never the shared one)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from vcluster_fixtures import INVENTORY, REPO, compile_mpi, node_cpu_groups, skip_unless_root

from crosstalk.vcluster.balance import cpu_groups_available

pytestmark = [pytest.mark.root, pytest.mark.cluster]
ISO = ["--name", "vclt", "--subnet", "198.19.0.0/24"]
PY = str(Path(sys.executable).parent / "python")


def crosstalk(*args):
    return subprocess.run([PY, "-m", "crosstalk.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def node_egress_bps(vc, node):
    out = vc.exec(node, ["tc", "-j", "qdisc", "show", "dev", "eth0"], capture_output=True,
                  text=True, check=True, timeout=60)
    return next(int(q["options"]["rate"]) * 8 for q in json.loads(out.stdout) if q["kind"] == "tbf")


def pingpong_bps(vc, exe, enough, attempts=12):
    """Best of up to ``attempts`` runs, stopping once one reaches ``enough`` bit/s: other engineers'
    builds and the other pytest worker share the 2 cores and can only slow a transfer, never speed
    it past its link, so the best run estimates the link (a link shaped too slow never reaches
    ``enough``; one not shaped at all still fails the upper bound). Twelve, not six: at 1 Gbit/s a
    ping-pong needs most of a core, and in a suite run (2026-11-29) the best of six reached 0.8998
    of 4X while the other worker was busy; a quiet moment is all a run needs, and each is 0.7 s."""
    best = 0.0
    for _ in range(attempts):
        if best >= enough:
            break
        out = vc.exec("n1", ["mpirun", "-np", "2", str(exe), str(8 << 20), "5"],
                      capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout.strip().splitlines()[-1])
        assert res["hosts"] == ["n1", "n2"] and res["bytes"] == 8 << 20
        best = max(best, res["value"])
    return best


def test_pingpong_matches_configured_rate(isolated, pingpong_src):
    exe = compile_mpi(isolated, pingpong_src, "pingpong")
    measured = {}
    for width, configured in (("4X", 1e9), ("1X", 250e6)):
        with isolated.link_override({"n1": width, "n2": width}):
            assert isolated.link_state()["n2"]["tc_rate_bps"] == configured
            measured[width] = pingpong_bps(isolated, exe, enough=0.95 * configured)
        print(f"{width}: {measured[width] / 1e6:.1f} Mbit/s of {configured / 1e6:.0f}")
        assert 0.90 <= measured[width] / configured <= 1.10, measured
    assert abs(measured["4X"] / measured["1X"] / 4 - 1) <= 0.10, measured


def test_link_override_restores_on_error(isolated):
    with pytest.raises(RuntimeError):
        with isolated.link_override({"n3": "1X", "n4": "300mbit"}):
            state = isolated.link_state()
            assert (state["n3"]["width"], state["n3"]["tc_rate_bps"]) == ("1X", 250_000_000)
            assert state["n4"]["tc_rate_bps"] == 300_000_000
            assert node_egress_bps(isolated, "n4") == 300_000_000
            raise RuntimeError("experiment failed")
    state = isolated.link_state()
    for n in isolated.nodes:
        assert (state[n]["width"], state[n]["tc_rate_bps"]) == ("4X", 1_000_000_000)
        assert node_egress_bps(isolated, n) == 1_000_000_000


def test_cli_link_set_show_restore(isolated):
    out = crosstalk("link", "set", "n2", "--width", "2X", *ISO)
    assert out.returncode == 0, out.stderr
    out = crosstalk("link", "set", "n3", "--rate", "123mbit", *ISO)
    assert out.returncode == 0, out.stderr
    shown = json.loads(crosstalk("link", "show", "--json", *ISO).stdout)
    assert (shown["n2"]["width"], shown["n2"]["tc_rate_bps"]) == ("2X", 500_000_000)
    assert (shown["n3"]["width"], shown["n3"]["tc_rate_bps"]) == (None, 123_000_000)
    assert node_egress_bps(isolated, "n2") == 500_000_000
    assert crosstalk("link", "restore", *ISO).returncode == 0
    shown = json.loads(crosstalk("link", "show", "--json", *ISO).stdout)
    assert {d["tc_rate_bps"] for d in shown.values()} == {1_000_000_000}


@pytest.mark.parametrize("args, needle", [
    (["link", "set", "n2", "--width", "3X"], "--width"),
    (["link", "set", "n2", "--rate", "fast"], "--rate"),
    (["link", "set", "n2"], "--width"),
    (["link", "set", "n9", "--width", "1X"], "n9"),
    (["vcluster", "up", "--nodes", "40"], "--nodes"),
    (["vcluster", "up", "--subnet", "198.20.0.0/24"], "subnet"),
    (["vcluster", "exec", "n1"], "no command"),
])
def test_bad_cli_arguments_one_line(isolated, args, needle):
    out = crosstalk(*args, *ISO) if args[0] == "link" else crosstalk(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], out.stderr


def _job_field(vc, jobid, field):
    out = vc.exec("n1", ["scontrol", "show", "job", jobid], capture_output=True, text=True,
                  timeout=60)
    return next((w.split("=", 1)[1] for w in out.stdout.split() if w.startswith(field + "=")), "")


def test_killed_slurmd_fails_job_and_up_repairs(isolated):
    out_file = isolated.shared_dir / "killed.out"
    sub = isolated.exec("n1", ["sbatch", "-N4", "-o", str(out_file), "--parsable",
                               "--wrap", "srun sleep 120"], capture_output=True, text=True,
                         timeout=60)
    assert sub.returncode == 0, sub.stderr
    jobid = sub.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 30
    while _job_field(isolated, jobid, "JobState") != "RUNNING":
        assert time.monotonic() < deadline, "job never started"
        time.sleep(0.2)
    time.sleep(1)                                   # let the step start everywhere
    os.kill(isolated.status()["nodes"]["n3"]["slurmd"], signal.SIGKILL)
    deadline = time.monotonic() + 90
    while _job_field(isolated, jobid, "JobState") in ("RUNNING", "COMPLETING"):
        assert time.monotonic() < deadline, "job kept running after its node lost slurmd"
        time.sleep(0.5)
    assert _job_field(isolated, jobid, "JobState") == "NODE_FAIL"
    assert "Node failure on n3" in out_file.read_text()
    assert isolated.sinfo()["n3"].startswith("down")
    assert not isolated.is_up()

    assert "slurmd n3" in isolated.up()
    assert isolated.is_up() and set(isolated.sinfo().values()) == {"idle"}
    out = isolated.exec("n1", ["srun", "-N4", "hostname"], capture_output=True, text=True,
                        timeout=60)
    assert sorted(out.stdout.split()) == isolated.nodes, out.stderr


def test_each_node_is_one_cpu_group_whatever_the_launcher(isolated):
    """Nodes share the host's cores as nodes: srun's and mpirun's ranks alike run in their node's
    cgroup (without it the kernel shared CPU per session, so the launchers measured differently)."""
    if not cpu_groups_available():
        pytest.skip("no writable cgroup CPU controller here: the nodes share CPU per process")
    base = f"/crosstalk-{isolated.name}/"
    for launch in (["srun", "-N4"], ["mpirun", "-np", "4"]):
        groups, out = node_cpu_groups(isolated, launch)
        assert groups == [base + n for n in isolated.nodes], (launch, out.stdout, out.stderr[-500:])


def test_lost_anchor_is_rebuilt_by_up(isolated):
    os.kill(isolated.anchor_pid("n4"), signal.SIGKILL)
    time.sleep(0.2)
    assert not isolated.is_up()
    assert "node n4" in isolated.up()
    ping = isolated.exec("n1", ["ping", "-c1", "-W2", isolated.addresses["n4"]],
                         capture_output=True, timeout=60)
    assert ping.returncode == 0
    out = isolated.exec("n1", ["srun", "-N4", "hostname"], capture_output=True, text=True,
                        timeout=60)
    assert sorted(out.stdout.split()) == isolated.nodes, out.stderr
    assert isolated.link_state()["n4"]["tc_rate_bps"] == 1_000_000_000


def _root_snapshot():
    """What the cluster could leak into the root namespace. Filtered, so that unrelated
    activity of other users of this machine does not make the comparison fail."""
    run = lambda *a: subprocess.run(a, capture_output=True, text=True).stdout  # noqa: E731
    mounts = [ln.split(" - ")[0].split(None, 5)[4] for ln in
              Path("/proc/self/mountinfo").read_text().splitlines()]
    return {"links": sorted(ln.split(":")[1].strip() for ln in run("ip", "-o", "link").splitlines()),
            "tbf": [ln for ln in run("tc", "qdisc", "show").splitlines() if "tbf" in ln],
            "netns": run("ip", "netns", "list"),
            "mounts": sorted(m for m in mounts
                             if m in ("/tmp", "/etc/hosts") or m.startswith("/run/crosstalk"))}


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_down_leaves_nothing():
    skip_unless_root()
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(INVENTORY, name="vcltd", subnet="198.19.1.0/24", nodes=2,
                                 injection_cap="300mbit")
    before = _root_snapshot()
    vc.up()
    # the injection cap limits node egress only; the switch port keeps the link rate
    assert node_egress_bps(vc, "n2") == 300_000_000
    assert vc.link_state()["n2"]["tc_rate_bps"] == 1_000_000_000
    # a job step and a stray process still running at teardown
    job = vc.popen("n1", ["srun", "-N2", "sleep", "300"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    vc.exec("n2", ["setsid", "-f", "sleep", "301"], check=True, timeout=60)
    time.sleep(1.5)
    st = vc.status()
    pids = [*st["switches"].values(), st["munged"], st["slurmctld"]] + [
        d[k] for d in st["nodes"].values() for k in ("anchor", "slurmd")]
    assert all(pids) and list(st["switches"]) == ["sw"], st
    netns = {os.readlink(f"/proc/{d['anchor']}/ns/net") for d in st["nodes"].values()}
    netns.add(os.readlink(f"/proc/{st['switches']['sw']}/ns/net"))

    assert vc.down() is True
    job.wait(timeout=30)
    assert not [p for p in pids if _alive(p)]
    left = [p for p in os.listdir("/proc") if p.isdigit() and _alive(p)
            and _readlink(f"/proc/{p}/ns/net") in netns]
    assert left == [], "processes left in cluster namespaces"
    assert not vc.state.exists()
    assert _root_snapshot() == before
    assert vc.down() is False      # a second down is a no-op


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def test_checkout_under_tmp_is_shared_but_tmp_stays_private(tmp_path):
    """A clone under /tmp runs: its directory is bind-mounted into every node's private /tmp
    (VCluster.shared_paths holds the repository when it lives under /tmp)."""
    skip_unless_root()
    from crosstalk.vcluster import VCluster
    vc = VCluster.from_inventory(INVENTORY, name="vcltp", subnet="198.19.3.0/24", nodes=2)
    checkout = tmp_path / "x" / "crosstalk"
    checkout.mkdir(parents=True)
    (checkout / "from-host").write_text("seen\n")
    (tmp_path / "beside").write_text("private\n")
    vc.shared_paths = [str(checkout)]
    assert vc.visible_on_nodes(checkout / "results") and not vc.visible_on_nodes(tmp_path)
    try:
        vc.up()
        for node in vc.nodes:
            out = vc.exec(node, ["cat", str(checkout / "from-host")], capture_output=True,
                          text=True, timeout=30)
            assert out.stdout == "seen\n", out.stderr
            vc.exec(node, ["sh", "-c", f"echo {node} > {checkout}/from-{node}"], check=True,
                    timeout=30)
            assert (checkout / f"from-{node}").read_text() == f"{node}\n"
            # the rest of the host's /tmp is not the node's
            hidden = vc.exec(node, ["test", "-e", str(tmp_path / "beside")], timeout=30)
            assert hidden.returncode != 0
        # The clone deleted and made again at the same path: the nodes' binds still show the
        # deleted directory until up() notices and rebuilds them.
        shutil.rmtree(checkout)
        checkout.mkdir()
        (checkout / "from-host").write_text("seen again\n")
        assert vc.up() != [] and vc._stale_shared_paths() == []
        for node in vc.nodes:
            out = vc.exec(node, ["cat", str(checkout / "from-host")], capture_output=True,
                          text=True, timeout=30)
            assert out.stdout == "seen again\n", out.stderr
    finally:
        vc.down()
