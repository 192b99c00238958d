# Raw text -> Moses tokens -> cleaned -> (lowercased) -> train/valid split -> joint BPE -> tensors.
# From tokenization on, files are named by side (src/tgt); the corpus config names the languages.


rule generate_corpus:
    output:
        directory("results/data/{corpus}/raw"),
    wildcard_constraints:
        corpus=generated_corpora(),
    params:
        flags=generator_flags,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/generate.log",
    shell:
        "lnrepro generate {params.flags} --out-dir {output} > {log} 2>&1"


rule tokenize:
    input:
        "results/data/{corpus}/raw",
    output:
        "results/data/{corpus}/tok/{split}.{side}",
    wildcard_constraints:
        split="train|test",
    params:
        raw=raw_file,
        flags=tokenizer_flags,
    threads: threads("data")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/tokenize.{split}.{side}.log",
    benchmark:
        "benchmarks/data/{corpus}/tokenize.{split}.{side}.tsv"
    shell:
        "lnrepro tokenize {params.flags} --threads {threads} --input {params.raw} --output {output} > {log} 2>&1"


rule clean_corpus:
    input:
        src="results/data/{corpus}/tok/train.src",
        tgt="results/data/{corpus}/tok/train.tgt",
    output:
        src="results/data/{corpus}/clean/train.src",
        tgt="results/data/{corpus}/clean/train.tgt",
    params:
        flags=clean_flags,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/clean.log",
    shell:
        "lnrepro clean {params.flags} --src-in {input.src} --tgt-in {input.tgt}"
        " --src-out {output.src} --tgt-out {output.tgt} > {log} 2>&1"


rule lowercase:
    input:
        case_input,
    output:
        "results/data/{corpus}/text/{part}.{side}",
    wildcard_constraints:
        part="trainvalid|test",
    params:
        flag=case_flag,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/lowercase.{part}.{side}.log",
    shell:
        "lnrepro lowercase {params.flag} --input {input} --output {output} > {log} 2>&1"


rule split_valid:
    input:
        src="results/data/{corpus}/text/trainvalid.src",
        tgt="results/data/{corpus}/text/trainvalid.tgt",
    output:
        train_src="results/data/{corpus}/text/train.src",
        train_tgt="results/data/{corpus}/text/train.tgt",
        valid_src="results/data/{corpus}/text/valid.src",
        valid_tgt="results/data/{corpus}/text/valid.tgt",
    params:
        every=valid_every,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/split_valid.log",
    shell:
        "lnrepro split-valid --every {params.every} --inputs {input.src} {input.tgt}"
        " --train-outputs {output.train_src} {output.train_tgt}"
        " --valid-outputs {output.valid_src} {output.valid_tgt} > {log} 2>&1"


rule bpe_learn:
    input:
        src="results/data/{corpus}/text/train.src",
        tgt="results/data/{corpus}/text/train.tgt",
    output:
        "results/data/{corpus}/bpe{merges}/codes",
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.learn.log",
    benchmark:
        "benchmarks/data/{corpus}/bpe{merges}.learn.tsv"
    shell:
        "lnrepro bpe-learn --inputs {input.src} {input.tgt} --merges {wildcards.merges} --codes {output} > {log} 2>&1"


rule bpe_apply:
    input:
        codes="results/data/{corpus}/bpe{merges}/codes",
        text="results/data/{corpus}/text/{split}.{side}",
    output:
        "results/data/{corpus}/bpe{merges}/{split}.{side}",
    wildcard_constraints:
        split="train|valid|test",
    threads: threads("data")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.apply.{split}.{side}.log",
    shell:
        "lnrepro bpe-apply --codes {input.codes} --threads {threads} --input {input.text} --output {output} > {log} 2>&1"


rule binarize:
    input:
        expand("results/data/{{corpus}}/bpe{{merges}}/{split}.{side}", split=["train", "valid", "test"], side=["src", "tgt"]),
    output:
        dict="results/data/{corpus}/bpe{merges}/bin/dict.txt",
        data=expand("results/data/{{corpus}}/bpe{{merges}}/bin/{split}.pt", split=["train", "valid", "test"]),
    params:
        prefix=bpe_prefix,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.binarize.log",
    shell:
        "lnrepro binarize --src-lang src --tgt-lang tgt --train-prefix {params.prefix}/train"
        " --splits train valid test --prefixes {params.prefix}/train {params.prefix}/valid {params.prefix}/test"
        " --out-dir {params.prefix}/bin --dict-out {output.dict} > {log} 2>&1"
