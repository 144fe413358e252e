"""Render ReFrame (and Spack) configuration from an inventory: ``crosstalk config render``."""
import os
from pathlib import Path

import yaml

from crosstalk import REPO_ROOT
from crosstalk.errors import InputError
from crosstalk.site.inventory import load_system, partition_capabilities, resolve_inventory
from crosstalk.site.spackenv import render_spack_env

CONFIG_DIR = REPO_ROOT / "reframe-tests" / "config"
REFERENCES_DIR = REPO_ROOT / "reframe-tests" / "references"
DEFAULT_ENVIRONMENTS = [{"name": "gnu-openmpi", "mpi": "openmpi", "cc": "mpicc", "cxx": "mpicxx",
                         "ftn": "mpif90", "features": ["mpi", "openmp"]}]
#: Where runs land unless ``crosstalk run`` says otherwise (ReFrame renders this Jinja at load time).
RUN_DIR = '{{ getenv("CROSSTALK_RUN_DIR") or "%s/results/%s/runs/manual" }}'
STAGE_DIR = '{{ getenv("CROSSTALK_STAGE_DIR") or "%s/build/reframe/%s/stage" }}'
#: The JSON report and debug log of one attempt: the run directory, or a resume's attempts/<n>/<part>.
ATTEMPT_DIR = '{{ getenv("CROSSTALK_ATTEMPT_DIR") or getenv("CROSSTALK_RUN_DIR") or "%s" }}'
SCHEDULERS_WITH_QUEUE = {"squeue", "slurm", "pbs", "torque"}


def _env_list(mapping):
    return [[str(k), str(v)] for k, v in sorted(mapping.items())]


def _partition(system, part, environment_names):
    caps = partition_capabilities(system, part)
    features = ["mpi"] + sorted(k for k, v in caps.items() if v) + list(part.get("features", []))
    if part["scheduler"] in SCHEDULERS_WITH_QUEUE:
        features.append("batch")
    env_vars = dict(system.get("mpi_env", {}))
    env_vars.update(part.get("env_vars", {}))
    network = system.get("network", {})
    cores = part.get("cores_per_node", system["cores_per_node"])
    rendered = {
        "name": part["name"],
        "descr": part["descr"],
        "scheduler": part["scheduler"],
        "launcher": part["launcher"],
        "access": list(part.get("access", [])),
        "max_jobs": part.get("max_jobs", 4 if part["scheduler"] in SCHEDULERS_WITH_QUEUE else 1),
        "environs": list(part.get("environs", environment_names)),
        "env_vars": _env_list(env_vars),
        "processor": {"num_cpus": cores},
        "features": sorted(set(features)),
        "extras": {
            "nodes": part["nodes"],
            "cores_per_node": cores,
            "memory_gib": system["memory_gib"],
            "build_origin": part.get("build_origin", system.get("build_origin", "cmake")),
            "capabilities": caps,
            "fabric": network.get("fabric"),
            "link_rate": network.get("link_rate"),
            "rdma_devices": list(network.get("rdma_devices", [])),
            "interface": network.get("interface"),
            "topology": network.get("topology"),
            "like": network.get("like"),
            "interrupt_core": network.get("interrupt_core"),
            "launcher_options": list(part.get("launcher_options", [])),
            "rma_mt_env": {k: str(v) for k, v in system.get("rma_mt_env", {}).items()},
            **part.get("extras", {}),
        },
    }
    if part.get("time_limit"):
        rendered["time_limit"] = part["time_limit"]
    if part.get("container_platforms"):
        rendered["container_platforms"] = [{"type": t} for t in part["container_platforms"]]
    if part.get("container_mpi"):
        rendered["extras"]["container_mpi"] = {
            family: {"bind": list(spec["bind"]), "library_path": list(spec.get("library_path", []))}
            for family, spec in part["container_mpi"].items()}
    return rendered


#: ReFrame's poll rate decays to 0.1 Hz, so a finished job waits up to 10 s to be noticed; on one
#: machine (its processes or its own small Slurm) a poll costs nothing, and the serial quick suite
#: of short jobs spent about a third of its time waiting. A real cluster keeps ReFrame's defaults.
ONE_MACHINE_POLLING = {"vcluster": {"poll_rate_min": 2}, "local": {"poll_rate_min": 2}}


def render_reframe_config(system, inventory):
    """The ReFrame 4 site configuration (a dict) for one validated system description."""
    name = system["name"]
    environments = system.get("environments", DEFAULT_ENVIRONMENTS)
    env_names = [e["name"] for e in environments]
    run_dir = RUN_DIR % (REPO_ROOT, name)
    # ReFrame does not create the debug log's directory: manual runs log to build/.
    report_dir = ATTEMPT_DIR % f"{REPO_ROOT}/results/{name}/runs/manual"
    log_dir = ATTEMPT_DIR % f"{REPO_ROOT}/build/reframe/{name}"
    return {
        "systems": [{
            "name": name,
            "descr": system["description"],
            "hostnames": list(system["hostnames"]),
            "modules_system": system.get("modules_system", "nomod"),
            # Per run (crosstalk run sets it), so concurrent runs never share build or stage files.
            "stagedir": STAGE_DIR % (REPO_ROOT, name),
            "outputdir": run_dir + "/output",
            "partitions": [_partition(system, p, env_names) for p in system["partitions"]],
        }],
        "environments": [{
            "name": env["name"],
            "target_systems": [name],
            **{k: env[k] for k in ("cc", "cxx", "ftn") if k in env},
            "modules": list(env.get("modules", [])),
            "env_vars": _env_list(env.get("env_vars", {})),
            "features": list(env.get("features", [])),
            "extras": {"inventory": str(inventory), "mpi": env.get("mpi", "openmpi")},
        } for env in environments],
        "general": [{
            "target_systems": [name],
            "report_file": report_dir + "/report.json",
            "check_search_path": [str(REPO_ROOT / "reframe-tests")],
            "purge_environment": False,
            **ONE_MACHINE_POLLING.get(system.get("kind", "cluster"), {}),
        }],
        "logging": [{
            "target_systems": [name],
            "level": "debug",
            "handlers": [
                {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
                {"type": "file", "name": log_dir + "/reframe.log", "level": "debug",
                 "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                 "append": False},
            ],
            "handlers_perflog": [{
                "type": "filelog",
                "prefix": "%(check_system)s/%(check_partition)s",
                "basedir": run_dir + "/perflogs",
                "level": "info",
                "format": ("%(check_job_completion_time)s|%(check_result)s|%(check_name)s|"
                           "%(check_environ)s|%(check_perfvalues)s"),
                "format_perfvars": ("%(check_perf_var)s=%(check_perf_value)s|%(check_perf_unit)s|"
                                    "%(check_perf_ref)s|%(check_perf_lower_thres)s|"
                                    "%(check_perf_upper_thres)s|"),
                "datefmt": "%FT%T%:z",
                "append": True,
            }],
        }],
    }


def render(inventory_dir, out_dir=CONFIG_DIR):
    """Render every configuration the inventory describes; returns the files written."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(out_dir, "--output", "not a directory")
    inventory = resolve_inventory(inventory_dir)
    system = load_system(inventory)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{system['name']}.yaml"
    (REPO_ROOT / "build" / "reframe" / system["name"]).mkdir(parents=True, exist_ok=True)
    header = (f"# ReFrame configuration of system '{system['name']}', generated by\n"
              f"# `crosstalk config render` from {inventory}. Edit the inventory, not this file.\n")
    # Atomic: a ReFrame starting meanwhile reads the old file or the new one, never half of one.
    tmp = target.with_suffix(f".yaml.{os.getpid()}.tmp")
    tmp.write_text(header + yaml.safe_dump(render_reframe_config(system, inventory),
                                           sort_keys=False, width=100))
    os.replace(tmp, target)
    written = [target]
    if system["capabilities"].get("spack"):
        spack_dir = (REPO_ROOT / "spack-envs" if out_dir == CONFIG_DIR else out_dir / "spack-envs")
        written.append(render_spack_env(inventory, spack_dir / system["name"]))
    return written


def config_path(system_name):
    return CONFIG_DIR / f"{system_name}.yaml"


def _cmd_render(args):
    for inventory in args.inventory:
        for path in render(inventory, args.output):
            print(path)
    return 0


def register(subparsers):
    config = subparsers.add_parser("config", help="render ReFrame/Spack configuration from an inventory")
    sub = config.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    render_p = sub.add_parser("render", help="write reframe-tests/config/<system>.yaml")
    render_p.add_argument("--inventory", "-i", action="append", required=True,
                          help="inventory directory or name under inventories/ (repeatable)")
    render_p.add_argument("--output", "-o", type=Path, default=CONFIG_DIR,
                          help="directory for the rendered files (default: %(default)s)")
    render_p.set_defaults(func=_cmd_render)
