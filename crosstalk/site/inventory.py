"""Read a site's Ansible inventory: the one place a system is described.

Variables are resolved by Ansible itself (``ansible-inventory --list --export``), so group
inheritance, ``group_vars/all/*.yml`` splitting and vaults work as a site expects. Before that, every
YAML file is parsed here so that a syntax error names its file and line, and the system description
is validated against ``schemas/system.schema.json`` so that a wrong key names file and field.
"""
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import yaml

from crosstalk import CACHE_DIR, REPO_ROOT, userfiles
from crosstalk.errors import InputError
from crosstalk.proc import run
from crosstalk.validation import validate

SYSTEM_VAR = "crosstalk_system"
SCHEMA_PATH = Path(__file__).parent / "schemas" / "system.schema.json"
INVENTORIES = REPO_ROOT / "inventories"
EXPORT_CACHE = CACHE_DIR / "inventories"
HOSTS_FILES = ("hosts.yml", "hosts.yaml")
#: ansible-inventory's time limit (seconds); it only reads YAML files.
ANSIBLE_TIMEOUT = 60
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_UNSAFE = re.compile(r"[;|&$`<>*?!'\"\\\s]")
#: A link rate in tc notation (the schema's pattern): the number's part.
_RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)[kmg]?bit$")


def _known():
    return ", ".join(sorted(p.name for p in INVENTORIES.iterdir() if p.is_dir()))


def resolve_inventory(name_or_path):
    """The inventory directory meant by ``name_or_path``: a name (``local``: a directory under
    inventories/) or, if it contains ``/``, a path to an existing inventory directory (one with
    ``hosts.yml`` and ``group_vars/``). Anything else is an InputError before Ansible sees it.
    A ``Path`` (from code, not typed by a user) is taken as a path."""
    text, typed = str(name_or_path), not isinstance(name_or_path, Path)
    if typed and _UNSAFE.search(text):
        raise InputError(repr(text), "inventory", "shell metacharacters or whitespace are not "
                         "allowed in an inventory name or path")
    if typed and "/" not in text:
        if not _NAME.match(text) or ".." in text:
            raise InputError(repr(text), "inventory", f"not an inventory name (known: {_known()})")
        path = INVENTORIES / text
        if not path.is_dir():
            raise InputError(text, "inventory", f"no such inventory in {INVENTORIES} "
                             f"(known: {_known()}; give a path with '/' for one elsewhere)")
    else:
        path = Path(text)
        if not path.is_dir():
            raise InputError(text, "inventory", "no such directory" if not path.exists()
                             else "not a directory (give the inventory directory)")
    path = path.resolve()
    if not any((path / f).is_file() for f in HOSTS_FILES) or not (path / "group_vars").is_dir():
        raise InputError(path, "inventory", "not an inventory directory (needs hosts.yml "
                         "and group_vars/, like inventories/local)")
    return path


def _inventory_files(inventory):
    """Every file of the inventory (a file inventory: itself); FIFOs and the like too, refused when read."""
    return [inventory] if inventory.is_file() else sorted(p for p in inventory.rglob("*") if not p.is_dir())


def _yaml_files(inventory):
    if inventory.is_file():
        return [inventory]
    return [p for p in _inventory_files(inventory) if p.suffix in (".yml", ".yaml")]


class _AnsibleYamlLoader(yaml.SafeLoader):
    """YAML as Ansible reads it: a ``!vault`` value is an encrypted string, not an error."""


_AnsibleYamlLoader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))


def _check_yaml_syntax(inventory):
    """Every YAML file parses (here, bounded: ansible-inventory's own parser is not)."""
    for path in _yaml_files(inventory):
        userfiles.load_yaml(path, "inventory", loader=_AnsibleYamlLoader)   # a SafeLoader: no object tags


def _ansible_inventory_cmd():
    exe = Path(sys.executable).with_name("ansible-inventory")
    return str(exe) if exe.exists() else (shutil.which("ansible-inventory") or "ansible-inventory")


def _export_key(inventory):
    """What an export depends on: every file Ansible may read in the inventory (names, modes,
    contents; a stray non-YAML file fails the export) and the ansible-inventory that reads them;
    None for an inventory holding a vault (its decrypted values never reach the disk)."""
    tool = _ansible_inventory_cmd()
    digest = hashlib.sha256(f"{tool}\0{os.stat(tool).st_mtime_ns if os.path.exists(tool) else ''}".encode())
    for path in _inventory_files(inventory):
        content = userfiles.read_bytes(path, "inventory")
        if b"$ANSIBLE_VAULT" in content:
            return None
        name = path.name if path == inventory else str(path.relative_to(inventory))
        digest.update(f"\0{name}\0{path.stat().st_mode}\0".encode() + content)
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _export(inventory):
    """The inventory as ansible-inventory resolves it, kept in EXPORT_CACHE by content: a report
    reads every shipped inventory, and each ansible-inventory takes 0.4 s."""
    key = _export_key(inventory)
    if key is None:
        return _export_with_ansible(inventory)
    cached = EXPORT_CACHE / f"{key}.json"
    try:
        return json.loads(cached.read_text())
    except (OSError, ValueError):
        pass
    exported = _export_with_ansible(inventory)
    try:
        EXPORT_CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=EXPORT_CACHE, suffix=".tmp", delete=False) as tmp:
            json.dump(exported, tmp)
        os.replace(tmp.name, cached)        # whole or absent, whoever else writes it
    except OSError:
        pass                                # a read-only tree: resolve again next time
    return exported


def _export_with_ansible(inventory):
    _check_yaml_syntax(inventory)
    # Only the yaml plugin, so no file is ever run as an inventory script (or loads another
    # plugin), and a file it cannot parse is an error rather than a warning.
    env = dict(os.environ, ANSIBLE_INVENTORY_ENABLED="yaml",
               ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="true")
    # Reading an inventory leaves nothing behind: Ansible's home and scratch directory (otherwise
    # ~/.ansible/tmp) are temporary unless the user chose them.
    with tempfile.TemporaryDirectory(prefix="crosstalk-ansible-") as scratch:
        env.setdefault("ANSIBLE_HOME", scratch)
        env.setdefault("ANSIBLE_LOCAL_TEMP", os.path.join(scratch, "tmp"))
        proc = run([_ansible_inventory_cmd(), "-i", str(inventory), "--list", "--export"],
                   ANSIBLE_TIMEOUT, f"ansible-inventory -i {inventory}", capture_output=True, text=True,
                   env=env)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        first = next((ln for ln in lines if "ERROR" in ln), lines[0] if lines else "failed")
        raise InputError(inventory, None, f"ansible-inventory: {first}")
    return json.loads(proc.stdout)


def load_vars(inventory_dir):
    """Variables of the ``all`` group, as Ansible resolves them."""
    inventory = resolve_inventory(inventory_dir)
    return dict(_export(inventory).get("all", {}).get("vars", {}))


def defining_file(inventory, var):
    """The group_vars file that defines ``var`` (for error messages), else the inventory."""
    for path in _yaml_files(inventory):
        try:
            data = userfiles.load_yaml(path, "inventory", loader=_AnsibleYamlLoader)
        except InputError:
            continue
        if isinstance(data, dict) and var in data:
            return path
    return inventory


def load_variable(inventory_dir, var, schema, where):
    """``(inventory, value)``: the inventory's variable ``var``, validated against ``schema``;
    missing, the error says to describe it ``where``."""
    inventory = resolve_inventory(inventory_dir)
    variables = load_vars(inventory)
    if var not in variables:
        raise InputError(inventory, var, f"missing: describe {where}")
    validate(variables[var], schema, defining_file(inventory, var), root=var)
    return inventory, variables[var]


def load_system(inventory_dir):
    """The validated ``crosstalk_system`` description of an inventory."""
    inventory, system = load_variable(inventory_dir, SYSTEM_VAR, SCHEMA_PATH, "the system in group_vars/all/")
    rate = (system.get("network") or {}).get("link_rate")
    if rate is not None and not float(_RATE.match(rate).group(1)) > 0:
        raise InputError(defining_file(inventory, SYSTEM_VAR), f"{SYSTEM_VAR}.network.link_rate",
                         f"{rate!r}: a link rate must be above zero (e.g. 100mbit, 1gbit, 2.5gbit)")
    irq = (system.get("network") or {}).get("interrupt_core")
    if irq is not None and irq["core"] not in irq["socket_cores"]:
        raise InputError(defining_file(inventory, SYSTEM_VAR), f"{SYSTEM_VAR}.network.interrupt_core",
                         f"core {irq['core']} is not among its socket_cores {irq['socket_cores']}")
    names = [p["name"] for p in system["partitions"]]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(defining_file(inventory, SYSTEM_VAR), f"{SYSTEM_VAR}.partitions",
                         f"duplicate partition name {duplicates[0]!r}")
    from crosstalk.site.systemkind import complete
    return complete(system, inventory, defining_file(inventory, SYSTEM_VAR))


def partition_capabilities(system, partition):
    """System capability flags with the partition's overrides applied."""
    caps = dict(system["capabilities"])
    caps.update(partition.get("capabilities", {}))
    return caps
