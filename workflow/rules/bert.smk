# BERT (Xiong et al. Fig 5): pre-train each run on its corpus (bert_data.smk), fine-tune every
# round's checkpoint on each GLUE task, draw validation loss and dev accuracy against updates.
# Checkpoints live in results/pretrain/{run}/checkpoints/, outside the declared output, so a
# killed pre-training resumes; pretrain is a checkpoint rule, so fine-tuning declares the round's
# checkpoint from its metrics.csv (lnrepro.pipeline.checkpoint_reads). A run's settings:
# bert_run_settings (lnrepro.pipeline.runs). BERT runs share the `run` wildcard and the
# resource helpers (resources.smk) with translation runs.


checkpoint pretrain:
    input:
        unpack(P.bert.pretrain_data),
    output:
        paths.metrics("{run}", "pretrain"),
    params:
        flags=P.bert.pretrain_flags,
        data_dir=P.bert.pretrain_bin_dir,
    threads: P.resources.train_threads
    resources:
        mem_mb=P.resources.mem_mb("train"),
        runtime=P.plan.runtime("train", "pretrain"),
        gpu=P.resources.train_gpu,
        gpu_model=P.resources.train_gpu_model,
        nodes=P.resources.train_nodes,
        tasks=P.resources.train_tasks,
        mpi=P.resources.train_mpi,
        slurm_extra=P.resources.train_slurm_extra,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/pretrain/{run}.log",
    benchmark:
        "benchmarks/pretrain/{run}.tsv"
    shell:
        "exec lnrepro pretrain --data {params.data_dir:q} --out results/pretrain/{wildcards.run:q} {params.flags}"
        " --threads {threads} > {log:q} 2>&1"


rule finetune:
    input:
        unpack(P.bert.finetune_inputs),
        checkpoints=P.checkpoint_reads.finetuned_checkpoint,
    output:
        runs=paths.finetune("{run}", "{task}", "{round}"),
        summary=paths.finetune("{run}", "{task}", "{round}", ".summary.csv"),
    wildcard_constraints:
        round="[0-9]+",
    params:
        flags=P.bert.finetune_flags,
    threads: P.resources.threads("evaluate")
    resources:
        mem_mb=P.resources.mem_mb("evaluate"),
        runtime=P.plan.runtime("evaluate", "finetune"),
        gpu=P.resources.eval_gpu,
        gpu_model=P.resources.eval_gpu_model,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/finetune/{run}/{task}/round{round}.log",
    benchmark:
        "benchmarks/finetune/{run}/{task}/round{round}.tsv"
    shell:
        "lnrepro finetune --checkpoint results/pretrain/{wildcards.run:q}/checkpoints/epoch{wildcards.round:q}.pt"
        " --metrics {input.metrics:q} --data results/data/glue/{wildcards.task:q}/bin --task {wildcards.task:q}"
        " {params.flags} --threads {threads} --out {output.runs:q} > {log:q} 2>&1"


rule plot_fig5:
    input:
        unpack(P.bert.fig5_inputs),
    output:
        pdf=paths.figure("fig5"),
        png=report(paths.figure("fig5", ".png"), caption="../report/fig5.rst", category="Figures"),
        csv=report(paths.figure("fig5", ".csv"), caption="../report/fig5.rst", category="Tables"),
    params:
        caption=P.report_caption("bert", "fig5"),  # its config text, shown literally in the report
        verdicts=P.claims.caption_verdicts("fig5"),  # read when the report renders
        spec=P.bert.fig5_spec,
        files=P.bert.fig5_pairs,  # --metrics RUN=PATH, --summaries RUN:TASK:ROUND=PATH: the files of its input
        scale_note=P.scale_note.flag("fig5"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/fig5.log",
    shell:
        "lnrepro figure5 --spec {params.spec:q} {params.files} --pdf {output.pdf:q} --csv {output.csv:q} {params.scale_note} > {log:q} 2>&1"
