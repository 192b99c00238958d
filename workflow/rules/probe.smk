# Fig 3 (Xiong et al. §3.4): FFN gradient norms of N-N models at initialization, one probe job per
# norm placement and depth (no training), and of the Post-LN run's checkpoint after its warm-up.
# The section is optional: without it, Fig 3 is simply not in `rule all`.


rule probe_gradients:
    input:
        unpack(P.probe.probe_data),
    output:
        grads=paths.probe("init/{norm}_{layers}L", "grads"),
        concentration=paths.probe("init/{norm}_{layers}L", "concentration"),
    wildcard_constraints:
        norm="post|pre",
        layers="[0-9]+",
    params:
        flags=P.probe.probe_flags,
        data_dir=P.probe.probe_bin_dir,
    threads: P.resources.threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/probe/init/{norm}_{layers}L.log",
    benchmark:
        "benchmarks/probe/init/{norm}_{layers}L.tsv"
    shell:
        "lnrepro probe-gradients --data {params.data_dir:q} --norm {wildcards.norm:q} --layers {wildcards.layers:q}"
        " {params.flags} --threads {threads} --grads-out {output.grads:q}"
        " --concentration-out {output.concentration:q} > {log:q} 2>&1"


rule probe_after_warmup:
    input:
        unpack(P.probe.warmup_probe_inputs),
        checkpoints=P.checkpoint_reads.probed_checkpoint,
    output:
        grads=paths.probe("after_warmup/{run}", "grads"),
        concentration=paths.probe("after_warmup/{run}", "concentration"),
    params:
        flags=P.probe.warmup_probe_flags,
        data_dir=P.probe.probe_bin_dir,
    threads: P.resources.threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/probe/after_warmup/{run}.log",
    benchmark:
        "benchmarks/probe/after_warmup/{run}.tsv"
    shell:
        "lnrepro probe-gradients --data {params.data_dir:q} --checkpoint-metrics {input.metrics:q}"
        " {params.flags} --threads {threads} --grads-out {output.grads:q}"
        " --concentration-out {output.concentration:q} > {log:q} 2>&1"


rule plot_gradient_norms:
    input:
        unpack(P.probe.gradient_figure_inputs),
    output:
        pdf=paths.figure("fig3"),
        png=report(paths.figure("fig3", ".png"), caption="../report/fig3.rst", category="Figures"),
        csv=report(paths.figure("fig3", ".csv"), caption="../report/table.rst", category="Tables"),
        summary=paths.figure("fig3_summary", ".csv"),
    params:
        caption=P.report_caption("gradient_probe"),  # its config text, shown literally in the report
        verdicts=P.claims.caption_verdicts("fig3", "§3.4"),  # read when the report renders
        spec=P.probe.gradient_figure_spec,
        scale_note=P.scale_note.flag("gradient_probe"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/fig3.log",
    shell:
        "lnrepro plot-gradients --spec {params.spec:q} --grads {input.grads:q} --concentration {input.concentration:q}"
        " --pdf {output.pdf:q} --csv {output.csv:q} --summary {output.summary:q} {params.scale_note} > {log:q} 2>&1"
