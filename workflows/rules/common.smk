from pathlib import Path

from crosstalk.analysis.figurecache import drawing_inputs, figure_suffixes
from crosstalk.analysis.ingest import raw_output_files, run_dirs, run_files
from crosstalk.analysis.workflow import BENCHMARK_PAGES
from crosstalk.analysis.verdictstore import judging_inputs
from crosstalk.codedeps import code_files


def results_dir(table_path, system=False):
    """The results directory of a job, derived from its table's path (the overview's
    ``<results>/table.parquet``, or a system's ``<results>/<system>/table.parquet``)."""
    path = Path(table_path).parent
    return str(path.parent if system else path)


def _run_inputs(systems):
    """Every file the collection reads of each run of ``systems`` (None: all), the user's and the
    shipped examples' (each attempt's report and log, the provenance, the run status): a new,
    changed or resumed run re-triggers the collection, and so does a run whose status or
    provenance alone changed."""
    return sorted(
        str(p)
        for root in filter(None, (RESULTS, EXAMPLES))
        for run_dir in run_dirs(Path(root), systems)
        for p in run_files(run_dir)
        if p.is_file()
    )


def run_inputs(wildcards):
    """The run files of the selected systems."""
    return _run_inputs(SELECTED or None)


def system_run_inputs(wildcards):
    """The run files of one system (its own and the examples' of the same name)."""
    return _run_inputs([wildcards.system])


def raw_outputs(wildcards):
    """The kept job outputs the figures and fits read beyond the tables (crosstalk.analysis.ingest
    RAW_OUTPUTS: E5's probe samples) in the runs of the selected systems, the examples' too."""
    return sorted(str(f) for root in filter(None, (RESULTS, EXAMPLES))
                  for run in run_dirs(Path(root), SELECTED or None) for f in raw_output_files(run))


def _repo_files(*patterns):
    root = Path(workflow.basedir).parent
    return sorted(str(p) for pattern in patterns for p in root.glob(pattern)
                  if p.is_file() and p.suffix != ".pyc")     # compiled copies come and go


def report_code(wildcards):
    """What renders the pages besides their tables: the pages module and every crosstalk module it
    imports (crosstalk.codedeps: the claims, the facts, models and figure adapters verdicts read),
    its templates, the papers' tables and the specs (their claims and titles); a change to any
    re-renders the pages."""
    return sorted({str(p) for p in code_files("crosstalk.analysis.pages")}
                  | set(_repo_files("crosstalk/analysis/templates/*", "results/papers/*.csv",
                                    "experiments/*.yaml")))


def verdict_code(wildcards):
    """What judges the claims besides the tables (crosstalk.analysis.verdictstore.judging_inputs);
    a change judges them again."""
    return [str(p) for p in judging_inputs()]


def figure_code(wildcards):
    """What draws the figures besides their rows (the figure cache's drawing_inputs); a change
    runs the figure jobs, which redraw the figures it concerns."""
    return [str(p) for p in drawing_inputs()]


#: Drawings kept between reports (crosstalk.analysis.figurecache).
FIGURE_STORE = f"{RESULTS}/.figures"


def benchmark_pages(wildcards):
    """Benchmark summaries that exist (shown at the end of the report)."""
    return [str(Path(RESULTS, rel)) for _, rel in BENCHMARK_PAGES if Path(RESULTS, rel).exists()]
