# Every figure is a target: a PDF, the PNG beside it (the HTML report shows it: a browser previews no
# PDF there), plus the CSV of every number it plots.


rule plot_figure:
    input:
        unpack(P.figures.figure_inputs),
    output:
        pdf=paths.figure("{fig}"),
        png=report(paths.figure("{fig}", ".png"), caption="../report/figure.rst", category="Figures"),
        csv=report(paths.figure("{fig}", ".csv"), caption="../report/table.rst", category="Tables"),
        summary=paths.figure("{fig}", "_final.csv"),
    params:
        caption=P.report_caption("figures", "{fig}"),  # its config text, shown literally in the report
        verdicts=P.claims.caption_verdicts("{fig}"),  # read when the report renders
        spec=P.figures.figure_spec,
        files=P.figures.figure_pairs,  # --metrics/--bleu RUN=PATH: the files of its input
        scale_note=P.scale_note.flag("figure"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/{fig}.log",
    shell:
        "lnrepro figure --spec {params.spec:q} {params.files} --pdf {output.pdf:q} --csv {output.csv:q}"
        " --summary {output.summary:q} {params.scale_note} > {log:q} 2>&1"
