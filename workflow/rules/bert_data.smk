# BERT pre-training corpus and GLUE MRPC/RTE (Xiong et al. 2020, supplementary 1.2-1.3), from the
# optional `bert_corpora:` and `glue:` sections; their downloads (the Wikipedia dump, RTE.zip,
# Microsoft's MRPC files) go through download_archive (download.smk). The pre-training corpus,
# generated or real, takes one chain:
#   documents (generate_bert_documents | prepare_wikipedia + prepare_books: docs text)
#   -> split_sentences (spaCy) -> tokenize (data.smk; Moses normalize, tokenize, lowercase)
#   -> split_bert_documents (199:1 by document) -> bpe_learn (data.smk; train) -> bpe_apply (data.smk)
#   -> binarize_bert: results/data/bert/{bcorpus}/bin/{dict.txt,train.pt,valid.pt}
# A GLUE task: generate_glue | RTE.zip unpacked | Microsoft's MRPC files -> prepare_glue (train/dev,
# labels 0/1) -> tokenize (data.smk), bpe_apply_glue with its pre-training corpus's tokenization
# and BPE codes -> binarize_glue with that corpus's dictionary: results/data/glue/{glue_task}/bin/{split}.pt


RESERVED_CORPUS_NAMES = ("bert", "glue")  # results/data/bert|glue/ hold the BERT data


def bert_corpora():
    return config.get("bert_corpora", {})


def glue_tasks():
    return config.get("glue", {})


def check_bert_data_config():
    """Cross-references the schema cannot express; fails before any job runs."""
    for name in RESERVED_CORPUS_NAMES:
        if name in config["corpora"]:
            config_error(f"corpora.{name}: the name is reserved (results/data/{name}/ holds BERT data)")
    for name, c in bert_corpora().items():
        if c["source"] == "generated" and "generator" not in c:
            config_error(f"bert_corpora.{name}: source 'generated' needs a 'generator' entry")
        if c["source"] == "real" and not (c.get("wikipedia") or c.get("books_dir")):
            config_error(f"bert_corpora.{name}: source 'real' needs 'wikipedia' or 'books_dir' (or both)")
        if c["source"] == "real" and c.get("books_dir"):
            note_missing_input(f"bert_corpora.{name}.books_dir", c["books_dir"], "prepare_books will stop there "
                               "until it holds the books' text files (config/README.md: bert_corpora)")
    for task, g in glue_tasks().items():
        if g["bert_corpus"] not in bert_corpora():
            unknown_name(f"glue.{task}.bert_corpus", g["bert_corpus"], "a BERT corpus", "bert_corpora",
                         bert_corpora())
        needs = {"generated": ["generator"], "msr": ["msr_train", "dev_ids"]}.get(g["source"], [])
        for key in needs:
            if key not in g:
                config_error(f"glue.{task}: source '{g['source']}' needs '{key}'")
        if g["source"] == "msr" and task != "mrpc":
            config_error(f"glue.{task}: source 'msr' (Microsoft's files) is MRPC's only")
        if g["source"] == "glue" and ("archive" in g) == ("dir" in g):
            config_error(f"glue.{task}: source 'glue' needs either 'archive' (a zip to download) or 'dir'")
        if "archive" in g and not archive_name(g["archive"]).endswith(ARCHIVE_SUFFIXES):
            config_error(f"glue.{task}.archive: '{archive_name(g['archive'])}' is not one of "
                         f"{', '.join(ARCHIVE_SUFFIXES)}; set 'file' to name it")


check_bert_data_config()


wildcard_constraints:
    bcorpus=names_regex(bert_corpora()) or "NO_BERT_CORPORA",
    glue_task=names_regex(glue_tasks()) or "NO_GLUE_TASKS",
    glue_column="sentence1|sentence2",


# ---- pre-training corpus ----------------------------------------------------------------------
def bert_cfg(wildcards):
    return bert_corpora()[wildcards.bcorpus]


def bert_source_corpora(source):
    return names_regex([n for n, c in bert_corpora().items() if c["source"] == source]) or "NONE"


def bert_generator_flags(wildcards):
    g = bert_cfg(wildcards)["generator"]
    return f"--seed {g.get('seed', 1)} --n-train {g['n_docs']}"


def downloaded(entry):
    """download_archive's link to the verified file in resources/downloads/ (download.smk)."""
    return f"resources/verified/{archive_name(entry)}"


def wikipedia_dump(wildcards):
    return downloaded(bert_cfg(wildcards)["wikipedia"])


def wikipedia_flags(wildcards):
    max_docs = bert_cfg(wildcards).get("max_wiki_docs")
    return f"--max-docs {max_docs}" if max_docs else ""


def books_dir(wildcards):
    return bert_cfg(wildcards)["books_dir"]


def books_input(wildcards):
    """The books folder, as an input once it exists (adding books then reruns the chain); before
    that the chain still plans (snakemake -n) and prepare_books says where to put the books."""
    return [books_dir(wildcards)] if os.path.isdir(books_dir(wildcards)) else []


def bert_document_files(wildcards):
    """The docs text files of the corpus, in the order their documents are concatenated."""
    c, d = bert_cfg(wildcards), f"results/data/bert/{wildcards.bcorpus}"
    if c["source"] == "generated":
        return [f"{d}/generated/docs.txt"]
    return [f"{d}/docs/{part}.txt" for part, key in (("wikipedia", "wikipedia"), ("books", "books_dir")) if c.get(key)]


def split_flags(wildcards):
    c = bert_cfg(wildcards)
    return f"--ratio {c.get('valid_ratio', 199)} --seed {c.get('split_seed', 1)}"


def bert_bpe_dir(bcorpus):
    """Keyed by its merges, as a translation corpus's bpe<N>/."""
    return f"results/data/bert/{bcorpus}/bpe{bert_corpora()[bcorpus]['bpe_merges']}"


def bert_bpe_files(wildcards):
    d = bert_bpe_dir(wildcards.bcorpus)
    return {"train": f"{d}/train.txt", "valid": f"{d}/valid.txt"}


# ---- GLUE ---------------------------------------------------------------------------------------
def glue_cfg(wildcards):
    return glue_tasks()[wildcards.glue_task]


def glue_source_tasks(source):
    return names_regex([t for t, g in glue_tasks().items() if g["source"] == source]) or "NONE"


def glue_generator_flags(wildcards):
    g = glue_cfg(wildcards)["generator"]
    return f"--task {wildcards.glue_task} --seed {g.get('seed', 1)} --n-train {g['n_train']} --n-test {g['n_dev']}"


def glue_folder(wildcards):
    """Where the task's GLUE-format train.tsv/dev.tsv are (source generated or glue)."""
    g = glue_cfg(wildcards)
    if g["source"] == "generated":
        return f"results/data/glue/{wildcards.glue_task}/generated"
    if "archive" in g:
        return f"resources/extracted/{archive_stem(archive_name(g['archive']))}"
    return g["dir"]


def glue_sources(wildcards):
    g = glue_cfg(wildcards)
    if g["source"] == "msr":
        return {"msr_train": downloaded(g["msr_train"]), "dev_ids": downloaded(g["dev_ids"])}
    return {"folder": glue_folder(wildcards)}


def glue_prepare_flags(wildcards):
    sources = glue_sources(wildcards)
    if "folder" in sources:
        return f"--glue-dir {shlex.quote(sources['folder'])}"
    return f"--msr-train {sources['msr_train']} --dev-ids {sources['dev_ids']}"


def glue_codes(wildcards):
    return f"{bert_bpe_dir(glue_cfg(wildcards)['bert_corpus'])}/codes"


def glue_dict(wildcards):
    return f"results/data/bert/{glue_cfg(wildcards)['bert_corpus']}/bin/dict.txt"


localrules:
    generate_glue,
    prepare_glue,


rule generate_bert_documents:
    output:
        "results/data/bert/{bcorpus}/generated/docs.txt",
    wildcard_constraints:
        bcorpus=bert_source_corpora("generated"),
    params:
        flags=bert_generator_flags,
        out_dir="results/data/bert/{bcorpus}/generated",
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/generate.log",
    shell:
        "lnrepro generate --task mono --one-file {params.flags} --n-test 0 --out-dir {params.out_dir} > {log} 2>&1"


rule prepare_wikipedia:
    input:
        wikipedia_dump,
    output:
        "results/data/bert/{bcorpus}/docs/wikipedia.txt",
    params:
        flags=wikipedia_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/prepare_wikipedia.log",
    benchmark:
        "benchmarks/data/bert/{bcorpus}/prepare_wikipedia.tsv"
    shell:
        "lnrepro prepare-wikipedia --dump {input} {params.flags} --out {output} > {log} 2>&1"


rule prepare_books:
    input:
        books_input,
    output:
        "results/data/bert/{bcorpus}/docs/books.txt",
    params:
        books=books_dir,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/prepare_books.log",
    shell:
        "lnrepro prepare-books --dir {params.books:q} --out {output} > {log} 2>&1"


rule split_sentences:
    input:
        bert_document_files,
    output:
        "results/data/bert/{bcorpus}/sentences.txt",
    threads: threads("data")
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/split_sentences.log",
    benchmark:
        "benchmarks/data/bert/{bcorpus}/split_sentences.tsv"
    shell:
        "lnrepro split-sentences --inputs {input} --threads {threads} --out {output} > {log} 2>&1"


rule split_bert_documents:
    input:
        "results/data/bert/{bcorpus}/tok.txt",
    output:
        train="results/data/bert/{bcorpus}/text/train.txt",
        valid="results/data/bert/{bcorpus}/text/valid.txt",
    params:
        flags=split_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/split_documents.log",
    shell:
        "lnrepro split-documents {params.flags} --input {input}"
        " --train-out {output.train} --valid-out {output.valid} > {log} 2>&1"


rule binarize_bert:
    input:
        unpack(bert_bpe_files),
    output:
        dict="results/data/bert/{bcorpus}/bin/dict.txt",
        train="results/data/bert/{bcorpus}/bin/train.pt",
        valid="results/data/bert/{bcorpus}/bin/valid.pt",
    params:
        out_dir="results/data/bert/{bcorpus}/bin",
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/binarize.log",
    benchmark:
        "benchmarks/data/bert/{bcorpus}/binarize.tsv"
    shell:
        "lnrepro binarize-mono --train {input.train} --valid {input.valid}"
        " --out-dir {params.out_dir} > {log} 2>&1"


# ---- GLUE ---------------------------------------------------------------------------------------
rule generate_glue:
    output:
        directory("results/data/glue/{glue_task}/generated"),
    wildcard_constraints:
        glue_task=glue_source_tasks("generated"),
    params:
        flags=glue_generator_flags,
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/generate.log",
    shell:
        "lnrepro generate {params.flags} --out-dir {output} > {log} 2>&1"


rule prepare_glue:
    input:
        unpack(glue_sources),
    output:
        expand("results/data/glue/{{glue_task}}/raw/{split}.{column}",
               split=["train", "dev"], column=["tsv", "sentence1", "sentence2", "label"]),
    params:
        flags=glue_prepare_flags,
        out_dir="results/data/glue/{glue_task}/raw",
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/prepare.log",
    shell:
        "lnrepro prepare-glue --task {wildcards.glue_task} {params.flags} --out-dir {params.out_dir} > {log} 2>&1"


rule bpe_apply_glue:
    input:
        codes=glue_codes,
        text="results/data/glue/{glue_task}/tok/{split}.{glue_column}",
    output:
        "results/data/glue/{glue_task}/bpe/{split}.{glue_column}",
    wildcard_constraints:
        split="train|dev",
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/bpe.{split}.{glue_column}.log",
    shell:
        "lnrepro bpe-apply --codes {input.codes} --input {input.text} --output {output} > {log} 2>&1"


rule binarize_glue:
    input:
        dict=glue_dict,
        s1="results/data/glue/{glue_task}/bpe/{split}.sentence1",
        s2="results/data/glue/{glue_task}/bpe/{split}.sentence2",
        labels="results/data/glue/{glue_task}/raw/{split}.label",
    output:
        "results/data/glue/{glue_task}/bin/{split}.pt",
    wildcard_constraints:
        split="train|dev",
    resources:
        mem_mb=mem_mb("data"),
        runtime=runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/binarize.{split}.log",
    shell:
        "lnrepro binarize-pairs --dict {input.dict} --s1 {input.s1} --s2 {input.s2} --labels {input.labels}"
        " --out {output} > {log} 2>&1"
