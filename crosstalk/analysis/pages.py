"""Every page of a report in one process: the overview and one page per system.

The claims are judged once, on the overview's rows (the workflow's verdicts job): a platform's
verdicts depend on its own rows alone (``crosstalk.claims.judge``), so a system's page shows
those of its platforms. The pages are written by forked workers, one per core the job has.
"""
from dataclasses import dataclass
from pathlib import Path

from crosstalk.analysis.report import benchmark_sections, page_template, write_report
from crosstalk.forked import forked_map
from crosstalk.specs import all_specs


@dataclass(frozen=True)
class Page:
    """One page: where it goes, the systems it shows (empty: every system of the rows), the
    files its runs' collection could not read, and on a system's page the overview's path."""
    out: Path
    systems: tuple = ()
    errors: tuple = ()
    overview: Path = None


def rows_of(table, systems):
    return table[table.system.isin(systems)] if systems else table


def verdicts_of(verdicts, perf, cases):
    """The verdicts of the platforms that have rows in ``perf`` or ``cases``."""
    platforms = set(perf.platform) | set(cases.platform)
    return [v for v in verdicts if v["platform"] in platforms]


def write_pages(perf, cases, verdicts, pages, figures_dir, results_dir, captions, examples_dir=None,
                workers=1, progress=None, svg=False):
    """Write every page of ``pages`` from the overview's rows and their ``verdicts``; returns
    their paths. ``svg``: the figures were drawn as SVG too (each links its SVG)."""
    sections = benchmark_sections(results_dir)
    all_specs(), page_template()     # read and compiled once, before the workers fork

    def write(page):
        page_perf, page_cases = rows_of(perf, page.systems), rows_of(cases, page.systems)
        write_report(page_perf, page_cases, list(page.errors), list(page.systems), figures_dir, page.out,
                     results_dir, verdicts_of(verdicts, page_perf, page_cases), captions=captions,
                     extra_sections=sections, examples_dir=examples_dir, overview=page.overview, svg=svg)
        return str(page.out)

    written = []
    for out in forked_map(write, pages, workers):
        written.append(out)
        if progress:
            progress(out)
    return written
