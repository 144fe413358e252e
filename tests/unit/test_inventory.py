"""Inventories: validation with one-line errors naming file and field, and ReFrame config rendering."""
import shutil
import subprocess

import pytest
import yaml
from xt_testing import REPO, venv_tool

from crosstalk.errors import InputError
from crosstalk.site.configrender import render
from crosstalk.site.inventory import load_system

SHIPPED = ["local", "example-slurm"]


@pytest.fixture
def inventory_copy(tmp_path):
    def make(name="local"):
        dest = tmp_path / name
        shutil.copytree(REPO / "inventories" / name, dest)
        return dest
    return make


def edit_system(inventory, change):
    path = inventory / "group_vars" / "all" / "crosstalk.yml"
    data = yaml.safe_load(path.read_text())
    change(data["crosstalk_system"])
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_inventories_validate(name):
    system = load_system(REPO / "inventories" / name)
    assert system["name"] == name
    assert system["partitions"]


@pytest.mark.parametrize("name", SHIPPED)
def test_rendered_config_is_accepted_by_reframe(name, tmp_path):
    config = render(REPO / "inventories" / name, tmp_path)[0]   # [ReFrame config, Spack env?]
    proc = subprocess.run([venv_tool("reframe"), "-C", str(config), "--system", name,
                           "--show-config", "systems/0/partitions"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    partitions = yaml.safe_load(proc.stdout)
    system = load_system(REPO / "inventories" / name)
    assert [p["name"] for p in partitions] == [p["name"] for p in system["partitions"]]
    for rendered, declared in zip(partitions, system["partitions"]):
        assert rendered["scheduler"] == declared["scheduler"]
        assert rendered["launcher"] == declared["launcher"]
        assert rendered["extras"]["nodes"] == declared["nodes"]
        caps = {k for k, v in system["capabilities"].items() if v}
        assert caps <= set(rendered["features"])


def test_example_slurm_renders_container_platform(tmp_path):
    (config,) = render(REPO / "inventories" / "example-slurm", tmp_path)[:1]
    data = yaml.safe_load(config.read_text())
    debug = [p for p in data["systems"][0]["partitions"] if p["name"] == "debug"][0]
    assert debug["container_platforms"] == [{"type": "Apptainer"}]
    assert debug["extras"]["build_origin"] == "container"


def test_the_interrupt_core_reaches_every_partition(inventory_copy, tmp_path):
    """network.interrupt_core (optional) is each partition's extras.interrupt_core, where the
    core-mapping test reads it."""
    inv = inventory_copy()
    irq = {"core": 0, "socket_cores": [0, 2]}
    edit_system(inv, lambda s: s["network"].update(interrupt_core=irq))
    (config,) = render(inv, tmp_path)[:1]
    partitions = yaml.safe_load(config.read_text())["systems"][0]["partitions"]
    assert partitions and all(p["extras"]["interrupt_core"] == irq for p in partitions)
    (plain,) = render(REPO / "inventories" / "local", tmp_path / "plain")[:1]
    assert all(p["extras"]["interrupt_core"] is None
               for p in yaml.safe_load(plain.read_text())["systems"][0]["partitions"])


def test_an_interrupt_core_off_its_socket_is_refused(inventory_copy):
    inv = inventory_copy()
    edit_system(inv, lambda s: s["network"].update(interrupt_core={"core": 3, "socket_cores": [0, 2]}))
    with pytest.raises(InputError, match=r"network\.interrupt_core: core 3 is not among its socket_cores"):
        load_system(inv)


def test_missing_key_names_file_and_field(inventory_copy):
    inv = inventory_copy()
    path = edit_system(inv, lambda s: s.pop("cores_per_node"))
    with pytest.raises(InputError) as err:
        load_system(inv)
    message = str(err.value)
    assert str(path) in message and "cores_per_node" in message
    assert "\n" not in message


def test_wrong_type_names_nested_field(inventory_copy):
    inv = inventory_copy()
    edit_system(inv, lambda s: s["partitions"][0].update(scheduler="lsf"))
    with pytest.raises(InputError, match=r"crosstalk\.yml: crosstalk_system\.partitions\[0\]\.scheduler: 'lsf'"):
        load_system(inv)


def test_unknown_key_is_rejected(inventory_copy):
    inv = inventory_copy()
    edit_system(inv, lambda s: s["capabilities"].update(rdmaa=True))
    with pytest.raises(InputError, match=r"crosstalk_system\.capabilities: .*rdmaa"):
        load_system(inv)


def test_yaml_syntax_error_names_file_and_line(inventory_copy):
    inv = inventory_copy()
    path = inv / "group_vars" / "all" / "crosstalk.yml"
    path.write_text("crosstalk_system:\n  name: x\n   bad: [\n")
    with pytest.raises(InputError, match=rf"{path}: line \d+: invalid YAML"):
        load_system(inv)


def test_duplicate_partition(inventory_copy):
    inv = inventory_copy()
    edit_system(inv, lambda s: s["partitions"].append(dict(s["partitions"][0])))
    with pytest.raises(InputError, match="duplicate partition name 'default'"):
        load_system(inv)


def test_cli_prints_one_line_and_exits_2(inventory_copy, run_env):
    inv = inventory_copy()
    edit_system(inv, lambda s: s.update(memory_gib=-1))
    proc = subprocess.run([venv_tool("crosstalk"), "config", "render", "-i", str(inv), "-o", str(inv)],
                          capture_output=True, text=True, env=run_env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crosstalk: error: ")
    assert "memory_gib" in lines[0]


def test_unknown_inventory_lists_known(run_env):
    proc = subprocess.run([venv_tool("crosstalk"), "config", "render", "-i", "no-such-site"],
                          capture_output=True, text=True, env=run_env)
    assert proc.returncode == 2
    assert "known:" in proc.stderr and "local" in proc.stderr


def test_an_inventory_is_resolved_again_only_when_its_files_change(inventory_copy, tmp_path, monkeypatch):
    from crosstalk.site import inventory as inv
    monkeypatch.setattr(inv, "EXPORT_CACHE", tmp_path / "cache")
    resolved = []
    real = inv._export_with_ansible
    monkeypatch.setattr(inv, "_export_with_ansible", lambda path: resolved.append(path) or real(path))
    local = inventory_copy("local")

    def description():
        inv._export.cache_clear()        # a new process: only the disk cache is left
        return inv.load_vars(local)["crosstalk_system"]["description"]

    first = description()
    assert description() == first and len(resolved) == 1     # the second read came from the cache
    edit_system(local, lambda system: system.update(description="changed"))
    assert description() == "changed" and len(resolved) == 2


def test_a_vaulted_inventory_is_never_kept_on_disk(inventory_copy, tmp_path, monkeypatch):
    from crosstalk.site import inventory as inv
    monkeypatch.setattr(inv, "EXPORT_CACHE", tmp_path / "cache")
    local = inventory_copy("local")
    (local / "group_vars" / "all" / "secret.yml").write_text(
        "site_token: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\n")
    inv._export.cache_clear()
    inv.load_vars(local)
    assert not (tmp_path / "cache").exists()
