rule report:
    input:
        perf=f"{RESULTS}/table.parquet",
        cases=f"{RESULTS}/cases.parquet",
        errors=f"{RESULTS}/collect-errors.txt",
        captions=expand(f"{RESULTS}/figures/{{figure}}.caption.txt", figure=FIGURES),
        benchmarks=benchmark_pages,
        raw=raw_outputs,
        code=report_code,
    output:
        html=f"{RESULTS}/report.html",
    params:
        systems=SELECTED,
        figures_dir=lambda wildcards, input: str(Path(input.captions[0]).parent),
        results=lambda wildcards, input: results_dir(input.perf),
        examples=EXAMPLES,
    log:
        f"{RESULTS}/logs/report.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/report.py"


rule system_report:
    input:
        perf=f"{RESULTS}/{{system}}/table.parquet",
        cases=f"{RESULTS}/{{system}}/cases.parquet",
        errors=f"{RESULTS}/{{system}}/collect-errors.txt",
        # the report's figures, every system's series (workflows/rules/figures.smk)
        captions=expand(f"{RESULTS}/figures/{{figure}}.caption.txt", figure=FIGURES),
        raw=system_raw_outputs,
        code=report_code,
    output:
        html=f"{RESULTS}/{{system}}/report.html",
    params:
        systems=lambda wildcards: [wildcards.system],
        figures_dir=lambda wildcards, input: str(Path(input.captions[0]).parent),
        results=lambda wildcards, input: results_dir(input.perf, system=True),
        examples=EXAMPLES,
        overview=f"{RESULTS}/report.html",
    log:
        f"{RESULTS}/logs/report-{{system}}.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/report.py"
