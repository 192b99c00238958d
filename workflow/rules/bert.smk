# BERT (Xiong et al. Fig 5): pre-train each run on its corpus (bert_data.smk), fine-tune every
# round's checkpoint on each GLUE task, draw validation loss and dev accuracy against updates.
# Checkpoints live in results/pretrain/{run}/checkpoints/, outside the declared output, so a
# killed pre-training resumes; fine-tuning reads the round's checkpoint by name.
# A run's settings: bert_run_settings (common.smk). BERT runs share the `run` wildcard and the
# resource helpers (resources.smk) with translation runs.


def check_bert_config():
    """Cross-references the schema cannot express; fails before any job runs."""
    b = bert_section()
    for run in b.get("runs", {}):
        if run in config["runs"]:
            config_error(f"bert.runs.{run}: also a translation run in runs: (run names are shared)")
        s = {**b.get("pretrain_defaults", {}), **b["runs"][run]}
        for key, where, table in (("corpus", "bert_corpora", config.get("bert_corpora", {})),
                                  ("model", "bert.models", b.get("models", {}))):
            if key not in s:
                config_error(f"bert.runs.{run}: no '{key}' (set it in the run or in bert.pretrain_defaults)")
            if s[key] not in table:
                unknown_name(f"bert.runs.{run}.{key}", s[key], f"a {key}", where, table)
        s = bert_run_settings(run)
        if s["max_updates"] % s["valid_interval"]:
            config_error(f"bert.runs.{run}: max_updates {s['max_updates']} is not a multiple of "
                         f"valid_interval {s['valid_interval']} (a round ends in a checkpoint)")
        check_bert_phases(run, s)
    fig = b.get("fig5")
    if fig:
        for run in fig["runs"]:
            if run not in b.get("runs", {}):
                unknown_name("bert.fig5.runs", run, "a BERT run", "bert.runs", b.get("runs", {}))
        for task in fig["tasks"]:
            if task not in config.get("glue", {}):
                unknown_name("bert.fig5.tasks", task, "a GLUE task", "glue", config.get("glue", {}))
            for run in fig["runs"]:
                corpus, needs = config["glue"][task]["bert_corpus"], bert_run_settings(run)["corpus"]
                if corpus != needs:  # the task's BPE and dictionary must be the run's
                    config_error(f"glue.{task}.bert_corpus: '{corpus}', but BERT run {run} is pre-trained on '{needs}'")


def check_bert_phases(run, s):
    """The short first phase (Devlin et al. A.2) needs both its keys and a length below block_size."""
    short, fraction = s.get("short_block_size", 0), s.get("short_fraction", 0)
    if bool(short) != bool(fraction):
        config_error(f"bert.runs.{run}: short_block_size and short_fraction are set together (both 0: one phase)")
    block_size = s.get("block_size", PRETRAIN_DEFAULTS["block_size"])
    if short >= block_size:
        config_error(f"bert.runs.{run}.short_block_size: {short} is not below block_size {block_size}")


check_bert_config()


def bert_targets():
    return ["results/figures/fig5.pdf"] if bert_section().get("fig5") else []


# ---- pre-training ----
def pretrain_bin_dir(wildcards):
    return f"results/data/bert/{bert_run_settings(wildcards.run)['corpus']}/bin"


def pretrain_data(wildcards):
    d = pretrain_bin_dir(wildcards)
    return {"dict": f"{d}/dict.txt", "train": f"{d}/train.pt", "valid": f"{d}/valid.pt"}


def pretrain_flags(wildcards):
    """Only this run's settings reach its pre-training job."""
    s = bert_run_settings(wildcards.run)
    flags = launched_trainer_flags(s, BERT_RUN_ONLY_KEYS)
    return (flags + cap_flags(training_cap().get("bert_rounds", 0), training_cap().get("bert_round_updates", 0))
            + log_flags(wildcards.run))


def bert_rounds(run):
    """The rounds that end in a checkpoint (training_cap.bert_rounds: the first ones only)."""
    s = bert_run_settings(run)
    rounds = s["max_updates"] // s["valid_interval"]
    return range(1, min(rounds, training_cap().get("bert_rounds") or rounds) + 1)


# ---- fine-tuning: one job per run, task and round; its checkpoint is the round's ----
def finetune_inputs(wildcards):
    glue_bin = f"results/data/glue/{wildcards.task}/bin"
    return {"metrics": f"results/pretrain/{wildcards.run}/metrics.csv", "train": f"{glue_bin}/train.pt",
            "dev": f"{glue_bin}/dev.pt"}


def finetune_flags(wildcards):
    f = bert_section()["finetune"]
    grid = " ".join(f"--{key} {' '.join(str(v) for v in f[key])}" for key in ("batch", "lr", "epochs"))
    cap = training_cap().get("finetune_updates")
    return (f"{grid} --seeds {f['seeds']} --max-len {f['max_len']} --warmup-fraction {f.get('warmup_fraction', 0.1)}"
            f" --device {bert_run_settings(wildcards.run).get('device', 'auto')}" + (f" --max-updates {cap}" if cap else ""))


def finetuned_rounds(run):
    every = bert_section()["finetune"].get("every", 1)
    return [r for r in bert_rounds(run) if r % every == 0]


def fig5_summaries():
    fig = bert_section()["fig5"]
    return [f"results/finetune/{run}/{task}/round{r}.summary.csv"
            for run in fig["runs"] for task in fig["tasks"] for r in finetuned_rounds(run)]


def fig5_inputs(wildcards):
    return {"metrics": [f"results/pretrain/{run}/metrics.csv" for run in bert_section()["fig5"]["runs"]],
            "summaries": fig5_summaries()}


def fig5_spec(wildcards):
    spec = dict(bert_section()["fig5"])
    spec["run_settings"] = {run: bert_run_settings(run) for run in spec["runs"]}
    return json.dumps(spec, sort_keys=True)


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
        "exec lnrepro pretrain --data {params.data_dir} --out results/pretrain/{wildcards.run} {params.flags}"
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
        " --metrics {input.metrics} --data results/data/glue/{wildcards.task}/bin --task {wildcards.task}"
        " {params.flags} --threads {threads} --out {output.runs} > {log} 2>&1"


rule plot_fig5:
    input:
        unpack(fig5_inputs),
    output:
        pdf="results/figures/fig5.pdf",
        png=report("results/figures/fig5.png", caption="../report/fig5.rst", category="Figures"),
        csv=report("results/figures/fig5.csv", caption="../report/fig5.rst", category="Tables"),
    params:
        spec=fig5_spec,
        scale_note=scale_note_flag(),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/fig5.log",
    shell:
        "lnrepro figure5 --spec {params.spec:q} --results results --pdf {output.pdf} --csv {output.csv} {params.scale_note} > {log} 2>&1"
