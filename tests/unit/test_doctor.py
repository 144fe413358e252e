"""crosstalk doctor reports what the machine really has (checked against sysfs independently)."""
import glob
import os
import re
import subprocess

from xt_testing import venv_tool


def doctor(run_env, *args):
    proc = subprocess.run([venv_tool("crosstalk"), "doctor", *args], capture_output=True, text=True,
                          env=run_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def verdict(output, name):
    match = re.search(rf"^\s+{re.escape(name)}\s+(yes|no)\s", output, re.M)
    assert match, f"doctor printed no line for {name}:\n{output}"
    return match.group(1) == "yes"


def test_hardware_findings_match_sysfs(run_env):
    out = doctor(run_env)
    assert verdict(out, "RDMA devices") == bool(glob.glob("/sys/class/infiniband/*"))
    assert verdict(out, "cpufreq") == bool(glob.glob("/sys/devices/system/cpu/cpufreq/policy*")
                                          or glob.glob("/sys/devices/system/cpu/cpu0/cpufreq"))
    assert verdict(out, "energy meter") == bool(glob.glob("/sys/class/powercap/intel-rapl:*/energy_uj")
                                               or os.path.isdir("/sys/cray/pm_counters"))
    assert f"{os.cpu_count()} CPUs" in out


def test_experiment_plan_and_inventory_comparison(run_env):
    out = doctor(run_env, "--inventory", "local")
    assert "Experiments:" in out and re.search(r"^\s+stream\s+runs", out, re.M)
    assert "Inventory 'local'" in out
