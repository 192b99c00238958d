# One training job per named run. Resumable state lives in results/train/{run}/checkpoints/,
# outside the declared output, so a failed or killed job keeps it and the retry resumes.
# A run's `nodes` and `gpus` reach `lnrepro train`, which starts its processes (lnrepro.core.launch);
# what the job asks a cluster for comes from resources.smk.
# The shells `exec` the trainer: Snakemake's own child, it stops when Snakemake dies (loop.ParentWatch).


def model_flags(wildcards):
    """The run's own settings: what its training and its Admin profiling depend on."""
    return trainer_flags(run_settings(wildcards.run))


def uses_admin(run):
    s = run_settings(run)
    return "admin" in (s.get("enc_norm"), s.get("dec_norm"))


def omega_file(run):
    return f"results/admin/{run}/omega.json"


def train_flags(wildcards):
    """Only this run's settings reach its training job, so an edit reruns only this run."""
    flags = launched_trainer_flags(run_settings(wildcards.run))
    flags += f" --admin-omega {omega_file(wildcards.run)}" if uses_admin(wildcards.run) else ""
    return flags + train_cap_flags(wildcards.run) + log_flags(wildcards.run)


def train_cap(run):
    """(epochs, epoch_updates), 0 where uncapped: at most `epochs` epochs of at most `epoch_updates`
    updates; a run whose lr steps down at decay_epoch trains up to that epoch, so the decay is exercised too."""
    cap, s = training_cap(), run_settings(run)
    epochs = cap.get("epochs", 0)
    if epochs and s.get("schedule") in STEP_SCHEDULES:
        epochs = max(epochs, s.get("decay_epoch", 0))
    return epochs, cap.get("epoch_updates", 0)


def train_cap_flags(run):
    return cap_flags(*train_cap(run))


def run_data(wildcards):
    return bin_files(run_corpus(wildcards.run))


def train_data(wildcards):
    files = run_data(wildcards)
    if uses_admin(wildcards.run):
        files["omega"] = omega_file(wildcards.run)
    return files


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
        "exec lnrepro train --data {params.data_dir} --out results/train/{wildcards.run} {params.flags}"
        " --threads {threads} > {log} 2>&1"


rule admin_profile:
    input:
        unpack(run_data),
    output:
        "results/admin/{run}/omega.json",
    params:
        flags=model_flags,
        data_dir=run_bin_dir,
        method=ADMIN_PROFILE_METHOD,  # the command refuses another: this rule and the code agree
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/{run}.log",
    shell:
        "lnrepro admin-profile --data {params.data_dir} {params.flags} --out results/admin/{wildcards.run}"
        " --method {params.method} --omega-out {output} > {log} 2>&1"
