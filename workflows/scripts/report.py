"""Snakemake script: write the overview page and every system's page."""
import time
from pathlib import Path

import pandas as pd

from crosstalk.analysis.pages import Page, rows_of, write_pages
from crosstalk.claims.verdictfile import read

sm = snakemake  # noqa: F821
started = time.monotonic()


def errors_in(path):
    # written by the collection; read leniently: a damaged byte shows as one, it does not stop the pages
    return tuple(ln.strip() for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip())


selected = tuple(sm.params.systems)
perf, cases = rows_of(pd.read_parquet(sm.input.perf), selected), rows_of(pd.read_parquet(sm.input.cases), selected)
pages = [Page(Path(sm.output.html), selected, errors_in(sm.input.errors))]
pages += [Page(Path(out), (system,), errors_in(errors), overview=Path(sm.output.html))
          for system, out, errors in zip(sm.params.page_systems, sm.output.pages, sm.input.system_errors)]
captions = {Path(p).name.removesuffix(".caption.txt"): Path(p).read_text(errors="replace").strip()
            for p in sm.input.captions}
with open(sm.log[0], "w") as log:
    write_pages(perf, cases, read(Path(sm.input.verdicts)), pages, sm.params.figures_dir, sm.params.results, captions,
                examples_dir=sm.params.examples, workers=sm.threads, svg=sm.params.svg,
                progress=lambda out: print(f"wrote {out}", file=log, flush=True))
    print(f"{len(pages)} pages in {time.monotonic() - started:.1f} s", file=log)
