"""Snakemake script: collect all runs into the tidy tables; broken files are listed, not fatal.
Each run's rows are kept in ``<results>/.collect/``: only new or changed runs are read again."""
import sys
from pathlib import Path

from crosstalk.analysis import write_whole
from crosstalk.analysis.collect import collect
from crosstalk.analysis.ingestcache import CACHE_NAME

with open(snakemake.log[0], "w") as log:  # noqa: F821 (snakemake injects it)
    perf, cases, errors = collect(snakemake.params.results, snakemake.params.systems,  # noqa: F821
                                  snakemake.params.examples,  # noqa: F821
                                  cache=Path(snakemake.params.results, CACHE_NAME))  # noqa: F821
    # whole or absent: a table cut short by a kill would pass for collected (workflow.broken_tables)
    write_whole(snakemake.output.perf, lambda tmp: perf.to_parquet(tmp, index=False))  # noqa: F821
    write_whole(snakemake.output.cases, lambda tmp: cases.to_parquet(tmp, index=False))  # noqa: F821
    with open(snakemake.output.errors, "w") as fp:  # noqa: F821
        fp.writelines(f"{e}\n" for e in errors)
    for e in errors:
        print(f"crosstalk: collect: {e}", file=sys.stderr)
    print(f"{len(perf)} performance values, {len(cases)} test cases, {len(errors)} unreadable runs",
          file=log)
