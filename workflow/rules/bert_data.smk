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


wildcard_constraints:
    bcorpus=P.names_regex(P.bert_data.bert_corpora()) or "NO_BERT_CORPORA",
    glue_task=P.names_regex(P.bert_data.glue_tasks()) or "NO_GLUE_TASKS",
    glue_column="sentence1|sentence2",


localrules:
    generate_glue,
    prepare_glue,


rule generate_bert_documents:
    output:
        paths.data_dir("bert/{bcorpus}", "generated/docs.txt"),
    wildcard_constraints:
        bcorpus=P.bert_data.bert_source_corpora("generated"),
    params:
        flags=P.bert_data.bert_generator_flags,
        out_dir=paths.data_dir("bert/{bcorpus}", "generated"),
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/generate.log",
    shell:
        "lnrepro generate --task mono --one-file {params.flags} --n-test 0 --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule prepare_wikipedia:
    input:
        P.bert_data.wikipedia_dump,
    output:
        paths.data_dir("bert/{bcorpus}", "docs/wikipedia.txt"),
    params:
        flags=P.bert_data.wikipedia_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/prepare_wikipedia.log",
    benchmark:
        "benchmarks/data/bert/{bcorpus}/prepare_wikipedia.tsv"
    shell:
        "lnrepro prepare-wikipedia --dump {input:q} {params.flags} --out {output:q} > {log:q} 2>&1"


rule prepare_books:
    input:
        P.bert_data.books_input,
    output:
        paths.data_dir("bert/{bcorpus}", "docs/books.txt"),
    params:
        books=P.bert_data.books_dir,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/prepare_books.log",
    shell:
        "lnrepro prepare-books --dir {params.books:q} --out {output:q} > {log:q} 2>&1"


rule split_sentences:
    input:
        P.bert_data.bert_document_files,
    output:
        paths.data_dir("bert/{bcorpus}", "sentences.txt"),
    threads: P.resources.threads("data")
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/split_sentences.log",
    benchmark:
        "benchmarks/data/bert/{bcorpus}/split_sentences.tsv"
    shell:
        "lnrepro split-sentences --inputs {input:q} --threads {threads} --out {output:q} > {log:q} 2>&1"


rule split_bert_documents:
    input:
        paths.data_dir("bert/{bcorpus}", "tok.txt"),
    output:
        train=paths.data_dir("bert/{bcorpus}", "text/train.txt"),
        valid=paths.data_dir("bert/{bcorpus}", "text/valid.txt"),
    params:
        flags=P.bert_data.split_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/split_documents.log",
    shell:
        "lnrepro split-documents {params.flags} --input {input:q}"
        " --train-out {output.train:q} --valid-out {output.valid:q} > {log:q} 2>&1"


rule binarize_bert:
    input:
        unpack(P.bert_data.bert_bpe_files),
    output:
        dict=paths.data_dir("bert/{bcorpus}", "bin/dict.txt"),
        train=paths.data_dir("bert/{bcorpus}", "bin/train.pt"),
        valid=paths.data_dir("bert/{bcorpus}", "bin/valid.pt"),
    params:
        out_dir=paths.data_dir("bert/{bcorpus}", "bin"),
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/bert/{bcorpus}/binarize.log",
    benchmark:
        "benchmarks/data/bert/{bcorpus}/binarize.tsv"
    shell:
        "lnrepro binarize-mono --train {input.train:q} --valid {input.valid:q}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


# ---- GLUE ---------------------------------------------------------------------------------------
rule generate_glue:
    output:
        directory(paths.data_dir("glue/{glue_task}", "generated")),
    wildcard_constraints:
        glue_task=P.bert_data.glue_source_tasks("generated"),
    params:
        flags=P.bert_data.glue_generator_flags,
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/generate.log",
    shell:
        "lnrepro generate {params.flags} --out-dir {output:q} > {log:q} 2>&1"


rule prepare_glue:
    input:
        unpack(P.bert_data.glue_sources),
    output:
        expand(paths.data_dir("glue/{{glue_task}}", "raw/{split}.{column}"),
               split=["train", "dev"], column=["tsv", "sentence1", "sentence2", "label"]),
    params:
        flags=P.bert_data.glue_prepare_flags,
        out_dir=paths.data_dir("glue/{glue_task}", "raw"),
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/prepare.log",
    shell:
        "lnrepro prepare-glue --task {wildcards.glue_task:q} {params.flags} --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule bpe_apply_glue:
    input:
        codes=P.bert_data.glue_codes,
        text=paths.data_dir("glue/{glue_task}", "tok/{split}.{glue_column}"),
    output:
        paths.data_dir("glue/{glue_task}", "bpe/{split}.{glue_column}"),
    wildcard_constraints:
        split="train|dev",
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/bpe.{split}.{glue_column}.log",
    shell:
        "lnrepro bpe-apply --codes {input.codes:q} --input {input.text:q} --output {output:q} > {log:q} 2>&1"


rule binarize_glue:
    input:
        dict=P.bert_data.glue_dict,
        s1=paths.data_dir("glue/{glue_task}", "bpe/{split}.sentence1"),
        s2=paths.data_dir("glue/{glue_task}", "bpe/{split}.sentence2"),
        labels=paths.data_dir("glue/{glue_task}", "raw/{split}.label"),
    output:
        paths.data_dir("glue/{glue_task}", "bin/{split}.pt"),
    wildcard_constraints:
        split="train|dev",
    resources:
        mem_mb=P.resources.mem_mb("data"),
        runtime=P.plan.runtime("data"),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/data/glue/{glue_task}/binarize.{split}.log",
    shell:
        "lnrepro binarize-pairs --dict {input.dict:q} --s1 {input.s1:q} --s2 {input.s2:q} --labels {input.labels:q}"
        " --out {output:q} > {log:q} 2>&1"
