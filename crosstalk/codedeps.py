"""The source files a piece of crosstalk runs: a module and every crosstalk module it imports,
transitively, read from the source (imports inside functions too), never executed. The workflow
declares them as a rule's code inputs and the figure cache keys its drawings by them, so a change
to any of them redraws, and no hand-kept list can miss one."""
import ast
import hashlib
from functools import lru_cache

from crosstalk import REPO_ROOT

PACKAGE = "crosstalk"


def module_path(name):
    """The source file of crosstalk module ``name`` (a package: its ``__init__.py``), or None."""
    base = REPO_ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@lru_cache(maxsize=None)
def _imported_by(path):
    """The crosstalk modules one source file names in its import statements."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)   # submodules imported by name
    names = {n for n in found if n == PACKAGE or n.startswith(PACKAGE + ".")}
    # a module's parent packages run first (their __init__.py)
    names |= {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 1)}
    return frozenset(n for n in names if module_path(n))


def code_files(*modules):
    """Every source file ``modules`` (names; a package means all of its modules) import,
    transitively, themselves included: sorted paths."""
    todo = []
    for name in modules:
        path = module_path(name)
        if path is None:
            raise ValueError(f"no crosstalk module {name}")
        todo.append(name)
        if path.name == "__init__.py":
            todo += [f"{name}.{p.stem}" for p in sorted(path.parent.glob("*.py")) if p.stem != "__init__"]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_imported_by(module_path(name)) - seen)
    return sorted(module_path(n) for n in seen)


def files_digest(paths):
    """sha256 (hex) of repo files' names and contents: the key part that a change to any of them
    (code, specs, paper tables) alters."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
