# Liu et al. 2020 (Admin): Tables 1-2, Fig 2 (output change), Figs 3 and 11 (relative gradient and
# update norms), Fig 5 (gradient vanishing at init), Figs 7-8 (layer dependency) and Fig 10
# (no-warm-up lr x beta2 grid). Training and decoding are the
# ordinary `train`/`evaluate`/`evaluate_averaged` jobs of the named runs; these rules probe at
# initialization (seconds) and assemble. Everything comes from the config's optional `admin:`
# section; without a subsection its target is simply not in `rule all`. What the rules ask of the
# config: lnrepro.pipeline.admin; the checkpoints Figs 3/11 and 7-8 read: checkpoint_reads.


rule gradient_vanishing:
    input:
        unpack(P.admin.vanishing_data),
    output:
        pdf=paths.figure("liu_fig5"),
        png=report(paths.figure("liu_fig5", ".png"), caption="../report/liu.rst", category="Admin"),
        csv=report(paths.figure("liu_fig5", ".csv"), caption="../report/liu.rst", category="Admin"),
        summary=paths.figure("liu_fig5_vanishing", ".csv"),
    params:
        caption=P.report_caption("admin", "gradients", table=paths.figure("liu_fig5_vanishing", ".csv"),
                                 got="per norm combination, the first sublayer's gradient norm over the top one's, "
                                     "mean of the seeds, and whether it vanishes"),
        verdicts=P.claims.caption_verdicts("liu_fig5"),  # read when the report renders
        flags=P.admin.vanishing_flags,
        scale_note=P.scale_note.flag("vanishing"),
    threads: P.resources.threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig5.log",
    benchmark:
        "benchmarks/admin/liu_fig5.tsv"
    shell:
        "lnrepro gradient-vanishing {params.flags} --threads {threads} --pdf {output.pdf:q} --csv {output.csv:q}"
        " --summary {output.summary:q} {params.scale_note} > {log:q} 2>&1"


rule output_change:
    input:
        unpack(P.admin.output_change_data),
    output:
        pdf=paths.figure("liu_fig2"),
        png=report(paths.figure("liu_fig2", ".png"), caption="../report/liu.rst", category="Admin"),
        csv=report(paths.figure("liu_fig2", ".csv"), caption="../report/liu.rst", category="Admin"),
        fits=paths.figure("liu_fig2_fits", ".csv"),
    params:
        caption=P.report_caption("admin", "output_change", table=paths.figure("liu_fig2_fits", ".csv"),
                                 got="per norm and perturbation, the output change fitted against N and ln N: "
                                     "slope, intercept, r"),
        verdicts=P.claims.caption_verdicts("liu_fig2"),  # read when the report renders
        flags=P.admin.output_change_flags,
        scale_note=P.scale_note.flag("output_change"),
        admin_profile=ADMIN_PROFILE_METHOD,  # its Admin models are profiled in the job: a new method reruns it
    threads: P.resources.threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig2.log",
    benchmark:
        "benchmarks/admin/liu_fig2.tsv"
    shell:
        "lnrepro output-change {params.flags} --threads {threads} --pdf {output.pdf:q} --csv {output.csv:q}"
        " --fits {output.fits:q} {params.scale_note} > {log:q} 2>&1"


# The stability lab's Fig 2 (admin.output_change.lab_norms; not in rule all): every scheme's output change
# at the same depths, on log-log axes with its fitted exponent.
use rule output_change as lab_output_change with:
    output:
        pdf=paths.figure("lab_output_change"),
        png=report(paths.figure("lab_output_change", ".png"), caption="../report/lab_output_change.rst", category="Lab"),
        csv=paths.figure("lab_output_change", ".csv"),
        fits=paths.figure("lab_output_change_fits", ".csv"),
    params:
        flags=P.admin.lab_output_change_flags,
        scale_note=P.scale_note.flag("output_change"),
        admin_profile=ADMIN_PROFILE_METHOD,  # its Admin models are profiled in the job: a new method reruns it
    log:
        "logs/admin/lab_output_change.log",
    benchmark:
        "benchmarks/admin/lab_output_change.tsv"


rule admin_table1:
    input:
        unpack(P.admin.table_inputs("table1", vanishing=paths.figure("liu_fig5_vanishing", ".csv"))),
    output:
        md=paths.table("admin_table1"),
        csv=report(paths.table("admin_table1", ".csv"), caption="../report/liu.rst", category="Admin"),
    params:
        caption=P.report_caption("admin", "table1", table=paths.table("admin_table1", ".csv"),
                                 got="per encoder and decoder norm, gradient vanishing at initialization (the "
                                     "decoder's bottom/top ratio) and the run's status, final valid loss and BLEU"),
        verdicts=P.claims.caption_verdicts("liu_table1"),  # read when the report renders
        spec=P.admin.table_spec("table1"),
        files=P.admin.table_pairs("table1"),  # --metrics/--bleu RUN=PATH: the files of its input
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/admin_table1.log",
    shell:
        "lnrepro admin-tables --table 1 --spec {params.spec:q} {params.files} --vanishing {input.vanishing:q}"
        " --csv {output.csv:q} --md {output.md:q} > {log:q} 2>&1"


rule admin_table2:
    input:
        unpack(P.admin.table_inputs("table2")),
    output:
        md=paths.table("admin_table2"),
        csv=report(paths.table("admin_table2", ".csv"), caption="../report/liu.rst", category="Admin"),
    params:
        caption=P.report_caption("admin", "table2", table=paths.table("admin_table2", ".csv"),
                                 got="per norm and depth, the run's status, final valid loss (bits) and test BLEU"),
        verdicts=P.claims.caption_verdicts("liu_table2"),  # read when the report renders
        spec=P.admin.table_spec("table2"),
        files=P.admin.table_pairs("table2"),  # --metrics/--bleu RUN=PATH: the files of its input
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/admin_table2.log",
    shell:
        "lnrepro admin-tables --table 2 --spec {params.spec:q} {params.files}"
        " --csv {output.csv:q} --md {output.md:q} > {log:q} 2>&1"


rule lr_grid:
    input:
        unpack(P.admin.table_inputs("lr_grid")),
    output:
        pdf=paths.figure("liu_fig10"),
        png=report(paths.figure("liu_fig10", ".png"), caption="../report/liu.rst", category="Admin"),
        csv=report(paths.figure("liu_fig10", ".csv"), caption="../report/liu.rst", category="Admin"),
    params:
        caption=P.report_caption("admin", "lr_grid", table=paths.figure("liu_fig10", ".csv"),
                                 got="per norm, lr and beta2, the run's status, test BLEU and final valid loss"),
        verdicts=P.claims.caption_verdicts("liu_fig10"),  # read when the report renders
        spec=P.admin.table_spec("lr_grid"),
        files=P.admin.table_pairs("lr_grid"),  # --metrics/--bleu RUN=PATH: the files of its input
        scale_note=P.scale_note.flag("lr_grid"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig10.log",
    shell:
        "lnrepro lr-grid --spec {params.spec:q} {params.files} --pdf {output.pdf:q} --csv {output.csv:q}"
        " {params.scale_note} > {log:q} 2>&1"


# Figs 7-8: beta_{i,j} of the named runs at initialization and at their last checkpoint.
rule layer_dependency:
    input:
        unpack(P.admin.dependency_inputs),
        checkpoints=P.checkpoint_reads.dependency_checkpoints,
    output:
        pdf=paths.figure("liu_{ldfig}"),
        png=report(paths.figure("liu_{ldfig}", ".png"), caption="../report/liu.rst", category="Admin"),
        csv=report(paths.figure("liu_{ldfig}", ".csv"), caption="../report/liu.rst", category="Admin"),
        summary=paths.figure("liu_{ldfig}", "_summary.csv"),
    wildcard_constraints:
        ldfig="fig7|fig8",
    params:
        caption=P.report_caption("admin", "layer_dependency", "{ldfig}", table=paths.figure("liu_{ldfig}", "_summary.csv"),
                                 got="per run, state and side, the mean share beta of each sublayer's own branch, "
                                     "of the branch below it and of the embeddings"),
        verdicts=P.claims.caption_verdicts("liu_fig7"),  # read when the report renders
        spec=P.admin.dependency_spec,
        files=P.admin.dependency_pairs,  # --metrics RUN=PATH: the metrics of its input
        scale_note=P.scale_note.flag("dependency"),
        data_dir=P.admin.dependency_data_dir,
        admin_profile=ADMIN_PROFILE_METHOD,  # its Admin models at init are profiled in the job
    threads: P.resources.threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_{ldfig}.log",
    benchmark:
        "benchmarks/admin/liu_{ldfig}.tsv"
    shell:
        "lnrepro layer-dependency --spec {params.spec:q} --data {params.data_dir:q} {params.files}"
        " --threads {threads} --pdf {output.pdf:q} --csv {output.csv:q} --summary {output.summary:q} {params.scale_note}"
        " > {log:q} 2>&1"


# Figs 3 and 11: per epoch pair of each run, every matrix's gradient and update norm (seconds).
rule update_norms:
    input:
        unpack(P.admin.update_norms_inputs),
        checkpoints=P.checkpoint_reads.update_norm_checkpoints,
    output:
        pdf=paths.figure("liu_{unfig}"),
        png=report(paths.figure("liu_{unfig}", ".png"), caption="../report/update_norms.rst", category="Admin"),
        csv=report(paths.figure("liu_{unfig}", ".csv"), caption="../report/update_norms.rst", category="Admin"),
        summary=paths.figure("liu_{unfig}", "_summary.csv"),
    wildcard_constraints:
        unfig="fig3|fig11",
    params:
        caption=P.report_caption("admin", "update_norms", "{unfig}"),  # its config text, shown literally in the report
        verdicts=P.claims.caption_verdicts("liu_{unfig}"),  # read when the report renders
        spec=P.admin.update_norms_spec,
        files=P.admin.update_norms_pairs,  # --metrics RUN=PATH: the metrics of its input
        scale_note=P.scale_note.flag("update_norms"),
        data_dir=P.admin.update_norms_data_dir,
    threads: P.resources.threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_{unfig}.log",
    benchmark:
        "benchmarks/admin/liu_{unfig}.tsv"
    shell:
        "lnrepro update-norms --spec {params.spec:q} --data {params.data_dir:q} {params.files}"
        " --threads {threads} --pdf {output.pdf:q} --csv {output.csv:q} --summary {output.summary:q} {params.scale_note}"
        " > {log:q} 2>&1"
