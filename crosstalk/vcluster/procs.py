"""Processes and tools of the virtual cluster: PID files, namespaces by inode, timed tool runs."""
import contextlib
import os
import subprocess
import time
from pathlib import Path

from crosstalk.errors import CrosstalkError

#: Seconds any one tool (ip, tc, munged, slurm daemons, sinfo, ...) may take before it is an error.
TOOL_TIMEOUT = 60


#: The namespaces a node has of its own (nsenter flags): network, host name, mounts and IPC. IPC
#: matters to MPI: UCX reaches a peer through shared memory when both share boot id and IPC
#: namespace, which would carry "inter-node" traffic at memory speed past the shaped links.
NODE_NAMESPACES = "-n -u -i -m"

def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def comm(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def read_pid(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def netns_id(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def pids_in_netns(ns_id):
    """All live processes whose network namespace is ``ns_id`` ('net:[inode]')."""
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and netns_id(entry) == ns_id and pid_alive(entry)]


def kill(pids, sig):
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in pids if pid_alive(p)]
        if not pids:
            return []
        time.sleep(0.05)
    return [p for p in pids if pid_alive(p)]


def run_tool(argv, stdin=None, check=True, timeout=TOOL_TIMEOUT):
    try:
        out = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CrosstalkError(f"vcluster: {' '.join(argv[:6])}: did not finish within {timeout} s") from None
    if check and out.returncode != 0:
        raise CrosstalkError(f"vcluster: {' '.join(argv[:6])}...: "
                             f"{(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    return out


def write_if_changed(path, text, mode=0o644):
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return False
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)
    return True
