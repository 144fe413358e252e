"""Snakemake script: write the HTML report page."""
from pathlib import Path

import pandas as pd

from crosstalk.analysis.report import benchmark_sections, write_report

sm = snakemake  # noqa: F821
perf = pd.read_parquet(sm.input.perf)
cases = pd.read_parquet(sm.input.cases)
errors = [ln.strip() for ln in Path(sm.input.errors).read_text().splitlines() if ln.strip()]
systems = list(sm.params.systems)
if systems:
    perf, cases = perf[perf.system.isin(systems)], cases[cases.system.isin(systems)]
captions = {Path(p).name.removesuffix(".caption.txt"): Path(p).read_text().strip() for p in sm.input.captions}
write_report(perf, cases, errors, systems, sm.params.figures_dir, sm.output.html, sm.params.results,
             captions=captions, extra_sections=benchmark_sections(sm.params.results),
             examples_dir=sm.params.examples, overview=sm.params.get("overview"))
with open(sm.log[0], "w") as log:
    print(f"wrote {sm.output.html}", file=log)
