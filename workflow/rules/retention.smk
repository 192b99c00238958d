# Bounded disk (`checkpoints: {keep: needed}`): once every step that reads a run's epoch checkpoints
# has finished, delete those no configured step reads again (lnrepro retain; the epochs:
# lnrepro.training.retain.needed_epochs, also what the cost plan counts). Here: which steps read a
# run's checkpoints (its consumers, whose outputs the prune job waits for) and what each needs.
# keep: all (the default) adds no job and deletes nothing.
import functools
import pathlib
import types


def keep_all_checkpoints():
    return config.get("checkpoints", {}).get("keep", "all") == "all"


def path_run(path):
    """results/<stage>/<run>/...: the run."""
    return pathlib.PurePosixPath(path).parts[2]


def trained_dir(run):
    return f"results/{'pretrain' if run in bert_runs() else 'train'}/{run}"


def claim_files():
    """What the claims table reads (its runs' metrics and BLEU), where this config has one."""
    return claims_inputs(None) if claims_targets() else []


def table_sections():
    """The admin tables and lr grid this config has: each reads its runs' metrics and BLEU."""
    return [section for section in ("table1", "table2", "lr_grid") if section in admin_cfg()]


def eval_files():
    """Every results/eval/ file a target of this config reads: figures' BLEU panels, claims, tables."""
    files = [f for fig in config["figures"] for f in figure_inputs(types.SimpleNamespace(fig=fig))["bleu"]]
    files += [f for f in claim_files() if f.startswith("results/eval/")]
    files += [f for section in table_sections() for f in table_inputs(section)["bleu"]]
    return list(dict.fromkeys(files))


def admin_figure_runs(section):
    """{fig: its runs} of an admin figure section (layer_dependency, update_norms)."""
    return {fig: spec["runs"] for fig, spec in admin_cfg().get(section, {}).items()}


def trained_runs():
    """The runs whose training this config's targets ask for (their metrics.csv is read)."""
    runs = [run for fig in config["figures"] for run in figure_runs(fig)]
    runs += [path_run(f) for f in claim_files() if os.path.basename(f) == "metrics.csv"]
    runs += [run for section in table_sections() for run in table_runs(section)]
    runs += [run for section in FIGURE_SECTIONS for runs_ in admin_figure_runs(section).values() for run in runs_]
    runs += [probe_cfg()["run"]] if config.get("gradient_probe") else []
    runs += bert_section()["fig5"]["runs"] if bert_section().get("fig5") else []
    return list(dict.fromkeys(runs))


def merged_pairs(have, firsts):
    """The update-norm pairs of two figures of one run: their first epochs, or "all" where one draws every pair."""
    return "all" if firsts is None or have == "all" else sorted({*have, *firsts})


@functools.cache
def checkpoint_readers():
    """{run: (the outputs of the steps that read its checkpoints, what they need kept)}."""
    readers = {run: ([], {}) for run in trained_runs()}
    for f in eval_files():  # results/eval/{run}/bleu.csv or bleu_avg{n}.csv
        run = path_run(f)
        readers[run][0].append(f)
        if os.path.basename(f).startswith("bleu_avg"):
            readers[run][1]["average_last"] = averaged_checkpoints(run)
    if config.get("gradient_probe"):
        run = probe_cfg()["run"]
        readers[run][0].append(probe_files("grads")[-1])  # the after-warm-up probe
        readers[run][1]["after_updates"] = probed_warmup(run)
    for fig, runs in admin_figure_runs("layer_dependency").items():
        for run in runs:
            readers[run][0].append(f"results/figures/liu_{fig}.pdf")
            readers[run][1]["last"] = True
    for fig, runs in admin_figure_runs("update_norms").items():
        firsts = figure_cfg("update_norms", fig).get("epochs")  # null: every pair
        for run in runs:
            readers[run][0].append(f"results/figures/liu_{fig}.pdf")
            readers[run][1]["update_pairs"] = merged_pairs(readers[run][1].get("update_pairs", []), firsts)
    if bert_section().get("fig5") and "finetune" in bert_section():
        for f in fig5_summaries():  # results/finetune/{run}/{task}/round{r}.summary.csv
            readers[path_run(f)][0].append(f)
        for run in bert_section()["fig5"]["runs"]:
            readers[run][1]["rounds"] = finetuned_rounds(run)
    return {run: (list(dict.fromkeys(files)), needs) for run, (files, needs) in readers.items()}


def checkpoint_needs(run):
    return checkpoint_readers()[run][1]


def retention_targets():
    return [] if keep_all_checkpoints() else [f"{trained_dir(run)}/retained.json" for run in checkpoint_readers()]


def retain_inputs(wildcards):
    return {"metrics": f"{trained_dir(wildcards.run)}/metrics.csv", "readers": checkpoint_readers()[wildcards.run][0]}


def retain_needs(wildcards):
    return json.dumps(checkpoint_needs(wildcards.run), sort_keys=True)


# deleting a run's files takes milliseconds: beside Snakemake, not a queued cluster job
localrules:
    retain_checkpoints,


rule retain_checkpoints:
    input:
        unpack(retain_inputs),
    output:
        "results/{stage}/{run}/retained.json",
    wildcard_constraints:
        stage="train|pretrain",
    params:
        needs=retain_needs,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/retain/{stage}/{run}.log",
    shell:
        "lnrepro retain --metrics {input.metrics} --needs {params.needs:q} --manifest {output} > {log} 2>&1"
