# The claims are judged once, on the overview's rows, while the figures are drawn: both jobs count
# as one thread so that Snakemake runs them side by side, and each forks a worker per core of the
# workflow (the one that finishes first leaves the cores to the other). A platform's verdicts are
# kept (crosstalk/analysis/verdictstore.py): only the platforms whose rows changed are judged again.


rule verdicts:
    input:
        perf=f"{RESULTS}/table.parquet",
        cases=f"{RESULTS}/cases.parquet",
        raw=raw_outputs,
        code=verdict_code,
    output:
        verdicts=f"{RESULTS}/verdicts.json",
    threads: 1
    params:
        workers=workflow.cores,
        store=f"{RESULTS}/.verdicts",
    log:
        f"{RESULTS}/logs/verdicts.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/verdicts.py"
