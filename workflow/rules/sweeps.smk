# A sweep's table (config `sweeps:`, lnrepro.pipeline.sweeps): its cells are runs of `runs:` (trained by
# train.smk), and this one target reads each one's metrics: status, loss, seed per cell.


wildcard_constraints:
    sweep=P.names_regex(list(config.get("sweeps") or {})) or "NO_SWEEPS",


rule sweep_table:
    input:
        P.sweeps.sweep_metrics_files,
    output:
        csv=paths.sweep_table("{sweep}"),
    params:
        spec=P.sweeps.sweep_spec,
        metrics=P.sweeps.sweep_metrics_pairs,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/sweeps/{sweep}.log",
    shell:
        "lnrepro sweep-table --spec {params.spec:q} --metrics {params.metrics} --csv {output.csv:q} > {log:q} 2>&1"


# Its phase diagram: a panel per scheme, cells depth x warm-up (or the sweep's `phase` axes), coloured
# by the share of seeds that failed.
rule sweep_phase:
    input:
        table=paths.sweep_table("{sweep}"),
    output:
        pdf=paths.figure("{sweep}_phase"),
        png=report(paths.figure("{sweep}_phase", ".png"), caption="../report/sweep_phase.rst", category="Lab"),
        csv=paths.figure("{sweep}_phase", ".csv"),
    params:
        spec=P.sweeps.sweep_phase_spec,
        scale_note=P.scale_note.flag("sweep"),
        verdicts=P.claims.caption_verdicts("{sweep}", lab=True),  # read when the report renders
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/sweeps/{sweep}_phase.log",
    shell:
        "lnrepro sweep-phase --table {input.table:q} --spec {params.spec:q} --pdf {output.pdf:q} --csv {output.csv:q}"
        " {params.scale_note} > {log:q} 2>&1"


# Read from the phase diagram's cells: (b) the minimum warm-up or the critical lr that trains, against
# depth, per scheme; (d) for an lr sweep, the mean excess loss over its lr grid per scheme and depth.
rule sweep_thresholds:
    input:
        cells=paths.figure("{sweep}_phase", ".csv"),
    output:
        pdf=paths.figure("{sweep}_thresholds"),
        png=report(paths.figure("{sweep}_thresholds", ".png"), caption="../report/sweep_thresholds.rst", category="Lab"),
        csv=paths.figure("{sweep}_thresholds", ".csv"),
    params:
        command="sweep-thresholds",
        spec=P.sweeps.sweep_thresholds_spec,
        scale_note=P.scale_note.flag("sweep"),
        verdicts=P.claims.caption_verdicts("{sweep}", lab=True),  # read when the report renders
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/sweeps/{sweep}_thresholds.log",
    shell:
        "lnrepro {params.command} --cells {input.cells:q} --spec {params.spec:q} --pdf {output.pdf:q} --csv {output.csv:q}"
        " {params.scale_note} > {log:q} 2>&1"


use rule sweep_thresholds as sweep_lr_sensitivity with:
    output:
        pdf=paths.figure("{sweep}_sensitivity"),
        png=report(paths.figure("{sweep}_sensitivity", ".png"), caption="../report/sweep_lr_sensitivity.rst", category="Lab"),
        csv=paths.figure("{sweep}_sensitivity", ".csv"),
    params:
        command="sweep-lr-sensitivity",
        spec=P.sweeps.sweep_lr_sensitivity_spec,
        scale_note=P.scale_note.flag("sweep"),
        verdicts=P.claims.caption_verdicts("{sweep}", lab=True),  # read when the report renders
    log:
        "logs/sweeps/{sweep}_sensitivity.log",
