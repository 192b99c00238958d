"""What data.smk's rules ask of the config (parse time; no torch)."""
import shlex

from lnrepro.settings import CLEAN_DEFAULTS
from lnrepro.pipeline.wildcards import names_regex


class Data:
    def __init__(self, config, download, runs):
        self.config, self.download, self.runs = config, download, runs

    def corpus_archive_dirs(self, wildcards):
        return [f"resources/extracted/{self.download.archive_stem(self.download.archive_name(a))}" for a in self.runs.corpus_cfg(wildcards.corpus)["archives"]]

    # ---- which route a corpus takes ----
    def corpora_where(self, test):
        return names_regex([n for n, c in self.config["corpora"].items() if test(c)]) or "NONE"

    def source_corpora(self, source):
        return self.corpora_where(lambda c: c["source"] == source)

    def generated_corpora(self):
        return self.source_corpora("generated")

    def pretokenized_corpora(self):
        return self.corpora_where(lambda c: c.get("tokenized", False))

    def split_valid_corpora(self):
        return self.corpora_where(lambda c: not self.runs.has_given_valid(c))

    def clean_after_bpe_corpora(self):
        return self.corpora_where(lambda c: c.get("clean_after_bpe", False))

    def lang_flags(self, wildcards):
        c = self.runs.corpus_cfg(wildcards.corpus)
        return f"--src {c['src']} --tgt {c['tgt']}"

    def wmt_flags(self, wildcards):
        c = self.runs.corpus_cfg(wildcards.corpus)
        flags = f"--src {c['src']} --tgt {c['tgt']} --test-set {shlex.quote(c.get('test_set', 'newstest2014'))}"
        if c.get("train_corpora"):
            flags += " --train-corpora " + " ".join(shlex.quote(x) for x in c["train_corpora"])
        if c.get("valid_set"):
            flags += f" --valid-set {shlex.quote(c['valid_set'])}"
        return flags

    def local_inputs(self, wildcards):
        files = self.runs.corpus_cfg(wildcards.corpus)["files"]
        return {f"{split}_{side}": files[split][side] for split in ("train", "valid", "test") if split in files
                for side in ("src", "tgt")}

    def local_flags(self, wildcards):
        c = self.runs.corpus_cfg(wildcards.corpus)
        files = c["files"]
        flags = f"--src-lang {c['src']} --tgt-lang {c['tgt']}"
        for split in ("train", "valid", "test"):
            if split in files:
                flags += f" --{split} {shlex.quote(files[split]['src'])} {shlex.quote(files[split]['tgt'])}"
        return flags

    def generator_flags(self, wildcards):
        g = self.runs.corpus_cfg(wildcards.corpus)["generator"]
        return f"--task {g['task']} --seed {g.get('seed', 1)} --n-train {g['n_train']} --n-test {g['n_test']}"

    def raw_file(self, wildcards):
        return f"{self.runs.data_dir(wildcards.corpus)}/raw/{wildcards.split}.{self.runs.lang(wildcards.corpus, wildcards.side)}"

    # ---- tokenize: a translation corpus's tok/{split}.{side}; as the corpora bert/NAME and glue/TASK,
    # a BERT corpus's tok.txt (of its sentences.txt) and a GLUE task's tok/{split}.{sentence1,sentence2}
    # (of its raw/ columns). The output is tok{file}: file is /{split}.{side} or .txt ----
    def tokenize_corpora(self):
        return names_regex([n for n, c in self.config["corpora"].items() if not c.get("tokenized", False)]
                                + [f"bert/{name}" for name in self.config.get("bert_corpora", {})]
                                + [f"glue/{task}" for task in self.config.get("glue", {})]) or "NONE"

    def tokenize_text(self, wildcards):
        """The file tokenized: the raw file of a translation corpus's split and language, a BERT corpus's
        sentences, a GLUE task's raw column."""
        d = self.runs.data_dir(wildcards.corpus)
        if wildcards.corpus in self.config["corpora"]:
            split, side = wildcards.file[1:].split(".")
            return f"{d}/raw/{split}.{self.runs.lang(wildcards.corpus, side)}"
        if wildcards.corpus.startswith("bert/"):
            return f"{d}/sentences.txt"
        return f"{d}/raw{wildcards.file}"

    def tokenize_input(self, wildcards):
        """tokenize_text, or a translation corpus's raw/ folder, which its rule writes as a whole."""
        if wildcards.corpus in self.config["corpora"]:
            return f"{self.runs.data_dir(wildcards.corpus)}/raw"
        return self.tokenize_text(wildcards)

    def bert_tokenizer_flags(self, bcorpus):
        """Moses as Xiong et al. (supplementary 1.3): normalize, tokenize, lowercase; no XML escaping."""
        lowercase = self.config["bert_corpora"][bcorpus].get("lowercase", True)
        return "--lang en --no-escape --normalize-punctuation" + (" --lowercase" if lowercase else "")

    def tokenizer_flags(self, wildcards):
        """A translation corpus's per side and split; a GLUE task takes its pre-training corpus's: that
        corpus's vocabulary must cover the task's text."""
        if wildcards.corpus not in self.config["corpora"]:
            kind, name = wildcards.corpus.split("/")
            return self.bert_tokenizer_flags(name if kind == "bert" else self.config["glue"][name]["bert_corpus"])
        c = self.runs.corpus_cfg(wildcards.corpus)
        split, side = wildcards.file[1:].split(".")
        flags = f"--lang {self.runs.lang(wildcards.corpus, side)}" + (" --aggressive-dash" if c.get("aggressive_dash") else "")
        if c.get("split_final_period"):
            flags += " --split-final-period"
        # prepare-wmt14en2de.sh normalizes train only; Transformer-Clinic's wmt14en-de.sh valid too
        if (c.get("normalize_train") and split == "train") or (c.get("normalize_valid") and split == "valid"):
            flags += " --normalize-punctuation --remove-non-printing"
        return flags

    def clean_flags(self, wildcards):
        c = {**CLEAN_DEFAULTS, **self.runs.corpus_cfg(wildcards.corpus).get("clean", {})}
        return f"--min {c['min']} --max {c['max']} --ratio {c['ratio']}"

    def case_input(self, wildcards):
        """Training text is cleaned first, unless the corpus cleans after BPE; valid/test never are."""
        d = self.runs.data_dir(wildcards.corpus)
        if wildcards.part in ("trainvalid", "train"):
            stage = "tok" if self.runs.corpus_cfg(wildcards.corpus).get("clean_after_bpe", False) else "clean"
            return f"{d}/{stage}/train.{wildcards.side}"
        return f"{d}/tok/{wildcards.part}.{wildcards.side}"

    def case_flag(self, wildcards):
        return "" if self.runs.corpus_cfg(wildcards.corpus).get("lowercase", False) else "--keep-case"

    def valid_every(self, wildcards):
        return self.runs.corpus_cfg(wildcards.corpus).get("valid_every", 23)

    def bpe_files(self, corpus, merges):
        d = f"{self.runs.data_dir(corpus)}/bpe{merges}"
        return [f"{d}/{split}.{side}" for split in ("train", "valid", "test") for side in ("src", "tgt")]

    def binarize_inputs(self, wildcards):
        """The BPE'd splits, and the count check where the corpus states the recipe's counts."""
        files = self.bpe_files(wildcards.corpus, wildcards.merges)
        if self.runs.corpus_cfg(wildcards.corpus).get("expected_counts"):
            files.append(f"{self.runs.data_dir(wildcards.corpus)}/bpe{wildcards.merges}/counts.tsv")
        return files

    def count_inputs(self, wildcards):
        d = f"{self.runs.data_dir(wildcards.corpus)}/bpe{wildcards.merges}"
        return {split: f"{d}/{split}.src" for split in ("train", "valid", "test")}

    def count_flags(self, wildcards):
        c = self.runs.corpus_cfg(wildcards.corpus)
        d = f"{self.runs.data_dir(wildcards.corpus)}/bpe{wildcards.merges}"
        expect = " ".join(f"{k}={v}" for k, v in sorted(c.get("expected_counts", {}).items()))
        files = " ".join(f"{split}={d}/{split}.src" for split in ("train", "valid", "test"))
        source = shlex.quote(f"{wildcards.corpus} ({c['source']})")
        return f"--source {source} --files {files} --expect {expect}"

    def bpe_prefix(self, wildcards):
        return f"{self.runs.data_dir(wildcards.corpus)}/bpe{wildcards.merges}"

    def joined_dictionary_flags(self, wildcards, output):
        return f"--dict-out {shlex.quote(output.dict)}"

    # ---- BPE: a translation corpus's joint codes, or a BERT corpus's (results/data/bert/NAME) ----
    def bpe_corpora(self):
        return names_regex(list(self.config["corpora"]) + [f"bert/{name}" for name in self.config.get("bert_corpora", {})])

    def bpe_learn_inputs(self, wildcards):
        d = self.runs.data_dir(wildcards.corpus)
        if wildcards.corpus in self.config["corpora"]:
            return [f"{d}/text/train.src", f"{d}/text/train.tgt"]
        return [f"{d}/text/train.txt"]
