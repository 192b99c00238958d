# One training job per named run. Resumable state lives in results/train/{run}/checkpoints/,
# outside the declared output, so a failed or killed job keeps it and the retry resumes. train is a
# Snakemake checkpoint rule: its output, metrics.csv, names each epoch's checkpoint, and the steps
# that read some declare them once it exists (lnrepro.pipeline.checkpoint_reads).
# A run's `nodes` and `gpus` reach `lnrepro train`, which starts its processes (lnrepro.core.launch);
# what the job asks a cluster for comes from resources.smk.
# The shells `exec` the trainer: Snakemake's own child, it stops when Snakemake dies (lnrepro.core.processes.ParentWatch).


checkpoint train:
    input:
        unpack(P.train.train_data),
    output:
        paths.metrics("{run}"),
    params:
        flags=P.train.train_flags,
        data_dir=P.runs.run_bin_dir,
    threads: P.resources.train_threads
    resources:
        mem_mb=P.resources.mem_mb("train"),
        runtime=P.plan.runtime("train", "train"),  # the cost plan's estimate where the config sets none
        gpu=P.resources.train_gpu,
        gpu_model=P.resources.train_gpu_model,
        nodes=P.resources.train_nodes,
        tasks=P.resources.train_tasks,
        mpi=P.resources.train_mpi,
        slurm_extra=P.resources.train_slurm_extra,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/train/{run}.log",
    benchmark:
        "benchmarks/train/{run}.tsv"
    shell:
        "exec lnrepro train --data {params.data_dir:q} --out results/train/{wildcards.run:q} {params.flags}"
        " --threads {threads} > {log:q} 2>&1"


rule admin_profile:
    input:
        unpack(P.train.run_data),
    output:
        paths.omega("{run}"),
    params:
        flags=P.train.model_flags,
        data_dir=P.runs.run_bin_dir,
        method=ADMIN_PROFILE_METHOD,  # the command refuses another: this rule and the code agree
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/{run}.log",
    shell:
        "lnrepro admin-profile --data {params.data_dir:q} {params.flags} --out results/admin/{wildcards.run:q}"
        " --method {params.method} --omega-out {output:q} > {log:q} 2>&1"
