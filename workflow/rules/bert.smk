# BERT (Xiong et al. Fig 5): pre-train each run on its corpus (bert_data.smk), fine-tune every
# round's checkpoint on each GLUE task, draw validation loss and dev accuracy against updates.
# Checkpoints live in results/pretrain/{run}/checkpoints/, outside the declared output, so a
# killed pre-training resumes; fine-tuning reads the round's checkpoint by name.


rule pretrain:
    input:
        unpack(pretrain_data),
    output:
        "results/pretrain/{run}/metrics.csv",
    params:
        flags=pretrain_flags,
        data_dir=pretrain_bin_dir,
    threads: train_threads
    resources:
        mem_mb=mem_mb("train"),
        runtime=runtime("train"),
        gpu=train_gpu,
        gpu_model=train_gpu_model,
        nodes=train_nodes,
        tasks=train_tasks,
        mpi=train_mpi,
        slurm_extra=train_slurm_extra,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/pretrain/{run}.log",
    benchmark:
        "benchmarks/pretrain/{run}.tsv"
    shell:
        "lnrepro pretrain --data {params.data_dir} --out results/pretrain/{wildcards.run} {params.flags}"
        " --threads {threads} > {log} 2>&1"


rule finetune:
    input:
        unpack(finetune_inputs),
    output:
        runs="results/finetune/{run}/{task}/round{round}.csv",
        summary="results/finetune/{run}/{task}/round{round}.summary.csv",
    wildcard_constraints:
        round="[0-9]+",
    params:
        flags=finetune_flags,
    threads: threads("evaluate")
    resources:
        mem_mb=mem_mb("evaluate"),
        runtime=runtime("evaluate"),
        gpu=eval_gpu,
        gpu_model=eval_gpu_model,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/finetune/{run}/{task}/round{round}.log",
    benchmark:
        "benchmarks/finetune/{run}/{task}/round{round}.tsv"
    shell:
        "lnrepro finetune --checkpoint results/pretrain/{wildcards.run}/checkpoints/epoch{wildcards.round}.pt"
        " --data results/data/glue/{wildcards.task}/bin --task {wildcards.task} {params.flags}"
        " --threads {threads} --out {output.runs} > {log} 2>&1"


rule plot_fig5:
    input:
        unpack(fig5_inputs),
    output:
        pdf=report("results/figures/fig5.pdf", caption="../report/fig5.rst", category="Figures"),
        csv=report("results/figures/fig5.csv", caption="../report/fig5.rst", category="Tables"),
    params:
        spec=fig5_spec,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/fig5.log",
    shell:
        "lnrepro figure5 --spec {params.spec:q} --results results --pdf {output.pdf} --csv {output.csv} > {log} 2>&1"
