# One job per scope draws all its figures (one interpreter and matplotlib start-up, not one per
# figure) and redraws only those whose rows or drawing code changed; scopes with the same rows
# share one drawing (a store under the results), and jobs running side by side split the
# drawing between them (crosstalk/analysis/figurecache.py).


rule figures:
    input:
        perf=f"{RESULTS}/table.parquet",
        raw=raw_outputs,
        code=figure_code,
    output:
        expand(f"{RESULTS}/figures/{{figure}}.{{suffix}}", figure=FIGURES, suffix=FIGURE_SUFFIXES),
    params:
        systems=SELECTED,
        figures=FIGURES,
        figures_dir=lambda wildcards, output: str(Path(output[0]).parent),
        store=FIGURE_STORE,
        peers=figure_peers,
    log:
        f"{RESULTS}/logs/figures.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/figures.py"


rule system_figures:
    input:
        perf=f"{RESULTS}/{{system}}/table.parquet",
        raw=system_raw_outputs,
        code=figure_code,
    output:
        expand(f"{RESULTS}/{{{{system}}}}/figures/{{figure}}.{{suffix}}", figure=FIGURES,
               suffix=FIGURE_SUFFIXES),
    params:
        systems=lambda wildcards: [wildcards.system],
        figures=FIGURES,
        figures_dir=lambda wildcards, output: str(Path(output[0]).parent),
        store=FIGURE_STORE,
        peers=figure_peers,
    log:
        f"{RESULTS}/logs/figures-{{system}}.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/figures.py"
