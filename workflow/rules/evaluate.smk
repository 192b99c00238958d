# Decode every epoch checkpoint of a run and score BLEU. Its own rule: a new beam size reruns
# decoding and figures, never training.


DECODE_DEFAULTS = {"split": "test", "beam": 5, "lenpen": 1.0, "max_len_a": 0, "max_len_b": 200, "min_len": 1, "batch_sentences": 128}


def decode_settings(corpus, run=None):
    """The corpus's decoding, then what a run family's recipe sets for itself (`runs.RUN.decode`:
    Liu et al.'s IWSLT runs decode with lenpen 1.0 where Xiong et al.'s use 1.2)."""
    run_decode = config["runs"][run].get("decode", {}) if run else {}
    return {**DECODE_DEFAULTS, **corpus_cfg(corpus).get("decode", {}), **run_decode}


def detok_reference(corpus):
    """The raw (untokenized) reference of the decoded split, for detokenized sacreBLEU; None
    unless the corpus asks for it (detok_bleu) and the split exists as raw text."""
    c = corpus_cfg(corpus)
    split = decode_settings(corpus)["split"]
    if not c.get("detok_bleu", False) or (split == "valid" and not has_given_valid(c)):
        return None
    return f"{data_dir(corpus)}/raw/{split}.{c['tgt']}"


def eval_inputs(wildcards):
    corpus = run_corpus(wildcards.run)
    split = decode_settings(corpus)["split"]
    inputs = {
        "metrics": f"results/train/{wildcards.run}/metrics.csv",
        "dict": bin_files(corpus)["dict"],
        "data": bin_files(corpus)[split],
        "reference": f"{data_dir(corpus)}/text/{split}.tgt",
    }
    if detok_reference(corpus):
        inputs["raw"] = f"{data_dir(corpus)}/raw"  # a directory output: its file is passed in the flags
    return inputs


def decode_flags(wildcards):
    corpus = run_corpus(wildcards.run)
    flags = cli_flags(decode_settings(corpus, wildcards.run)) + f" --target-lang {lang(corpus, 'tgt')}"
    # the run's device, not evaluate's default auto: a cpu run's job given a GPU anyway (resources.gpu
    # always) decodes on the CPU, and a cuda run's stops where CUDA is unusable (lnrepro.core.loop.pick_device)
    flags += f" --device {run_settings(wildcards.run).get('device', 'auto')}"
    if detok_reference(corpus):
        flags += f" --detok-reference {detok_reference(corpus)}"
    return flags


def average_flag(wildcards):
    return f"--average-last {wildcards.n}"


rule evaluate:
    input:
        unpack(eval_inputs),
    output:
        "results/eval/{run}/bleu.csv",
    params:
        flags=decode_flags,
        data_dir=run_bin_dir,
    threads: threads("evaluate")
    resources:
        mem_mb=mem_mb("evaluate"),
        runtime=runtime("evaluate"),
        gpu=eval_gpu,
        gpu_model=eval_gpu_model,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/eval/{run}.log",
    benchmark:
        "benchmarks/eval/{run}.tsv"
    shell:
        "lnrepro evaluate --metrics {input.metrics} --data {params.data_dir} --reference {input.reference}"
        " {params.flags} --threads {threads} --out {output} > {log} 2>&1"


# The BLEU of the average of a run's last N epoch checkpoints (the Admin recipes: N = 10); the
# per-epoch bleu.csv and its figures are untouched.
rule evaluate_averaged:
    input:
        unpack(eval_inputs),
    output:
        "results/eval/{run}/bleu_avg{n}.csv",
    wildcard_constraints:
        n="[0-9]+",
    params:
        flags=decode_flags,
        average=average_flag,
        data_dir=run_bin_dir,
    threads: threads("evaluate")
    resources:  # evaluate's: it decodes on the run's device (decode_flags) as evaluate does
        mem_mb=mem_mb("evaluate"),
        runtime=runtime("evaluate"),
        gpu=eval_gpu,
        gpu_model=eval_gpu_model,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/eval/{run}_avg{n}.log",
    benchmark:
        "benchmarks/eval/{run}_avg{n}.tsv"
    shell:
        "lnrepro evaluate --metrics {input.metrics} --data {params.data_dir} --reference {input.reference}"
        " {params.flags} {params.average} --threads {threads} --out {output} > {log} 2>&1"
