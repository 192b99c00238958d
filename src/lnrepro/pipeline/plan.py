"""What plan.smk's rules ask of the config (parse time; no torch), and each job's planned wall time,
which resources.smk asks SLURM for (the same functions of lnrepro.analyses.plan as `lnrepro plan`)."""
import os
import re

from lnrepro.analyses.plan import (Throughput, bert_vocab, checkpoint_bytes, corpus_vocab, decode_job, finetune_job, gb,
                                   pretrain_job, train_job, translation_params)
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import OUTPUT_CHANGE_NORMS, PLAN_KEYS, TRAIN_DEFAULTS


class Plan:
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
        """Each figure's and table's runs: the config's figures, the admin section's tables and figures, BERT's,
        and each sweep's (its table, phase diagram and the lab's claims)."""
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
            groups["fig5"] = runs + [f"{run} fine-tuning" for run in self.finetuned_runs()]
        for sweep in self.config.get("sweeps") or {}:  # not in rule all, priced all the same: its own targets
            groups[f"sweeps.{sweep}"] = self.sweep_runs(sweep)
        return {g: list(dict.fromkeys(runs)) for g, runs in groups.items()}

    def plan_run(self, run):
        """The run's settings and, in a capped config (training_cap), the trainer's cap flags' values."""
        rounds, round_updates = self.train_cap(run)
        return {**self.plan_settings(self.run_settings(run)), "max_rounds": rounds, "max_round_updates": round_updates}

    def plan_bert_run(self, run):
        cap = self.training_cap()
        return {**self.plan_settings(self.bert_run_settings(run)), "max_rounds": cap.get("bert_rounds", 0),
                "max_round_updates": cap.get("bert_round_updates", 0)}

    # ---- what the DAG decodes and probes, as the plan counts it -------------------------------------
    def plan_decodes(self):
        """The DAG's evaluate and evaluate_averaged jobs (Retention.eval_files: every results/eval/ file a
        target reads): their run, how many checkpoints are averaged (0: every epoch decoded), the decoding."""
        decodes = []
        for f in self.eval_files():
            run = self.path_run(f)
            average = re.fullmatch(r"bleu_avg(\d+)\.csv", os.path.basename(f))
            decodes.append({"run": run, "average": int(average.group(1)) if average else 0,
                            "decode": self.decode_settings(self.run_corpus(run), run)})
        return decodes

    def probe_model(self, run, **model):
        return {**self.plan_settings(self.run_settings(run)), **model}

    def trained_epochs(self, run):
        epochs, cap = self.run_settings(run).get("epochs", TRAIN_DEFAULTS["epochs"]), self.train_cap(run)[0]
        return min(epochs, cap) if cap else epochs

    def plan_probes(self):
        """The DAG's probe jobs and their passes, counted from their settings as the commands run them:
        {rule, job, group, models: [{settings, fwd_bwd, forward, checkpoints}]}, one batch of the run's
        max_tokens per pass."""
        probes = []
        if self.config.get("gradient_probe"):
            p, run = self.probe_cfg(), self.probe_cfg()["run"]
            n = p.get("seeds", 10) * p.get("batches", 4)  # probe-gradients: every seed's model over its batches
            for norm in ("post", "pre"):
                for layers in self.probe_layers():
                    model = self.probe_model(run, enc_layers=layers, dec_layers=layers, enc_norm=norm, dec_norm=norm)
                    probes.append({"rule": "probe_gradients", "job": f"{norm}_{layers}L", "group": "fig3",
                                   "models": [{"settings": model, "fwd_bwd": n}]})
            probes.append({"rule": "probe_after_warmup", "job": run, "group": "fig3",
                           "models": [{"settings": self.probe_model(run), "fwd_bwd": n, "checkpoints": p.get("seeds", 10)}]})
        a = self.admin_cfg()
        if "gradients" in a:  # one batch per seed and combination; Admin's omega profiled by a forward pass
            sec, run = a["gradients"], a["gradients"]["run"]
            seeds, layers = sec.get("seeds", 3), sec.get("layers", 18)
            models = [{"settings": self.probe_model(run, enc_layers=layers, dec_layers=layers, enc_norm=enc, dec_norm=dec),
                       "fwd_bwd": seeds, "forward": seeds * ("admin" in (enc, dec))}
                      for enc, dec in (c.split("/") for c in self.vanishing_combinations())]
            probes.append({"rule": "gradient_vanishing", "job": "liu_fig5", "group": "liu_fig5", "models": models})
        if "output_change" in a:  # per norm, depth and seed: 4 forwards, one Adam update, Admin's profile
            sec, run = a["output_change"], a["output_change"]["run"]
            seeds = sec.get("seeds", 3)

            def measured(norms):
                return [{"settings": self.probe_model(run, enc_layers=n, dec_layers=n, enc_norm=norm, dec_norm=norm),
                         "fwd_bwd": seeds, "forward": seeds * (4 + (norm == "admin"))}
                        for norm in norms for n in (int(d) for d in sec["depths"])]
            probes.append({"rule": "output_change", "job": "liu_fig2", "group": "liu_fig2",
                           "models": measured(OUTPUT_CHANGE_NORMS)})
            if sec.get("lab_norms"):  # the lab's figure (not in rule all): the same three and its schemes
                probes.append({"rule": "lab_output_change", "job": "lab_output_change", "group": "lab_output_change",
                               "models": measured((*OUTPUT_CHANGE_NORMS, *sec["lab_norms"]))})
        for fig, spec in a.get("layer_dependency", {}).items():  # a forward at init (Admin: + its profile) and at the last epoch
            models = [{"settings": self.probe_model(run), "forward": 2 + ("admin" in self.run_norms(run)), "checkpoints": 1}
                      for run in spec["runs"]]
            probes.append({"rule": "layer_dependency", "job": f"liu_{fig}", "group": f"liu_{fig}", "models": models})
        for fig, spec in a.get("update_norms", {}).items():  # per epoch pair: the gradient over `batches` batches
            models = []
            for run in spec["runs"]:
                epochs, drawn = self.trained_epochs(run), self.drawn_pairs(spec)
                pairs = epochs - 1 if drawn == "all" else len([i for i in drawn if i + 1 <= epochs])
                models.append({"settings": self.probe_model(run), "fwd_bwd": pairs * spec.get("batches", 8),
                               "checkpoints": 2 * pairs})
            probes.append({"rule": "update_norms", "job": f"liu_{fig}", "group": f"liu_{fig}", "models": models})
        return probes

    # ---- each job's wall time: resources.smk's runtime where the config sets none ---------------------
    def max_runtime(self):
        return self.config.get("resources", {}).get("max_runtime")

    def plan_throughput(self):
        return Throughput(self.config.get("plan"), max_runtime=self.max_runtime())

    def planned_job(self, rule, wildcards):
        """The plan's estimate of one job of a train, pretrain, evaluate, evaluate_averaged or finetune rule,
        from the config alone (never results/): its `runtime` is the minutes SLURM is asked for."""
        th, run = self.plan_throughput(), wildcards.run
        if rule in ("pretrain", "finetune"):
            s = self.plan_bert_run(run)
            vocab = bert_vocab(self.config["bert_corpora"][s["corpus"]])
            if rule == "pretrain":
                return pretrain_job(run, s, vocab, th, self.threads("train"))
            return finetune_job(run, s, vocab, self.bert_section()["finetune"], wildcards.task, int(wildcards.round), th,
                                self.training_cap().get("finetune_updates", 0), self.threads("evaluate"),
                                self.config.get("glue", {}).get(wildcards.task))
        s = self.plan_run(run)
        corpus = self.corpus_cfg(s["corpus"])
        if rule == "train":
            return train_job(run, s, corpus, th, self.threads("train"))
        average = int(wildcards.n) if rule == "evaluate_averaged" else 0
        return decode_job(run, s, corpus, self.decode_settings(s["corpus"], run), average, th, self.threads("evaluate"))

    def plan_spec(self, wildcards):
        return spec_argument({"runs": {run: self.plan_run(run) for run in self.config["runs"]},
                               "corpora": self.config["corpora"], "groups": self.plan_groups(),
                               "dicts": {corpus: self.bin_files(corpus)["dict"] for corpus in self.config["corpora"]},
                               "bert": {"runs": {run: self.plan_bert_run(run) for run in self.bert_runs()},
                                        "corpora": self.config.get("bert_corpora", {}), "finetune": self.bert_section().get("finetune"),
                                        "tasks": self.bert_section().get("fig5", {}).get("tasks", []),
                                        "finetune_rounds": {run: len(self.finetuned_rounds(run)) for run in self.finetuned_runs()},
                                        "finetune_updates": self.training_cap().get("finetune_updates", 0),
                                        "glue": {task: self.config["glue"][task] for task in self.bert_section().get("fig5", {}).get("tasks", [])}},
                               "checkpoints": {"keep": self.config.get("checkpoints", {}).get("keep", "all"),
                                               "needs": {run: self.checkpoint_needs(run) for run in self.checkpoint_readers()}},
                               "decodes": self.plan_decodes(), "probes": self.plan_probes(),
                               "threads": {kind: self.threads(kind) for kind in ("train", "evaluate")},
                               "plan": self.config.get("plan", {}),  # the throughput: lnrepro plan's defaults where absent
                               "max_runtime": self.max_runtime(),
                               "runtimes": {kind: {"explicit": self.config.get("resources", {}).get(kind, {}).get("runtime"),
                                                   "default": self.RESOURCE_DEFAULTS[kind]["runtime"]}
                                            for kind in ("train", "evaluate")}})
