"""Work split over forked workers that inherit what the parent has read and imported.

A report's figures, verdicts and pages are each made by one Snakemake job; forking after the
table is read and matplotlib or the claims are imported spares each worker the start-up, and
nothing but the results is pickled."""
import multiprocessing

#: (fn, items) of the map in progress, set before the workers fork.
_TASK = None


def _call(index):
    fn, items = _TASK
    return fn(items[index])


def forked_map(fn, items, workers):
    """``fn(item)`` of every item, in the order they finish: on up to ``workers`` forked
    processes, or in this one when there is one worker or one item. ``fn`` may be a closure;
    its results must pickle."""
    global _TASK
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    _TASK = (fn, items)
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(items))) as pool:
            yield from pool.imap_unordered(_call, range(len(items)))
    finally:
        _TASK = None
