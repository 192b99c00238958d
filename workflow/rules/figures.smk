# Every figure is a target: a PDF plus the CSV of every number it plots.


rule plot_figure:
    input:
        unpack(figure_inputs),
    output:
        pdf=report("results/figures/{fig}.pdf", caption="../report/figure.rst", category="Figures"),
        csv=report("results/figures/{fig}.csv", caption="../report/table.rst", category="Tables"),
        summary="results/figures/{fig}_final.csv",
    params:
        spec=figure_spec,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/{fig}.log",
    shell:
        "lnrepro figure --spec {params.spec:q} --runs-dir results --pdf {output.pdf} --csv {output.csv}"
        " --summary {output.summary} > {log} 2>&1"
