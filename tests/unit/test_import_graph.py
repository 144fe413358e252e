"""The package's import graph has no cycle, counting imports inside functions too (an import
moved into a function does not make a cycle go away, it hides it until the first call). grimp
reads the graph statically from the source."""
import grimp


def import_graph():
    graph = grimp.build_graph("crosstalk", include_external_packages=False)
    return graph, {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def cycles(edges):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycles_finds_a_cycle_and_only_it():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    graph, edges = import_graph()
    found = cycles(edges)
    where = [
        f"{' -> '.join(c)}: " + "; ".join(
            f"{m} line {d['line_number']}: {d['line_contents']}"
            for m in c for w in sorted(edges[m] & set(c))
            for d in graph.get_import_details(importer=m, imported=w))
        for c in found]
    assert not found, "import cycles:\n" + "\n".join(where)


#: What a site is (its inventory, kind, probes, the virtual cluster that builds it, paper machines'
#: models, the tools' output parsers) must not depend on how runs are made or read.
SITE_SIDE = ("crosstalk.site", "crosstalk.vcluster", "crosstalk.models", "crosstalk.parsers")
READING_AND_RUNNING = ("crosstalk.run", "crosstalk.analysis", "crosstalk.claims", "crosstalk.figures")
#: A run's orchestration is the top: only the command line (by name) and the run layer reach it;
#: the analysis reads a run's status and takes its locks (crosstalk.run.runstatus, .uselock).
ORCHESTRATION = ("runner", "session", "supervise", "secondstage", "resume", "leftovers")


def _inside(module, packages):
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_site_side_does_not_import_runs_or_analysis():
    _, edges = import_graph()
    wrong = sorted((m, w) for m, targets in edges.items() if _inside(m, SITE_SIDE)
                   for w in targets if _inside(w, READING_AND_RUNNING))
    assert not wrong, wrong


def test_only_the_run_layer_imports_the_orchestration():
    _, edges = import_graph()
    top = tuple(f"crosstalk.run.{name}" for name in ORCHESTRATION)
    wrong = sorted((m, w) for m, targets in edges.items() if not _inside(m, ("crosstalk.run",))
                   for w in targets if _inside(w, top))
    assert not wrong, wrong
