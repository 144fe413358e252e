"""Every program crosstalk starts has a time limit (an expired one is a one-line error naming it).

A static check over the package, the ReFrame tests, the workflow code and the scripts: each
``subprocess.run/call/check_call/check_output`` and each ``VCluster.exec`` passes ``timeout=``
(or forwards ``**kw`` from a caller that does); ``Popen`` appears only where the code around it
bounds the wait itself, listed below with the reason.
"""
import ast

import pytest
from xt_testing import REPO

SOURCES = [p for d in ("crosstalk", "reframe-tests", "workflows", "scripts")
           for p in sorted((REPO / d).rglob("*.py"))]
WAITING_CALLS = {"run", "call", "check_call", "check_output"}
#: (file, function) -> why its Popen is bounded.
POPEN_ALLOWED = {
    ("crosstalk/proc.py", "run"): "communicate(timeout=...), then the process group is ended",
    ("crosstalk/run/session.py", "run_reframe"): "supervise() waits; the session time limit stops it",
    ("crosstalk/vcluster/nodes.py", "popen"): "forwards to Popen for callers listed here",
    ("crosstalk/vcluster/iperf.py", "iperf_flows"): "clients communicate(timeout=...); servers "
                                                        "exit after one client, else killed in finally",
}


def _calls(path):
    """``(innermost enclosing function name, call)`` of every method-style call in ``path``."""
    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                yield function, child
            yield from walk(child, inner)
    yield from walk(ast.parse(path.read_text(), str(path)), "<module>")


def _has_timeout(call):
    return any(k.arg == "timeout" or k.arg is None for k in call.keywords)


def _rel(path):
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_every_subprocess_has_a_time_limit(path):
    unbounded = []
    for function, call in _calls(path):
        attr, owner = call.func.attr, call.func.value
        is_subprocess = isinstance(owner, ast.Name) and owner.id == "subprocess"
        if (is_subprocess and attr in WAITING_CALLS) or attr == "exec" and len(call.args) >= 2:
            if not _has_timeout(call):
                unbounded.append(f"line {call.lineno}: {ast.unparse(call.func)}(...) without timeout=")
        elif attr in ("Popen", "popen") and (is_subprocess or attr == "popen"):
            if (_rel(path), function) not in POPEN_ALLOWED and not (
                    isinstance(owner, ast.Name) and owner.id == "os"):
                unbounded.append(f"line {call.lineno}: {ast.unparse(call.func)} in {function}()")
    assert not unbounded, f"{_rel(path)}: " + "; ".join(unbounded)


def test_the_check_finds_calls():
    """The walk is not vacuous: it sees the package's subprocess calls."""
    found = [c for p in SOURCES for _, c in _calls(p) if c.func.attr in WAITING_CALLS | {"exec"}]
    assert len(found) >= 10
