from pathlib import Path


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
