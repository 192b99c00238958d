# Every figure is a target: a PDF, the PNG beside it (the HTML report shows it: a browser previews no
# PDF there), plus the CSV of every number it plots.


def figure_targets():
    """Each figure and the table of its final values (its report caption)."""
    return expand("results/figures/{fig}{suffix}", fig=config["figures"], suffix=[".pdf", "_final.csv"])


def figure_runs(fig):
    return sorted({run for panel in config["figures"][fig]["panels"] for run in panel["runs"]})


def figure_inputs(wildcards):
    """Every run's metrics; BLEU (a decode of every epoch) only for the runs a BLEU panel draws."""
    panels = config["figures"][wildcards.fig]["panels"]
    decoded = sorted({run for panel in panels if panel["metric"] == "bleu" for run in panel["runs"]})
    return {
        "metrics": [f"results/train/{run}/metrics.csv" for run in figure_runs(wildcards.fig)],
        "bleu": [f"results/eval/{run}/bleu.csv" for run in decoded],
    }


def figure_spec(wildcards):
    """The figure's panels plus the settings of the runs it draws (for legends)."""
    spec = dict(config["figures"][wildcards.fig])
    spec["run_settings"] = {run: run_settings(run) for run in figure_runs(wildcards.fig)}
    return json.dumps(spec, sort_keys=True)


rule plot_figure:
    input:
        unpack(figure_inputs),
    output:
        pdf="results/figures/{fig}.pdf",
        png=report("results/figures/{fig}.png", caption="../report/figure.rst", category="Figures"),
        csv=report("results/figures/{fig}.csv", caption="../report/table.rst", category="Tables"),
        summary="results/figures/{fig}_final.csv",
    params:
        spec=figure_spec,
        scale_note=scale_note_flag(),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/{fig}.log",
    shell:
        "lnrepro figure --spec {params.spec:q} --runs-dir results --pdf {output.pdf} --csv {output.csv}"
        " --summary {output.summary} {params.scale_note} > {log} 2>&1"
