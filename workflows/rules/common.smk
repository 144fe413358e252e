from pathlib import Path

from crosstalk.report import BENCHMARK_PAGES


def results_dir(table_path):
    """The results directory a rule works in, derived from its table's path."""
    return str(Path(table_path).parent)


def run_reports(wildcards):
    """Every run report of the selected systems (a new run re-triggers the collection)."""
    return sorted(
        str(p)
        for system in SYSTEMS
        for p in Path(RESULTS, system, "runs").glob("*/report.json")
    )


def benchmark_pages(wildcards):
    """Benchmark summaries that exist (shown at the end of the report)."""
    return [str(Path(RESULTS, rel)) for _, rel in BENCHMARK_PAGES if Path(RESULTS, rel).exists()]
