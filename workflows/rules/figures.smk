# One job draws every figure once, for every system (each its own series): the overview and each
# system's page show the same drawings, so drawing does not grow with the number of systems. It
# redraws only the figures whose rows or drawing code changed, on forked workers (one per core of
# the workflow; the job counts as one thread, so the verdicts are judged beside it: verdicts.smk)
# and keeps the drawings in a store under the results (crosstalk/analysis/figurecache.py).


rule figures:
    input:
        perf=f"{RESULTS}/table.parquet",
        raw=raw_outputs,
        code=figure_code,
    output:
        expand(f"{RESULTS}/figures/{{figure}}.{{suffix}}", figure=FIGURES, suffix=figure_suffixes(SVG)),
    threads: 1
    params:
        workers=workflow.cores,
        systems=SELECTED,
        figures=FIGURES,
        figures_dir=lambda wildcards, output: str(Path(output[0]).parent),
        store=FIGURE_STORE,
        svg=SVG,
    log:
        f"{RESULTS}/logs/figures.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/figures.py"
