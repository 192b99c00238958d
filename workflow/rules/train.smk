# One training job per named run. Resumable state lives in results/train/{run}/checkpoints/,
# outside the declared output, so a failed or killed job keeps it and the retry resumes.
# A run's `nodes` and `gpus` reach `lnrepro train`, which starts its processes (lnrepro.launch);
# what the job asks a cluster for comes from cluster.smk.


rule train:
    input:
        unpack(train_data),
    output:
        "results/train/{run}/metrics.csv",
    params:
        flags=train_flags,
        data_dir=run_bin_dir,
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
        "logs/train/{run}.log",
    benchmark:
        "benchmarks/train/{run}.tsv"
    shell:
        "lnrepro train --data {params.data_dir} --out results/train/{wildcards.run} {params.flags}"
        " --threads {threads} > {log} 2>&1"


rule admin_profile:
    input:
        unpack(run_data),
    output:
        "results/admin/{run}/omega.json",
    params:
        flags=model_flags,
        data_dir=run_bin_dir,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/{run}.log",
    shell:
        "lnrepro admin-profile --data {params.data_dir} {params.flags} --out results/admin/{wildcards.run}"
        " --omega-out {output} > {log} 2>&1"
