# Raw text -> Moses tokens -> cleaned -> (lowercased) -> train/valid split -> joint BPE -> tensors.
# From tokenization on, files are named by side (src/tgt); the corpus config names the languages.
#
# results/data/{corpus}/raw/{split}.{lang} comes from the corpus's source: generate_corpus,
# prepare_iwslt14 / prepare_wmt14 (from the unpacked archives, download.smk) or prepare_local.
# Routes, chosen per corpus by wildcard constraints (helpers below):
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


def corpus_archive_dirs(wildcards):
    return [f"resources/extracted/{archive_stem(archive_name(a))}" for a in corpus_cfg(wildcards.corpus)["archives"]]


# ---- which route a corpus takes ----
def corpora_where(test):
    return names_regex([n for n, c in config["corpora"].items() if test(c)]) or "NONE"


def source_corpora(source):
    return corpora_where(lambda c: c["source"] == source)


def generated_corpora():
    return source_corpora("generated")


def pretokenized_corpora():
    return corpora_where(lambda c: c.get("tokenized", False))


def split_valid_corpora():
    return corpora_where(lambda c: not has_given_valid(c))


def clean_after_bpe_corpora():
    return corpora_where(lambda c: c.get("clean_after_bpe", False))


def lang_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    return f"--src {c['src']} --tgt {c['tgt']}"


def wmt_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    flags = f"--src {c['src']} --tgt {c['tgt']} --test-set {shlex.quote(c.get('test_set', 'newstest2014'))}"
    if c.get("train_corpora"):
        flags += " --train-corpora " + " ".join(shlex.quote(x) for x in c["train_corpora"])
    if c.get("valid_set"):
        flags += f" --valid-set {shlex.quote(c['valid_set'])}"
    return flags


def local_inputs(wildcards):
    files = corpus_cfg(wildcards.corpus)["files"]
    return {f"{split}_{side}": files[split][side] for split in ("train", "valid", "test") if split in files
            for side in ("src", "tgt")}


def local_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    files = c["files"]
    flags = f"--src-lang {c['src']} --tgt-lang {c['tgt']}"
    for split in ("train", "valid", "test"):
        if split in files:
            flags += f" --{split} {shlex.quote(files[split]['src'])} {shlex.quote(files[split]['tgt'])}"
    return flags


def generator_flags(wildcards):
    g = corpus_cfg(wildcards.corpus)["generator"]
    return f"--task {g['task']} --seed {g.get('seed', 1)} --n-train {g['n_train']} --n-test {g['n_test']}"


def raw_file(wildcards):
    return f"{data_dir(wildcards.corpus)}/raw/{wildcards.split}.{lang(wildcards.corpus, wildcards.side)}"


# ---- tokenize: a translation corpus's tok/{split}.{side}; as the corpora bert/NAME and glue/TASK,
# a BERT corpus's tok.txt (of its sentences.txt) and a GLUE task's tok/{split}.{sentence1,sentence2}
# (of its raw/ columns). The output is tok{file}: file is /{split}.{side} or .txt ----
def tokenize_corpora():
    return names_regex([n for n, c in config["corpora"].items() if not c.get("tokenized", False)]
                       + [f"bert/{name}" for name in config.get("bert_corpora", {})]
                       + [f"glue/{task}" for task in config.get("glue", {})]) or "NONE"


def tokenize_text(wildcards):
    """The file tokenized: the raw file of a translation corpus's split and language, a BERT corpus's
    sentences, a GLUE task's raw column."""
    d = data_dir(wildcards.corpus)
    if wildcards.corpus in config["corpora"]:
        split, side = wildcards.file[1:].split(".")
        return f"{d}/raw/{split}.{lang(wildcards.corpus, side)}"
    if wildcards.corpus.startswith("bert/"):
        return f"{d}/sentences.txt"
    return f"{d}/raw{wildcards.file}"


def tokenize_input(wildcards):
    """tokenize_text, or a translation corpus's raw/ folder, which its rule writes as a whole."""
    if wildcards.corpus in config["corpora"]:
        return f"{data_dir(wildcards.corpus)}/raw"
    return tokenize_text(wildcards)


def bert_tokenizer_flags(bcorpus):
    """Moses as Xiong et al. (supplementary 1.3): normalize, tokenize, lowercase; no XML escaping."""
    lowercase = config["bert_corpora"][bcorpus].get("lowercase", True)
    return "--lang en --no-escape --normalize-punctuation" + (" --lowercase" if lowercase else "")


def tokenizer_flags(wildcards):
    """A translation corpus's per side and split; a GLUE task takes its pre-training corpus's: that
    corpus's vocabulary must cover the task's text."""
    if wildcards.corpus not in config["corpora"]:
        kind, name = wildcards.corpus.split("/")
        return bert_tokenizer_flags(name if kind == "bert" else config["glue"][name]["bert_corpus"])
    c = corpus_cfg(wildcards.corpus)
    split, side = wildcards.file[1:].split(".")
    flags = f"--lang {lang(wildcards.corpus, side)}" + (" --aggressive-dash" if c.get("aggressive_dash") else "")
    if c.get("split_final_period"):
        flags += " --split-final-period"
    # prepare-wmt14en2de.sh normalizes train only; Transformer-Clinic's wmt14en-de.sh valid too
    if (c.get("normalize_train") and split == "train") or (c.get("normalize_valid") and split == "valid"):
        flags += " --normalize-punctuation --remove-non-printing"
    return flags


def clean_flags(wildcards):
    c = {**CLEAN_DEFAULTS, **corpus_cfg(wildcards.corpus).get("clean", {})}
    return f"--min {c['min']} --max {c['max']} --ratio {c['ratio']}"


def case_input(wildcards):
    """Training text is cleaned first, unless the corpus cleans after BPE; valid/test never are."""
    d = data_dir(wildcards.corpus)
    if wildcards.part in ("trainvalid", "train"):
        stage = "tok" if corpus_cfg(wildcards.corpus).get("clean_after_bpe", False) else "clean"
        return f"{d}/{stage}/train.{wildcards.side}"
    return f"{d}/tok/{wildcards.part}.{wildcards.side}"


def case_flag(wildcards):
    return "" if corpus_cfg(wildcards.corpus).get("lowercase", False) else "--keep-case"


def valid_every(wildcards):
    return corpus_cfg(wildcards.corpus).get("valid_every", 23)


def bpe_files(corpus, merges):
    d = f"{data_dir(corpus)}/bpe{merges}"
    return [f"{d}/{split}.{side}" for split in ("train", "valid", "test") for side in ("src", "tgt")]


def binarize_inputs(wildcards):
    """The BPE'd splits, and the count check where the corpus states the recipe's counts."""
    files = bpe_files(wildcards.corpus, wildcards.merges)
    if corpus_cfg(wildcards.corpus).get("expected_counts"):
        files.append(f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}/counts.tsv")
    return files


def count_inputs(wildcards):
    d = f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}"
    return {split: f"{d}/{split}.src" for split in ("train", "valid", "test")}


def count_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    d = f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}"
    expect = " ".join(f"{k}={v}" for k, v in sorted(c.get("expected_counts", {}).items()))
    files = " ".join(f"{split}={d}/{split}.src" for split in ("train", "valid", "test"))
    source = shlex.quote(f"{wildcards.corpus} ({c['source']})")
    return f"--source {source} --files {files} --expect {expect}"


def bpe_prefix(wildcards):
    return f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}"


# ---- BPE: a translation corpus's joint codes, or a BERT corpus's (results/data/bert/NAME) ----
def bpe_corpora():
    return names_regex(list(config["corpora"]) + [f"bert/{name}" for name in config.get("bert_corpora", {})])


def bpe_learn_inputs(wildcards):
    d = data_dir(wildcards.corpus)
    if wildcards.corpus in config["corpora"]:
        return [f"{d}/text/train.src", f"{d}/text/train.tgt"]
    return [f"{d}/text/train.txt"]


rule generate_corpus:
    output:
        directory("results/data/{corpus}/raw"),
    wildcard_constraints:
        corpus=generated_corpora(),
    params:
        flags=generator_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/generate.log",
    shell:
        "lnrepro generate {params.flags} --out-dir {output} > {log} 2>&1"


rule prepare_iwslt14:
    input:
        corpus_archive_dirs,
    output:
        directory("results/data/{corpus}/raw"),
    wildcard_constraints:
        corpus=source_corpora("iwslt14"),
    params:
        langs=lang_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/prepare_iwslt14.log",
    shell:
        "lnrepro prepare-iwslt14 --roots {input} {params.langs} --out-dir {output} > {log} 2>&1"


rule prepare_wmt14:
    input:
        corpus_archive_dirs,
    output:
        directory("results/data/{corpus}/raw"),
    wildcard_constraints:
        corpus=source_corpora("wmt14"),
    params:
        flags=wmt_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/prepare_wmt14.log",
    benchmark:
        "benchmarks/data/{corpus}/prepare_wmt14.tsv"
    shell:
        "lnrepro prepare-wmt14 --roots {input} {params.flags} --out-dir {output} > {log} 2>&1"


rule prepare_local:
    input:
        unpack(local_inputs),
    output:
        directory("results/data/{corpus}/raw"),
    wildcard_constraints:
        corpus=source_corpora("local"),
    params:
        flags=local_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/prepare_local.log",
    shell:
        "lnrepro prepare-local {params.flags} --out-dir {output} > {log} 2>&1"


rule copy_tokenized:
    input:
        "results/data/{corpus}/raw",
    output:
        "results/data/{corpus}/tok/{split}.{side}",
    wildcard_constraints:
        corpus=pretokenized_corpora(),
        split="train|valid|test",
    params:
        raw=raw_file,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/copy_tokenized.{split}.{side}.log",
    shell:
        "lnrepro copy-text --input {params.raw} --output {output} > {log} 2>&1"


rule tokenize:
    input:
        tokenize_input,
    output:
        "results/data/{corpus}/tok{file}",
    wildcard_constraints:
        corpus=tokenize_corpora(),
        file="\\.txt|/(?:train|valid|test|dev)\\.(?:src|tgt|sentence1|sentence2)",
    params:
        text=tokenize_text,
        flags=tokenizer_flags,
    threads: threads("data")
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/tokenize{file}.log",
    benchmark:
        "benchmarks/data/{corpus}/tokenize{file}.tsv"
    shell:
        "lnrepro tokenize {params.flags} --threads {threads} --input {params.text} --output {output} > {log} 2>&1"


rule clean_corpus:
    input:
        src="results/data/{corpus}/tok/train.src",
        tgt="results/data/{corpus}/tok/train.tgt",
    output:
        src="results/data/{corpus}/clean/train.src",
        tgt="results/data/{corpus}/clean/train.tgt",
    params:
        flags=clean_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
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
        part="trainvalid|train|valid|test",
    params:
        flag=case_flag,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
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
    wildcard_constraints:
        corpus=split_valid_corpora(),
    params:
        every=valid_every,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
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
        bpe_learn_inputs,
    output:
        "results/data/{corpus}/bpe{merges}/codes",
    wildcard_constraints:
        corpus=bpe_corpora(),
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.learn.log",
    benchmark:
        "benchmarks/data/{corpus}/bpe{merges}.learn.tsv"
    shell:
        "lnrepro bpe-learn --inputs {input} --merges {wildcards.merges} --codes {output} > {log} 2>&1"


rule bpe_apply:
    input:
        codes="results/data/{corpus}/bpe{merges}/codes",
        text="results/data/{corpus}/text/{split}.{side}",
    output:
        "results/data/{corpus}/bpe{merges}/{split}.{side}",
    wildcard_constraints:
        corpus=bpe_corpora(),
        split="train|valid|test",
        side="src|tgt|txt",  # txt: a BERT corpus's text (train, valid)
    threads: threads("data")
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.apply.{split}.{side}.log",
    benchmark:
        "benchmarks/data/{corpus}/bpe{merges}.apply.{split}.{side}.tsv"
    shell:
        "lnrepro bpe-apply --codes {input.codes} --threads {threads} --input {input.text} --output {output} > {log} 2>&1"


rule bpe_apply_uncleaned:
    input:
        codes="results/data/{corpus}/bpe{merges}/codes",
        text="results/data/{corpus}/text/{split}.{side}",
    output:
        "results/data/{corpus}/bpe{merges}/uncleaned/{split}.{side}",
    wildcard_constraints:
        corpus=clean_after_bpe_corpora(),
        split="train|valid",
    threads: threads("data")
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.apply.uncleaned.{split}.{side}.log",
    shell:
        "lnrepro bpe-apply --codes {input.codes} --threads {threads} --input {input.text} --output {output} > {log} 2>&1"


rule clean_bpe:
    input:
        src="results/data/{corpus}/bpe{merges}/uncleaned/{split}.src",
        tgt="results/data/{corpus}/bpe{merges}/uncleaned/{split}.tgt",
    output:
        src="results/data/{corpus}/bpe{merges}/{split}.src",
        tgt="results/data/{corpus}/bpe{merges}/{split}.tgt",
    wildcard_constraints:
        corpus=clean_after_bpe_corpora(),
        split="train|valid",
    params:
        flags=clean_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.clean.{split}.log",
    shell:
        "lnrepro clean {params.flags} --src-in {input.src} --tgt-in {input.tgt}"
        " --src-out {output.src} --tgt-out {output.tgt} > {log} 2>&1"


rule check_counts:
    input:
        unpack(count_inputs),
    output:
        "results/data/{corpus}/bpe{merges}/counts.tsv",
    params:
        flags=count_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.counts.log",
    shell:
        "lnrepro check-counts {params.flags} --out {output} --log {log}"


rule binarize:
    input:
        binarize_inputs,
    output:
        dict="results/data/{corpus}/bpe{merges}/bin/dict.txt",
        data=expand("results/data/{{corpus}}/bpe{{merges}}/bin/{split}.pt", split=["train", "valid", "test"]),
    params:
        prefix=bpe_prefix,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/{corpus}/bpe{merges}.binarize.log",
    shell:
        "lnrepro binarize --src-lang src --tgt-lang tgt --train-prefix {params.prefix}/train"
        " --splits train valid test --prefixes {params.prefix}/train {params.prefix}/valid {params.prefix}/test"
        " --out-dir {params.prefix}/bin --dict-out {output.dict} > {log} 2>&1"
