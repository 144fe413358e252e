rule figure:
    input:
        perf=f"{RESULTS}/table.parquet",
    output:
        png=f"{RESULTS}/figures/{{figure}}.png",
        svg=f"{RESULTS}/figures/{{figure}}.svg",
        caption=f"{RESULTS}/figures/{{figure}}.caption.txt",
    params:
        systems=SELECTED,
    log:
        f"{RESULTS}/logs/figure-{{figure}}.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/figure.py"


rule system_figure:
    input:
        perf=f"{RESULTS}/table.parquet",
    output:
        png=f"{RESULTS}/{{system}}/figures/{{figure}}.png",
        svg=f"{RESULTS}/{{system}}/figures/{{figure}}.svg",
        caption=f"{RESULTS}/{{system}}/figures/{{figure}}.caption.txt",
    params:
        systems=lambda wildcards: [wildcards.system],
    log:
        f"{RESULTS}/logs/figure-{{system}}-{{figure}}.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/figure.py"
