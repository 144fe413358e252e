"""Snakemake script: judge every claim on every platform of the overview's rows (verdicts.json)."""
import time
from pathlib import Path

import pandas as pd

from crosstalk.claims import judge
from crosstalk.claims.verdictfile import write

started = time.monotonic()
perf, cases = pd.read_parquet(snakemake.input.perf), pd.read_parquet(snakemake.input.cases)  # noqa: F821
verdicts = judge(perf, cases, workers=snakemake.params.workers, store=snakemake.params.store)  # noqa: F821
write(Path(snakemake.output.verdicts), verdicts)  # noqa: F821
with open(snakemake.log[0], "w") as log:  # noqa: F821
    print(f"{len(verdicts)} verdicts in {time.monotonic() - started:.1f} s", file=log)
