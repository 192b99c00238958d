# The cost plan (lnrepro plan): trainings, updates, FLOPs, GPU-hours and disk of the config's runs
# (checkpoints all kept and after retention: retention.smk's needs), per figure and table. Not in `rule all`: `snakemake results/plan.md` before submitting. It reads
# only the config, so it runs without any data or GPU.

# what the plan reads of a run's resolved settings (run_settings, bert_run_settings)
PLAN_KEYS = ("corpus", "d_model", "ffn_dim", "enc_layers", "dec_layers", "layers", "enc_norm", "dec_norm", "norm",
             "share_all_embeddings", "max_tokens", "update_freq", "gpus", "nodes", "epochs", "max_updates",
             "optimizer", "momentum", "block_size", "nsp", "short_block_size", "short_fraction",
             "short_max_tokens", "valid_interval", "precision")


def plan_settings(settings):
    return {k: v for k, v in settings.items() if k in PLAN_KEYS}


def plan_groups():
    """Each figure's and table's runs: the config's figures, the admin section's tables and figures, BERT's."""
    groups = {fig: [run for panel in spec["panels"] for run in panel["runs"]] for fig, spec in config["figures"].items()}
    a = admin_cfg()
    for section, name in (("table1", "liu_table1"), ("table2", "liu_table2"), ("lr_grid", "liu_fig10")):
        if section in a:
            groups[name] = table_runs(section)
    for section in FIGURE_SECTIONS:
        for fig, spec in a.get(section, {}).items():
            groups[f"liu_{fig}"] = spec["runs"]
    if "fig5" in bert_section():
        runs = bert_section()["fig5"]["runs"]
        groups["fig5"] = runs + [f"{run} fine-tuning" for run in runs if "finetune" in bert_section()]
    return {g: list(dict.fromkeys(runs)) for g, runs in groups.items()}


def plan_run(run):
    """The run's settings and, in a capped config (training_cap), the trainer's cap flags' values."""
    rounds, round_updates = train_cap(run)
    return {**plan_settings(run_settings(run)), "max_rounds": rounds, "max_round_updates": round_updates}


def plan_bert_run(run):
    cap = training_cap()
    return {**plan_settings(bert_run_settings(run)), "max_rounds": cap.get("bert_rounds", 0),
            "max_round_updates": cap.get("bert_round_updates", 0)}


def plan_spec(wildcards):
    return json.dumps({"runs": {run: plan_run(run) for run in config["runs"]},
                       "corpora": config["corpora"], "groups": plan_groups(),
                       "dicts": {corpus: bin_files(corpus)["dict"] for corpus in config["corpora"]},
                       "bert": {"runs": {run: plan_bert_run(run) for run in bert_runs()},
                                "corpora": config.get("bert_corpora", {}), "finetune": bert_section().get("finetune"),
                                "tasks": bert_section().get("fig5", {}).get("tasks", []),
                                "finetune_rounds": {run: len(finetuned_rounds(run)) for run in bert_runs()},
                                "finetune_updates": training_cap().get("finetune_updates", 0)},
                       "checkpoints": {"keep": config.get("checkpoints", {}).get("keep", "all"),
                                       "needs": {run: checkpoint_needs(run) for run in checkpoint_readers()}}},
                      sort_keys=True)


PLAN_FLAGS = {"bf16_tflops": "peak_tflops", "fp32_tflops": "fp32_peak_tflops", "mfu": "mfu"}  # config key -> flag


def throughput_flags(wildcards):
    """The config's `plan:` throughput; lnrepro plan's own defaults (an H100 at 30% MFU) for a key it leaves out."""
    return cli_flags({PLAN_FLAGS[k]: v for k, v in config.get("plan", {}).items()})


rule plan:
    output:
        md="results/plan.md",
        csv="results/plan.csv",
    params:
        spec=plan_spec,
        throughput=throughput_flags,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/plan.log",
    shell:
        "lnrepro plan --spec {params.spec:q} {params.throughput} --md {output.md} --csv {output.csv} > {log} 2>&1"
