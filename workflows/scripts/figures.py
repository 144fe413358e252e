"""Snakemake script: draw every figure of the report, redrawing only changed ones."""
import time

import pandas as pd

from crosstalk.analysis.figurecache import draw_figures

started = time.monotonic()
perf = pd.read_parquet(snakemake.input.perf)  # noqa: F821
with open(snakemake.log[0], "w") as log:  # noqa: F821
    redrawn = draw_figures(
        perf, snakemake.params.systems, snakemake.params.figures_dir,  # noqa: F821
        snakemake.params.figures,  # noqa: F821
        store=snakemake.params.store, workers=snakemake.params.workers, svg=snakemake.params.svg,  # noqa: F821
        progress=lambda fig, drew: print(f"{'drew' if drew else 'kept'} {fig}", file=log, flush=True))
    print(f"{len(redrawn)} of {len(snakemake.params.figures)} figures drawn here for "  # noqa: F821
          f"{snakemake.params.systems or 'all systems'} in {time.monotonic() - started:.1f} s",  # noqa: F821
          file=log)
