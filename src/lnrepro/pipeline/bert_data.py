"""What bert_data.smk's rules ask of the config (parse time; no torch)."""
import os
import shlex
from lnrepro import paths
from lnrepro.pipeline.wildcards import names_regex


class BertData:
    RESERVED_CORPUS_NAMES = ("bert", "glue")  # results/data/bert|glue/ hold the BERT data

    def __init__(self, config, download, errors, runs):
        self.config = config
        self.download = download
        self.errors = errors
        self.runs = runs

    def bert_corpora(self):
        return self.config.get("bert_corpora", {})

    def glue_tasks(self):
        return self.config.get("glue", {})

    def check_bert_data_config(self):
        """Cross-references the schema cannot express; fails before any job runs."""
        for name in self.RESERVED_CORPUS_NAMES:
            if name in self.config["corpora"]:
                self.errors.config_error(f"corpora.{name}: the name is reserved ({paths.data_dir(name)}/ holds BERT data)")
        for name, c in self.bert_corpora().items():
            if c["source"] == "generated" and "generator" not in c:
                self.errors.config_error(f"bert_corpora.{name}: source 'generated' needs a 'generator' entry")
            if c["source"] == "real" and not (c.get("wikipedia") or c.get("books_dir")):
                self.errors.config_error(f"bert_corpora.{name}: source 'real' needs 'wikipedia' or 'books_dir' (or both)")
            if c["source"] == "real" and c.get("books_dir"):
                self.errors.note_missing_input(f"bert_corpora.{name}.books_dir", c["books_dir"], "prepare_books will stop there "
                                               "until it holds the books' text files (config/README.md: bert_corpora)")
        for task, g in self.glue_tasks().items():
            if g["bert_corpus"] not in self.bert_corpora():
                self.errors.unknown_name(f"glue.{task}.bert_corpus", g["bert_corpus"], "a BERT corpus", "bert_corpora",
                                         self.bert_corpora())
            needs = {"generated": ["generator"], "msr": ["msr_train", "dev_ids"]}.get(g["source"], [])
            for key in needs:
                if key not in g:
                    self.errors.config_error(f"glue.{task}: source '{g['source']}' needs '{key}'")
            if g["source"] == "msr" and task != "mrpc":
                self.errors.config_error(f"glue.{task}: source 'msr' (Microsoft's files) is MRPC's only")
            if g["source"] == "glue" and ("archive" in g) == ("dir" in g):
                self.errors.config_error(f"glue.{task}: source 'glue' needs either 'archive' (a zip to download) or 'dir'")
            if "archive" in g and not self.download.archive_name(g["archive"]).endswith(self.download.ARCHIVE_SUFFIXES):
                self.errors.config_error(f"glue.{task}.archive: '{self.download.archive_name(g['archive'])}' is not one of "
                                         f"{', '.join(self.download.ARCHIVE_SUFFIXES)}; set 'file' to name it")

    # ---- pre-training corpus ----------------------------------------------------------------------
    def bert_cfg(self, wildcards):
        return self.bert_corpora()[wildcards.bcorpus]

    def bert_source_corpora(self, source):
        return names_regex([n for n, c in self.bert_corpora().items() if c["source"] == source]) or "NONE"

    def bert_generator_flags(self, wildcards):
        g = self.bert_cfg(wildcards)["generator"]
        return f"--seed {g.get('seed', 1)} --n-train {g['n_docs']}"

    def downloaded(self, entry):
        """download_archive's link to the verified file in resources/downloads/ (download.smk)."""
        return f"resources/verified/{self.download.archive_name(entry)}"

    def wikipedia_dump(self, wildcards):
        return self.downloaded(self.bert_cfg(wildcards)["wikipedia"])

    def wikipedia_flags(self, wildcards):
        max_docs = self.bert_cfg(wildcards).get("max_wiki_docs")
        return f"--max-docs {max_docs}" if max_docs else ""

    def books_dir(self, wildcards):
        return self.bert_cfg(wildcards)["books_dir"]

    def books_input(self, wildcards):
        """The books folder, as an input once it exists (adding books then reruns the chain); before
        that the chain still plans (snakemake -n) and prepare_books says where to put the books."""
        return [self.books_dir(wildcards)] if os.path.isdir(self.books_dir(wildcards)) else []

    def bert_document_files(self, wildcards):
        """The docs text files of the corpus, in the order their documents are concatenated."""
        c, d = self.bert_cfg(wildcards), f"{paths.data_dir('bert')}/{wildcards.bcorpus}"
        if c["source"] == "generated":
            return [f"{d}/generated/docs.txt"]
        return [f"{d}/docs/{part}.txt" for part, key in (("wikipedia", "wikipedia"), ("books", "books_dir")) if c.get(key)]

    def split_flags(self, wildcards):
        c = self.bert_cfg(wildcards)
        return f"--ratio {c.get('valid_ratio', 199)} --seed {c.get('split_seed', 1)}"

    def bert_bpe_dir(self, bcorpus):
        """Keyed by its merges, as a translation corpus's bpe<N>/."""
        return f"{paths.data_dir('bert')}/{bcorpus}/bpe{self.bert_corpora()[bcorpus]['bpe_merges']}"

    def bert_bpe_files(self, wildcards):
        d = self.bert_bpe_dir(wildcards.bcorpus)
        return {"train": f"{d}/train.txt", "valid": f"{d}/valid.txt"}

    # ---- GLUE ---------------------------------------------------------------------------------------
    def glue_cfg(self, wildcards):
        return self.glue_tasks()[wildcards.glue_task]

    def glue_source_tasks(self, source):
        return names_regex([t for t, g in self.glue_tasks().items() if g["source"] == source]) or "NONE"

    def glue_generator_flags(self, wildcards):
        g = self.glue_cfg(wildcards)["generator"]
        return f"--task {wildcards.glue_task} --seed {g.get('seed', 1)} --n-train {g['n_train']} --n-test {g['n_dev']}"

    def glue_folder(self, wildcards):
        """Where the task's GLUE-format train.tsv/dev.tsv are (source generated or glue)."""
        g = self.glue_cfg(wildcards)
        if g["source"] == "generated":
            return f"{paths.data_dir('glue')}/{wildcards.glue_task}/generated"
        if "archive" in g:
            return f"resources/extracted/{self.download.archive_stem(self.download.archive_name(g['archive']))}"
        return g["dir"]

    def glue_sources(self, wildcards):
        g = self.glue_cfg(wildcards)
        if g["source"] == "msr":
            return {"msr_train": self.downloaded(g["msr_train"]), "dev_ids": self.downloaded(g["dev_ids"])}
        return {"folder": self.glue_folder(wildcards)}

    def glue_prepare_flags(self, wildcards):
        sources = self.glue_sources(wildcards)
        if "folder" in sources:
            return f"--glue-dir {shlex.quote(sources['folder'])}"
        return f"--msr-train {sources['msr_train']} --dev-ids {sources['dev_ids']}"

    def glue_codes(self, wildcards):
        return f"{self.bert_bpe_dir(self.glue_cfg(wildcards)['bert_corpus'])}/codes"

    def glue_dict(self, wildcards):
        return f"{paths.data_dir('bert')}/{self.glue_cfg(wildcards)['bert_corpus']}/bin/dict.txt"
