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
