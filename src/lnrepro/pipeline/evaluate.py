"""What evaluate.smk's rules ask of the config (parse time; no torch)."""
from lnrepro import paths
from lnrepro.settings import DECODE_DEFAULTS, cli_flags


class Evaluate:
    def __init__(self, config, runs):
        self.config, self.runs = config, runs

    def decode_settings(self, corpus, run=None):
        """The corpus's decoding, then what a run family's recipe sets for itself (`runs.RUN.decode`:
        Liu et al.'s IWSLT runs decode with lenpen 1.0 where Xiong et al.'s use 1.2)."""
        run_decode = self.config["runs"][run].get("decode", {}) if run else {}
        return {**DECODE_DEFAULTS, **self.runs.corpus_cfg(corpus).get("decode", {}), **run_decode}

    def detok_reference(self, corpus):
        """The raw (untokenized) reference of the decoded split, for detokenized sacreBLEU; None
        unless the corpus asks for it (detok_bleu) and the split exists as raw text."""
        c = self.runs.corpus_cfg(corpus)
        split = self.decode_settings(corpus)["split"]
        if not c.get("detok_bleu", False) or (split == "valid" and not self.runs.has_given_valid(c)):
            return None
        return f"{self.runs.data_dir(corpus)}/raw/{split}.{c['tgt']}"

    def eval_inputs(self, wildcards):
        corpus = self.runs.run_corpus(wildcards.run)
        split = self.decode_settings(corpus)["split"]
        files = self.runs.run_bin_files(wildcards.run)
        inputs = {
            "metrics": paths.metrics(wildcards.run),
            "dict": files["dict"],
            "data": files[split],
            "reference": f"{self.runs.data_dir(corpus)}/text/{split}.tgt",
        }
        if self.detok_reference(corpus):
            inputs["raw"] = f"{self.runs.data_dir(corpus)}/raw"  # a directory output: its file is passed in the flags
        return inputs

    def decode_flags(self, wildcards):
        corpus = self.runs.run_corpus(wildcards.run)
        flags = cli_flags(self.decode_settings(corpus, wildcards.run)) + f" --target-lang {self.runs.lang(corpus, 'tgt')}"
        # the run's device, not evaluate's default auto: a cpu run's job given a GPU anyway (resources.gpu
        # always) decodes on the CPU, and a cuda run's stops where CUDA is unusable (lnrepro.core.device.pick_device)
        flags += f" --device {self.runs.run_settings(wildcards.run).get('device', 'auto')}"
        if self.detok_reference(corpus):
            flags += f" --detok-reference {self.detok_reference(corpus)}"
        return flags

    def average_flag(self, wildcards):
        return f"--average-last {wildcards.n}"
