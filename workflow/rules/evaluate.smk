# Decode every epoch checkpoint of a run and score BLEU. Its own rule: a new beam size reruns
# decoding and figures, never training.


def eval_inputs(wildcards):
    corpus = run_corpus(wildcards.run)
    split = decode_settings(corpus)["split"]
    return {
        "metrics": f"results/train/{wildcards.run}/metrics.csv",
        "dict": bin_files(corpus)["dict"],
        "data": bin_files(corpus)[split],
        "reference": f"{data_dir(corpus)}/text/{split}.tgt",
    }


def decode_flags(wildcards):
    corpus = run_corpus(wildcards.run)
    return cli_flags(decode_settings(corpus)) + f" --target-lang {lang(corpus, 'tgt')}"


rule evaluate:
    input:
        unpack(eval_inputs),
    output:
        "results/eval/{run}/bleu.csv",
    params:
        flags=decode_flags,
        data_dir=run_bin_dir,
    threads: threads("evaluate")
    log:
        "logs/eval/{run}.log",
    benchmark:
        "benchmarks/eval/{run}.tsv"
    shell:
        "lnrepro evaluate --metrics {input.metrics} --data {params.data_dir} --reference {input.reference}"
        " {params.flags} --threads {threads} --out {output} > {log} 2>&1"
