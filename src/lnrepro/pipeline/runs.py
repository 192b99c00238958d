"""What a run trains with and on: its settings (the config's levels merged), its corpus's paths,
its dictionaries, its cap and log flags."""

from lnrepro import paths
from lnrepro.settings import (JOINED_DICT, JOINED_DICTIONARY_DEFAULT, LOG_KEYS, LAUNCH_DEFAULTS, RUN_VALUE_DEFAULTS,
                               SEPARATE_DICTS, cli_flags, merged_run_settings)


class Runs:
    def __init__(self, config, errors, sections):
        self.config, self.errors, self.sections = config, errors, sections

    def corpus_cfg(self, name):
        return self.config["corpora"][name]

    def lang(self, corpus, side):
        return self.corpus_cfg(corpus)[side]

    def has_given_valid(self, c):
        """A validation set of its own (local files.valid, WMT's valid_set) instead of every Nth train pair."""
        return bool(c.get("valid_set") or (c["source"] == "local" and "valid" in c.get("files", {})))

    # ---- run settings: translation runs (runs:) and BERT runs (bert.runs:) share the `run` wildcard ----
    def run_settings(self, run):
        """train_defaults <- models[model] <- the run's own keys; `norm` sets both sides.
        A BERT run has its own defaults and models (bert_run_settings)."""
        if run not in self.config["runs"]:
            return self.bert_run_settings(run)
        return self.with_update_freq(merged_run_settings(self.config, run), f"runs.{run}")

    def with_update_freq(self, settings, where):
        """`update_tokens` is the batch as a paper states it (Xiong et al.: 8192 tokens x 16 GPUs):
        it sets the update_freq that gives it on this run's processes, whatever hardware a user has."""
        if "update_tokens" not in settings:
            return settings
        if "update_freq" in settings:
            self.errors.config_error(f"{where}: set update_tokens or update_freq, not both (update_tokens derives update_freq)")
        gpus, nodes = ({**LAUNCH_DEFAULTS, **settings}[k] for k in ("gpus", "nodes"))
        per_pass = settings["max_tokens"] * gpus * nodes
        freq, rest = divmod(settings["update_tokens"], per_pass)
        if rest or not freq:
            self.errors.config_error(f"{where}.update_tokens: {settings['update_tokens']} is not a multiple of max_tokens x gpus "
                                     f"x nodes = {settings['max_tokens']} x {gpus} x {nodes}")
        return {**settings, "update_freq": freq}

    def run_value(self, run, key):
        """The setting a translation run trains with, defaults of the trainer included."""
        return self.run_settings(run).get(key, RUN_VALUE_DEFAULTS.get(key))

    def run_norms(self, run):
        return self.run_value(run, "enc_norm"), self.run_value(run, "dec_norm")

    def run_corpus(self, run):
        return self.run_settings(run)["corpus"]

    def bert_section(self):
        self.sections.checked("bert")
        return self.config.get("bert", {})

    def bert_runs(self):
        """Their names (the `run` wildcard's, at parse time): no check of the section."""
        return list(self.config.get("bert", {}).get("runs", {}))

    def bert_run_settings(self, run):
        """bert.pretrain_defaults <- bert.models[model] <- the run's own keys."""
        merged = self.without_log_keys({**self.bert_section().get("pretrain_defaults", {}), **self.bert_section()["runs"][run]})
        return {**self.bert_section()["models"][merged["model"]], **merged}

    def without_log_keys(self, settings):
        return {k: v for k, v in settings.items() if k not in LOG_KEYS}

    def log_flags(self, run):
        """' --tensorboard true' where the run (or its defaults) sets tensorboard: true, else nothing."""
        if run in self.config["runs"]:
            merged = {**self.config["train_defaults"], **self.config["runs"][run]}
        else:
            merged = {**self.bert_section().get("pretrain_defaults", {}), **self.bert_section()["runs"][run]}
        return "".join(f" --{key} true" for key in LOG_KEYS if merged.get(key))


    # ---- paths -----------------------------------------------------------------------------------
    def data_dir(self, corpus):
        return paths.data_dir(corpus)

    def bpe_dir(self, corpus):
        """Keyed by its merges: a new merge count is a new directory, nothing is overwritten."""
        return f"{self.data_dir(corpus)}/bpe{self.corpus_cfg(corpus)['bpe_merges']}"

    def bin_dir(self, corpus, joined=JOINED_DICTIONARY_DEFAULT):
        """Keyed by its dictionaries: one joined (bin/dict.txt) or one per side (bin_separate/dict.{src,tgt}.txt)."""
        return f"{self.bpe_dir(corpus)}/{'bin' if joined else 'bin_separate'}"

    def bin_files(self, corpus, joined=JOINED_DICTIONARY_DEFAULT):
        """"dict": the joined dictionary's file, or a list of the source's and the target's."""
        d = self.bin_dir(corpus, joined)
        return {"dict": f"{d}/{JOINED_DICT}" if joined else [f"{d}/{name}" for name in SEPARATE_DICTS],
                "train": f"{d}/train.pt", "valid": f"{d}/valid.pt", "test": f"{d}/test.pt"}

    def run_joined_dictionary(self, run):
        return self.run_settings(run).get("joined_dictionary", JOINED_DICTIONARY_DEFAULT)

    def run_bin_files(self, run):
        """The binarized data a run trains on: its corpus with its dictionaries."""
        return self.bin_files(self.run_corpus(run), self.run_joined_dictionary(run))

    def run_data_dir(self, run):
        return self.bin_dir(self.run_corpus(run), self.run_joined_dictionary(run))

    def run_bin_dir(self, wildcards):
        return self.run_data_dir(wildcards.run)

    # ---- flags -----------------------------------------------------------------------------------
    # cli_flags, trainer_flags, ...: lnrepro.settings
    # training_cap: a smoke test of a whole configuration (tests/test_paper_config.py). It reaches the
    # trainers as flags of their own, so a capped run records the cap (log, metrics' `capped` column,
    # checkpoint fingerprint) and is never resumed by, or mistaken for, a real one.
    def training_cap(self):
        return self.config.get("training_cap", {})

    def cap_flags(self, rounds, round_updates):
        """The trainer's cap flags; none where the config caps nothing, so real runs' params stay."""
        cap = {k: v for k, v in (("max_rounds", rounds), ("max_round_updates", round_updates)) if v}
        return f" {cli_flags(cap)}" if cap else ""
