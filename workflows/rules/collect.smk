# Each system's runs are collected by a job of their own (the systems side by side, each into the
# run cache, <results>/.collect, with the files it could not read); the overview's table then
# reads every run from that cache.
rule system_table:
    input:
        system_run_inputs,
    output:
        perf=f"{RESULTS}/{{system}}/table.parquet",
        cases=f"{RESULTS}/{{system}}/cases.parquet",
        errors=f"{RESULTS}/{{system}}/collect-errors.txt",
    params:
        results=lambda wildcards, output: results_dir(output.perf, system=True),
        systems=lambda wildcards: [wildcards.system],
        examples=EXAMPLES,
    log:
        f"{RESULTS}/logs/collect-{{system}}.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/collect.py"


rule collect:
    input:
        run_inputs,
        expand(f"{RESULTS}/{{system}}/table.parquet", system=SYSTEMS),
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
