"""What plan.smk's rules ask of the config (parse time; no torch)."""

from lnrepro.analyses.plan import checkpoint_bytes, corpus_vocab, gb, translation_params
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import PLAN_KEYS, cli_flags


class Plan:
    PLAN_FLAGS = {"bf16_tflops": "peak_tflops", "fp32_tflops": "fp32_peak_tflops", "mfu": "mfu"}  # config key -> flag
    # Values far outside both papers' (config/config.yaml trains at most 100 epochs, decodes with beam 4-5,
    # reads at most WMT14's ~4.5M pairs): said when the DAG is planned, before days of jobs or a full disk
    FAR_OUT = {"epochs": 1_000, "beam": 50, "n_train": 10_000_000}

    def note_far_out_values(self):
        """One note per value far outside the papers' (FAR_OUT), with what it costs where the plan can say."""
        if not self.workflow.is_main_process:  # every job parses the Snakefile again: no need to resolve each run there
            return
        keep = self.config.get("checkpoints", {}).get("keep", "all")
        for run in self.config["runs"]:
            s = self.run_settings(run)
            if s["epochs"] > self.FAR_OUT["epochs"]:
                params = translation_params(s, corpus_vocab(self.corpus_cfg(s["corpus"]))[0])
                per_epoch, last = checkpoint_bytes(params, s["optimizer"], s.get("momentum", 0.0))
                disk = per_epoch * s["epochs"] + last if keep == "all" else last
                self.note(f"config runs.{run}.epochs: {s['epochs']:,}, over {self.FAR_OUT['epochs']:,} (the papers' longest "
                          f"run trains 100): ~{gb(disk)} GB of its checkpoints under checkpoints.keep {keep}; "
                          f"`snakemake results/plan.md` prices every run")
        for name, c in self.config["corpora"].items():
            beam = c.get("decode", {}).get("beam", 0)
            if beam > self.FAR_OUT["beam"]:
                self.note(f"config corpora.{name}.decode.beam: {beam:,}, over {self.FAR_OUT['beam']} (the papers decode with "
                          f"4-5): decoding's memory and time grow with it")
            n = c.get("generator", {}).get("n_train", 0) if c["source"] == "generated" else 0
            if n > self.FAR_OUT["n_train"]:
                self.note(f"config corpora.{name}.generator.n_train: {n:,}, over {self.FAR_OUT['n_train']:,} (WMT14 has ~4.5M "
                          f"pairs): the generator holds the corpus in memory")
    def plan_settings(self, settings):
        """What the plan reads of a run's resolved settings (run_settings, bert_run_settings)."""
        return {k: v for k, v in settings.items() if k in PLAN_KEYS}

    def plan_groups(self):
        """Each figure's and table's runs: the config's figures, the admin section's tables and figures, BERT's."""
        groups = {fig: [run for panel in spec["panels"] for run in panel["runs"]] for fig, spec in self.config["figures"].items()}
        a = self.admin_cfg()
        for section, name in (("table1", "liu_table1"), ("table2", "liu_table2"), ("lr_grid", "liu_fig10")):
            if section in a:
                groups[name] = self.table_runs(section)
        for section in self.FIGURE_SECTIONS:
            for fig, spec in a.get(section, {}).items():
                groups[f"liu_{fig}"] = spec["runs"]
        if "fig5" in self.bert_section():
            runs = self.bert_section()["fig5"]["runs"]
            groups["fig5"] = runs + [f"{run} fine-tuning" for run in runs if "finetune" in self.bert_section()]
        return {g: list(dict.fromkeys(runs)) for g, runs in groups.items()}

    def plan_run(self, run):
        """The run's settings and, in a capped config (training_cap), the trainer's cap flags' values."""
        rounds, round_updates = self.train_cap(run)
        return {**self.plan_settings(self.run_settings(run)), "max_rounds": rounds, "max_round_updates": round_updates}

    def plan_bert_run(self, run):
        cap = self.training_cap()
        return {**self.plan_settings(self.bert_run_settings(run)), "max_rounds": cap.get("bert_rounds", 0),
                "max_round_updates": cap.get("bert_round_updates", 0)}

    def plan_spec(self, wildcards):
        return spec_argument({"runs": {run: self.plan_run(run) for run in self.config["runs"]},
                               "corpora": self.config["corpora"], "groups": self.plan_groups(),
                               "dicts": {corpus: self.bin_files(corpus)["dict"] for corpus in self.config["corpora"]},
                               "bert": {"runs": {run: self.plan_bert_run(run) for run in self.bert_runs()},
                                        "corpora": self.config.get("bert_corpora", {}), "finetune": self.bert_section().get("finetune"),
                                        "tasks": self.bert_section().get("fig5", {}).get("tasks", []),
                                        "finetune_rounds": {run: len(self.finetuned_rounds(run)) for run in self.bert_runs()},
                                        "finetune_updates": self.training_cap().get("finetune_updates", 0)},
                               "checkpoints": {"keep": self.config.get("checkpoints", {}).get("keep", "all"),
                                               "needs": {run: self.checkpoint_needs(run) for run in self.checkpoint_readers()}}})

    def throughput_flags(self, wildcards):
        """The config's `plan:` throughput; lnrepro plan's own defaults (an H100 at 30% MFU) for a key it leaves out."""
        return cli_flags({self.PLAN_FLAGS[k]: v for k, v in self.config.get("plan", {}).items()})
