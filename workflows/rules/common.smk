from pathlib import Path

from crosstalk.report import BENCHMARK_PAGES


def results_dir(table_path):
    """The results directory a rule works in, derived from its table's path."""
    return str(Path(table_path).parent)


def run_reports(wildcards):
    """Every run report of the selected systems, the user's and the shipped examples', with the
    reports of resumed attempts (a new, changed or resumed run re-triggers the collection)."""
    return sorted(
        str(p)
        for root in filter(None, (RESULTS, EXAMPLES))
        for pattern in ("*/runs/*/report.json", "*/runs/*/attempts/*/*/report.json")
        for p in Path(root).glob(pattern)
        if not SELECTED or p.relative_to(root).parts[0] in SELECTED
    )


def benchmark_pages(wildcards):
    """Benchmark summaries that exist (shown at the end of the report)."""
    return [str(Path(RESULTS, rel)) for _, rel in BENCHMARK_PAGES if Path(RESULTS, rel).exists()]
