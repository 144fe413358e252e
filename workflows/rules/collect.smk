rule collect:
    input:
        run_reports,
    output:
        perf=f"{RESULTS}/table.parquet",
        cases=f"{RESULTS}/cases.parquet",
        errors=f"{RESULTS}/collect-errors.txt",
    params:
        results=lambda wildcards, output: results_dir(output.perf),
        systems=SELECTED,
        examples=EXAMPLES,
    log:
        f"{RESULTS}/logs/collect.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/collect.py"
