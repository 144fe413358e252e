# One job writes every page (the overview and each system's): a system's page shows the verdicts
# of its platforms (judged once: verdicts.smk) and the overview's figures
# (crosstalk/analysis/pages.py).


rule report:
    input:
        perf=f"{RESULTS}/table.parquet",
        cases=f"{RESULTS}/cases.parquet",
        errors=f"{RESULTS}/collect-errors.txt",
        verdicts=f"{RESULTS}/verdicts.json",
        system_errors=expand(f"{RESULTS}/{{system}}/collect-errors.txt", system=SYSTEMS),
        captions=expand(f"{RESULTS}/figures/{{figure}}.caption.txt", figure=FIGURES),
        benchmarks=benchmark_pages,
        raw=raw_outputs,
        code=report_code,
    output:
        html=f"{RESULTS}/report.html",
        pages=expand(f"{RESULTS}/{{system}}/report.html", system=SYSTEMS),
    threads: workflow.cores
    params:
        systems=SELECTED,
        page_systems=SYSTEMS,
        figures_dir=lambda wildcards, input: str(Path(input.captions[0]).parent),
        results=lambda wildcards, input: results_dir(input.perf),
        examples=EXAMPLES,
        svg=SVG,
    log:
        f"{RESULTS}/logs/report.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/report.py"
