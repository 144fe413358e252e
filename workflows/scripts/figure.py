"""Snakemake script: draw one paper figure from the tidy table."""
import pandas as pd

from crosstalk.figures import draw

perf = pd.read_parquet(snakemake.input.perf)  # noqa: F821
caption = draw(snakemake.wildcards.figure, perf, snakemake.params.systems,  # noqa: F821
               snakemake.output.png, snakemake.output.svg)  # noqa: F821
with open(snakemake.output.caption, "w") as fp:  # noqa: F821
    fp.write(caption + "\n")
with open(snakemake.log[0], "w") as log:  # noqa: F821
    print(f"drew {snakemake.wildcards.figure} for {snakemake.params.systems}", file=log)  # noqa: F821
