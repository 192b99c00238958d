"""What bert.smk's rules ask of the config (parse time; no torch)."""

from lnrepro import paths
from lnrepro.pipeline.run_pairs import flag_pairs, input_lists
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import BERT_RUN_ONLY_KEYS, PRETRAIN_DEFAULTS, finetune_summary_key, launched_trainer_flags


class Bert:
    def __init__(self, config, errors, runs):
        self.config, self.errors, self.runs = config, errors, runs

    def check_bert_config(self):
        """Cross-references the schema cannot express; fails before any job runs."""
        b = self.runs.bert_section()
        for run in b.get("runs", {}):
            if run in self.config["runs"]:
                self.errors.config_error(f"bert.runs.{run}: also a translation run in runs: (run names are shared)")
            s = {**b.get("pretrain_defaults", {}), **b["runs"][run]}
            for key, where, table in (("corpus", "bert_corpora", self.config.get("bert_corpora", {})),
                                      ("model", "bert.models", b.get("models", {}))):
                if key not in s:
                    self.errors.config_error(f"bert.runs.{run}: no '{key}' (set it in the run or in bert.pretrain_defaults)")
                if s[key] not in table:
                    self.errors.unknown_name(f"bert.runs.{run}.{key}", s[key], f"a {key}", where, table)
            s = self.runs.bert_run_settings(run)
            if s["max_updates"] % s["valid_interval"]:
                self.errors.config_error(f"bert.runs.{run}: max_updates {s['max_updates']} is not a multiple of "
                                         f"valid_interval {s['valid_interval']} (a round ends in a checkpoint)")
            self.check_bert_phases(run, s)
        fig = b.get("fig5")
        if fig:
            for run in fig["runs"]:
                if run not in b.get("runs", {}):
                    self.errors.unknown_name("bert.fig5.runs", run, "a BERT run", "bert.runs", b.get("runs", {}))
            for task in fig["tasks"]:
                if task not in self.config.get("glue", {}):
                    self.errors.unknown_name("bert.fig5.tasks", task, "a GLUE task", "glue", self.config.get("glue", {}))
                for run in fig["runs"]:
                    corpus, needs = self.config["glue"][task]["bert_corpus"], self.runs.bert_run_settings(run)["corpus"]
                    if corpus != needs:  # the task's BPE and dictionary must be the run's
                        self.errors.config_error(f"glue.{task}.bert_corpus: '{corpus}', but BERT run {run} is pre-trained on '{needs}'")

    def check_bert_phases(self, run, s):
        """The short first phase (Devlin et al. A.2) needs both its keys and a length below block_size."""
        short, fraction = s.get("short_block_size", 0), s.get("short_fraction", 0)
        if bool(short) != bool(fraction):
            self.errors.config_error(f"bert.runs.{run}: short_block_size and short_fraction are set together (both 0: one phase)")
        block_size = s.get("block_size", PRETRAIN_DEFAULTS["block_size"])
        if short >= block_size:
            self.errors.config_error(f"bert.runs.{run}.short_block_size: {short} is not below block_size {block_size}")

    # ---- pre-training ----
    def pretrain_bin_dir(self, wildcards):
        return f"{paths.data_dir('bert')}/{self.runs.bert_run_settings(wildcards.run)['corpus']}/bin"

    def pretrain_data(self, wildcards):
        d = self.pretrain_bin_dir(wildcards)
        return {"dict": f"{d}/dict.txt", "train": f"{d}/train.pt", "valid": f"{d}/valid.pt"}

    def pretrain_flags(self, wildcards):
        """Only this run's settings reach its pre-training job."""
        s = self.runs.bert_run_settings(wildcards.run)
        flags = launched_trainer_flags(s, BERT_RUN_ONLY_KEYS)
        cap = self.runs.training_cap()
        return (flags + self.runs.cap_flags(cap.get("bert_rounds", 0), cap.get("bert_round_updates", 0))
                + self.runs.log_flags(wildcards.run))

    def bert_rounds(self, run):
        """The rounds that end in a checkpoint (training_cap.bert_rounds: the first ones only)."""
        s = self.runs.bert_run_settings(run)
        rounds = s["max_updates"] // s["valid_interval"]
        return range(1, min(rounds, self.runs.training_cap().get("bert_rounds") or rounds) + 1)

    # ---- fine-tuning: one job per run, task and round; its checkpoint is the round's ----
    def finetune_inputs(self, wildcards):
        glue_bin = f"{paths.data_dir('glue')}/{wildcards.task}/bin"
        return {"metrics": paths.metrics(wildcards.run, "pretrain"), "train": f"{glue_bin}/train.pt",
                "dev": f"{glue_bin}/dev.pt"}

    def finetune_flags(self, wildcards):
        f = self.runs.bert_section()["finetune"]
        grid = " ".join(f"--{key} {' '.join(str(v) for v in f[key])}" for key in ("batch", "lr", "epochs"))
        cap = self.runs.training_cap().get("finetune_updates")
        return (f"{grid} --seeds {f['seeds']} --max-len {f['max_len']} --warmup-fraction {f.get('warmup_fraction', 0.1)}"
                f" --device {self.runs.bert_run_settings(wildcards.run).get('device', 'auto')}" + (f" --max-updates {cap}" if cap else ""))

    def finetuned_rounds(self, run):
        every = self.runs.bert_section()["finetune"].get("every", 1)
        return [r for r in self.bert_rounds(run) if r % every == 0]

    def finetuned_runs(self):
        """The BERT runs whose checkpoints are fine-tuned: Fig 5's (a run no figure draws, e.g. Post-LN at lr
        3e-4 for its divergence, is pre-trained only)."""
        return self.runs.bert_section().get("fig5", {}).get("runs", []) if "finetune" in self.runs.bert_section() else []

    def fig5_files(self):
        """{flag: {key: path}} plot_fig5 reads: each run's pre-training metrics, by run, and the summary of
        each fine-tuned round, by RUN:TASK:ROUND. Its input and its command's pairs, both."""
        fig = self.runs.bert_section()["fig5"]
        return {"metrics": {run: paths.metrics(run, "pretrain") for run in fig["runs"]},
                "summaries": {finetune_summary_key(run, task, r): paths.finetune(run, task, r, ".summary.csv")
                              for run in self.finetuned_runs() for task in fig["tasks"] for r in self.finetuned_rounds(run)}}

    def fig5_summaries(self):
        return list(self.fig5_files()["summaries"].values())

    def fig5_inputs(self, wildcards):
        return input_lists(self.fig5_files())

    def fig5_pairs(self, wildcards):
        """--metrics RUN=PATH ... --summaries RUN:TASK:ROUND=PATH ...: the files of its input."""
        return flag_pairs(self.fig5_files())

    def fig5_spec(self, wildcards):
        spec = dict(self.runs.bert_section()["fig5"])
        spec["run_settings"] = {run: self.runs.bert_run_settings(run) for run in spec["runs"]}
        spec["rounds"] = {run: self.finetuned_rounds(run) for run in spec["runs"]}  # what it reads: no other round's file
        return spec_argument(spec)
