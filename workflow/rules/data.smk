# Raw text -> Moses tokens -> cleaned -> (lowercased) -> train/valid split -> joint BPE -> tensors.
# From tokenization on, files are named by side (src/tgt); the corpus config names the languages.
#
# results/data/{corpus}/raw/{split}.{lang} comes from the corpus's source: generate_corpus,
# prepare_iwslt14 / prepare_wmt14 (from the unpacked archives, download.smk) or prepare_local.
# Routes, chosen per corpus by wildcard constraints (lnrepro.pipeline.data):
#   every corpus      tokenize (or copy_tokenized: `tokenized: true`) -> tok/{train,test}
#   IWSLT recipe      clean_corpus (tok/train) -> lowercase -> split_valid (every Nth) -> BPE
#   clean_after_bpe   lowercase (no cleaning) -> split_valid -> BPE -> clean_bpe (train, valid)
#   given valid set   (local files.valid, WMT valid_set) tok/valid -> text/valid, no split_valid
# and check_counts compares the final counts with `expected_counts` (a warning, not an error).
# tokenize, bpe_learn and bpe_apply serve the BERT pre-training corpora (bert_data.smk) too: the same
# commands on their text, results/data/bert/NAME/{sentences.txt,text/{train,valid}.txt}; tokenize
# serves the GLUE tasks' columns too (results/data/glue/TASK/raw/{train,dev}.{sentence1,sentence2}).


ruleorder: split_valid > lowercase  # text/{train,valid}: split off, unless the corpus has its own valid set
ruleorder: clean_bpe > bpe_apply  # bpe{N}/{train,valid}: cleaned after BPE where the corpus says so


rule generate_corpus:
    output:
        directory(paths.data_dir("{corpus}", "raw")),
    wildcard_constraints:
        corpus=P.data.generated_corpora(),
    params:
        flags=P.data.generator_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/generate.log",
    shell:
        "lnrepro generate {params.flags} --out-dir {output:q} > {log:q} 2>&1"


rule prepare_iwslt14:
    input:
        P.data.corpus_archive_dirs,
    output:
        directory(paths.data_dir("{corpus}", "raw")),
    wildcard_constraints:
        corpus=P.data.source_corpora("iwslt14"),
    params:
        langs=P.data.lang_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/prepare_iwslt14.log",
    shell:
        "lnrepro prepare-iwslt14 --roots {input:q} {params.langs} --out-dir {output:q} > {log:q} 2>&1"


rule prepare_wmt14:
    input:
        P.data.corpus_archive_dirs,
    output:
        directory(paths.data_dir("{corpus}", "raw")),
    wildcard_constraints:
        corpus=P.data.source_corpora("wmt14"),
    params:
        flags=P.data.wmt_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/prepare_wmt14.log",
    benchmark:
        "benchmarks/data/{corpus}/prepare_wmt14.tsv"
    shell:
        "lnrepro prepare-wmt14 --roots {input:q} {params.flags} --out-dir {output:q} > {log:q} 2>&1"


rule prepare_local:
    input:
        unpack(P.data.local_inputs),
    output:
        directory(paths.data_dir("{corpus}", "raw")),
    wildcard_constraints:
        corpus=P.data.source_corpora("local"),
    params:
        flags=P.data.local_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/prepare_local.log",
    shell:
        "lnrepro prepare-local {params.flags} --out-dir {output:q} > {log:q} 2>&1"


rule copy_tokenized:
    input:
        paths.data_dir("{corpus}", "raw"),
    output:
        paths.data_dir("{corpus}", "tok/{split}.{side}"),
    wildcard_constraints:
        corpus=P.data.pretokenized_corpora(),
        split="train|valid|test",
    params:
        raw=P.data.raw_file,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/copy_tokenized.{split}.{side}.log",
    shell:
        "lnrepro copy-text --input {params.raw:q} --output {output:q} > {log:q} 2>&1"


rule tokenize:
    input:
        P.data.tokenize_input,
    output:
        paths.data_dir("{corpus}", "tok{file}"),
    wildcard_constraints:
        corpus=P.data.tokenize_corpora(),
        file="\\.txt|/(?:train|valid|test|dev)\\.(?:src|tgt|sentence1|sentence2)",
    params:
        text=P.data.tokenize_text,
        flags=P.data.tokenizer_flags,
    threads: P.resources.threads("data")
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/tokenize{file}.log",
    benchmark:
        "benchmarks/data/{corpus}/tokenize{file}.tsv"
    shell:
        "lnrepro tokenize {params.flags} --threads {threads} --input {params.text:q} --output {output:q} > {log:q} 2>&1"


rule clean_corpus:
    input:
        src=paths.data_dir("{corpus}", "tok/train.src"),
        tgt=paths.data_dir("{corpus}", "tok/train.tgt"),
    output:
        src=paths.data_dir("{corpus}", "clean/train.src"),
        tgt=paths.data_dir("{corpus}", "clean/train.tgt"),
    params:
        flags=P.data.clean_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/clean.log",
    shell:
        "lnrepro clean {params.flags} --src-in {input.src:q} --tgt-in {input.tgt:q}"
        " --src-out {output.src:q} --tgt-out {output.tgt:q} > {log:q} 2>&1"


rule lowercase:
    input:
        P.data.case_input,
    output:
        paths.data_dir("{corpus}", "text/{part}.{side}"),
    wildcard_constraints:
        part="trainvalid|train|valid|test",
    params:
        flag=P.data.case_flag,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/lowercase.{part}.{side}.log",
    shell:
        "lnrepro lowercase {params.flag} --input {input:q} --output {output:q} > {log:q} 2>&1"


rule split_valid:
    input:
        src=paths.data_dir("{corpus}", "text/trainvalid.src"),
        tgt=paths.data_dir("{corpus}", "text/trainvalid.tgt"),
    output:
        train_src=paths.data_dir("{corpus}", "text/train.src"),
        train_tgt=paths.data_dir("{corpus}", "text/train.tgt"),
        valid_src=paths.data_dir("{corpus}", "text/valid.src"),
        valid_tgt=paths.data_dir("{corpus}", "text/valid.tgt"),
    wildcard_constraints:
        corpus=P.data.split_valid_corpora(),
    params:
        every=P.data.valid_every,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/split_valid.log",
    shell:
        "lnrepro split-valid --every {params.every} --inputs {input.src:q} {input.tgt:q}"
        " --train-outputs {output.train_src:q} {output.train_tgt:q}"
        " --valid-outputs {output.valid_src:q} {output.valid_tgt:q} > {log:q} 2>&1"


rule bpe_learn:
    input:
        P.data.bpe_learn_inputs,
    output:
        paths.data_dir("{corpus}", "bpe{merges}/codes"),
    wildcard_constraints:
        corpus=P.data.bpe_corpora(),
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.learn.log",
    benchmark:
        "benchmarks/data/{corpus}/bpe{merges}.learn.tsv"
    shell:
        "lnrepro bpe-learn --inputs {input:q} --merges {wildcards.merges:q} --codes {output:q} > {log:q} 2>&1"


rule bpe_apply:
    input:
        codes=paths.data_dir("{corpus}", "bpe{merges}/codes"),
        text=paths.data_dir("{corpus}", "text/{split}.{side}"),
    output:
        paths.data_dir("{corpus}", "bpe{merges}/{split}.{side}"),
    wildcard_constraints:
        corpus=P.data.bpe_corpora(),
        split="train|valid|test",
        side="src|tgt|txt",  # txt: a BERT corpus's text (train, valid)
    threads: P.resources.threads("data")
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.apply.{split}.{side}.log",
    benchmark:
        "benchmarks/data/{corpus}/bpe{merges}.apply.{split}.{side}.tsv"
    shell:
        "lnrepro bpe-apply --codes {input.codes:q} --threads {threads} --input {input.text:q} --output {output:q} > {log:q} 2>&1"


rule bpe_apply_uncleaned:
    input:
        codes=paths.data_dir("{corpus}", "bpe{merges}/codes"),
        text=paths.data_dir("{corpus}", "text/{split}.{side}"),
    output:
        paths.data_dir("{corpus}", "bpe{merges}/uncleaned/{split}.{side}"),
    wildcard_constraints:
        corpus=P.data.clean_after_bpe_corpora(),
        split="train|valid",
    threads: P.resources.threads("data")
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.apply.uncleaned.{split}.{side}.log",
    shell:
        "lnrepro bpe-apply --codes {input.codes:q} --threads {threads} --input {input.text:q} --output {output:q} > {log:q} 2>&1"


rule clean_bpe:
    input:
        src=paths.data_dir("{corpus}", "bpe{merges}/uncleaned/{split}.src"),
        tgt=paths.data_dir("{corpus}", "bpe{merges}/uncleaned/{split}.tgt"),
    output:
        src=paths.data_dir("{corpus}", "bpe{merges}/{split}.src"),
        tgt=paths.data_dir("{corpus}", "bpe{merges}/{split}.tgt"),
    wildcard_constraints:
        corpus=P.data.clean_after_bpe_corpora(),
        split="train|valid",
    params:
        flags=P.data.clean_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.clean.{split}.log",
    shell:
        "lnrepro clean {params.flags} --src-in {input.src:q} --tgt-in {input.tgt:q}"
        " --src-out {output.src:q} --tgt-out {output.tgt:q} > {log:q} 2>&1"


rule check_counts:
    input:
        unpack(P.data.count_inputs),
    output:
        paths.data_dir("{corpus}", "bpe{merges}/counts.tsv"),
    params:
        flags=P.data.count_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.counts.log",
    shell:
        "lnrepro check-counts {params.flags} --out {output:q} --log {log:q}"


# One joined dictionary (bin/dict.txt: fairseq-preprocess --joined-dictionary) or one per side
# (bin_separate/dict.{src,tgt}.txt), as a run's joined_dictionary asks; the same BPE'd text either way.
rule binarize:
    input:
        P.data.binarize_inputs,
    output:
        dict=paths.data_dir("{corpus}", "bpe{merges}/bin/dict.txt"),
        data=expand(paths.data_dir("{{corpus}}", "bpe{{merges}}/bin/{split}.pt"), split=["train", "valid", "test"]),
    params:
        prefix=P.data.bpe_prefix,
        bin="bin",
        dictionaries=P.data.joined_dictionary_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.binarize.log",
    shell:
        "lnrepro binarize --src-lang src --tgt-lang tgt --train-prefix {params.prefix:q}/train"
        " --splits train valid test --prefixes {params.prefix:q}/train {params.prefix:q}/valid {params.prefix:q}/test"
        " --out-dir {params.prefix:q}/{params.bin} {params.dictionaries} > {log:q} 2>&1"


use rule binarize as binarize_separate with:
    output:
        dicts=expand(paths.data_dir("{{corpus}}", "bpe{{merges}}/bin_separate/{name}"), name=SEPARATE_DICTS),
        data=expand(paths.data_dir("{{corpus}}", "bpe{{merges}}/bin_separate/{split}.pt"), split=["train", "valid", "test"]),
    params:
        prefix=P.data.bpe_prefix,
        bin="bin_separate",
        dictionaries="--separate-dictionaries",
    log:
        "logs/data/{corpus}/bpe{merges}.binarize_separate.log",
