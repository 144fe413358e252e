"""iperf3 flows between nodes of a virtual cluster: what the link benchmarks and the balance
calibration measure a link's real rate with."""
import json
import subprocess
import time

from crosstalk.errors import CrosstalkError


def iperf_flows(vc, pairs, seconds=None, nbytes=None):
    """Concurrent TCP flows, one per ``(src, dst)`` pair (distinct destinations), for ``seconds`` or
    ``nbytes`` each; bit/s each receiver got."""
    length = ["-n", str(nbytes)] if nbytes else ["-t", str(seconds), "-O", "1"]
    limit = (seconds or 60) + 30
    servers = [vc.popen(dst, ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        cwd="/") for _, dst in pairs]
    clients = []
    try:
        for _, dst in pairs:
            for _ in range(50):           # wait for the server to listen
                probe = vc.exec(dst, ["sh", "-c", "ss -ltn | grep -q ':5201 '"], timeout=10, cwd="/")
                if probe.returncode == 0:
                    break
                time.sleep(0.1)
        clients = [vc.popen(src, ["iperf3", "-c", vc.addresses[dst], *length, "-J"], cwd="/",
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                   for src, dst in pairs]
        rates = []
        for client in clients:
            out, _ = client.communicate(timeout=limit)
            if client.returncode != 0:
                raise CrosstalkError(f"vcluster bench: iperf3 failed: {out[-300:]}")
            rates.append(json.loads(out)["end"]["sum_received"]["bits_per_second"])
        return rates
    finally:
        for proc in servers + clients:   # iperf3 -s -1 exits after one client, unless it failed
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
