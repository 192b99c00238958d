"""What plan.smk's rules ask of the config (parse time; no torch), and each job's planned wall time,
which resources.smk asks SLURM for (the same functions of lnrepro.analyses.plan as `lnrepro plan`)."""
import os
import re

from lnrepro.analyses.plan import (Throughput, bert_vocab, checkpoint_bytes, corpus_vocab, decode_job, finetune_job, gb,
                                   pretrain_job, train_job, translation_params)
from lnrepro.pipeline.products import products
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import OUTPUT_CHANGE_NORMS, PLAN_KEYS, TRAIN_DEFAULTS


class Plan:
    # Values far outside both papers' (config/config.yaml trains at most 100 epochs, decodes with beam 4-5,
    # reads at most WMT14's ~4.5M pairs): said when the DAG is planned, before days of jobs or a full disk
    FAR_OUT = {"epochs": 1_000, "beam": 50, "n_train": 10_000_000}

    def __init__(self, config, workflow, admin, bert, checkpoint_reads, errors, evaluate, probe, resources, retention, runs, sweeps, train):
        self.config = config
        self.workflow = workflow
        self.admin = admin
        self.bert = bert
        self.checkpoint_reads = checkpoint_reads
        self.errors = errors
        self.evaluate = evaluate
        self.probe = probe
        self.resources = resources
        self.retention = retention
        self.runs = runs
        self.sweeps = sweeps
        self.train = train

    def note_far_out_values(self):
        """One note per value far outside the papers' (FAR_OUT), with what it costs where the plan can say."""
        if not self.workflow.is_main_process:  # every job parses the Snakefile again: no need to resolve each run there
            return
        keep = self.config.get("checkpoints", {}).get("keep", "all")
        for run in self.config["runs"]:
            s = self.runs.run_settings(run)
            if s["epochs"] > self.FAR_OUT["epochs"]:
                params = translation_params(s, corpus_vocab(self.runs.corpus_cfg(s["corpus"]))[0])
                per_epoch, last = checkpoint_bytes(params, s["optimizer"], s.get("momentum", 0.0))
                disk = per_epoch * s["epochs"] + last if keep == "all" else last
                self.errors.note(f"config runs.{run}.epochs: {s['epochs']:,}, over {self.FAR_OUT['epochs']:,} (the papers' longest "
                                 f"run trains 100): ~{gb(disk)} GB of its checkpoints under checkpoints.keep {keep}; "
                                 f"`snakemake results/plan.md` prices every run")
        for name, c in self.config["corpora"].items():
            beam = c.get("decode", {}).get("beam", 0)
            if beam > self.FAR_OUT["beam"]:
                self.errors.note(f"config corpora.{name}.decode.beam: {beam:,}, over {self.FAR_OUT['beam']} (the papers decode with "
                                 f"4-5): decoding's memory and time grow with it")
            n = c.get("generator", {}).get("n_train", 0) if c["source"] == "generated" else 0
            if n > self.FAR_OUT["n_train"]:
                self.errors.note(f"config corpora.{name}.generator.n_train: {n:,}, over {self.FAR_OUT['n_train']:,} (WMT14 has ~4.5M "
                                 f"pairs): the generator holds the corpus in memory")
    def plan_settings(self, settings):
        """What the plan reads of a run's resolved settings (run_settings, bert_run_settings)."""
        return {k: v for k, v in settings.items() if k in PLAN_KEYS}

    def plan_groups(self):
        """Each figure's and table's runs: the config's figures, the admin section's tables and figures, BERT's,
        and each sweep's (its table, phase diagram and the lab's claims)."""
        groups = {product.name: self.product_runs(product) for product in products(self.config) if product.trains}
        for sweep in self.config.get("sweeps") or {}:  # not in rule all, priced all the same: its own targets
            groups[f"sweeps.{sweep}"] = self.sweeps.sweep_runs(sweep)
        return {g: list(dict.fromkeys(runs)) for g, runs in groups.items()}

    def product_runs(self, product):
        """What a product's plan group prices (products.Product.trains): its runs, and BERT's fine-tunings."""
        if product.trains == "panels":
            return [run for panel in self.config["figures"][product.name]["panels"] for run in panel["runs"]]
        if product.trains == "table":
            return self.admin.table_runs(product.section[-1])
        if product.trains == "figure":
            return self.admin.figure_cfg(*product.section[1:])["runs"]
        fig5 = self.runs.bert_section()["fig5"]  # trains: bert
        return fig5["runs"] + [f"{run} fine-tuning" for run in self.bert.finetuned_runs()]

    def plan_run(self, run):
        """The run's settings and, in a capped config (training_cap), the trainer's cap flags' values."""
        rounds, round_updates = self.train.train_cap(run)
        return {**self.plan_settings(self.runs.run_settings(run)), "max_rounds": rounds, "max_round_updates": round_updates}

    def plan_bert_run(self, run):
        cap = self.runs.training_cap()
        return {**self.plan_settings(self.runs.bert_run_settings(run)), "max_rounds": cap.get("bert_rounds", 0),
                "max_round_updates": cap.get("bert_round_updates", 0)}

    # ---- what the DAG decodes and probes, as the plan counts it -------------------------------------
    def plan_decodes(self):
        """The DAG's evaluate and evaluate_averaged jobs (Retention.eval_files: every results/eval/ file a
        target reads): their run, how many checkpoints are averaged (0: every epoch decoded), the decoding."""
        decodes = []
        for f in self.retention.eval_files():
            run = self.retention.path_run(f)
            average = re.fullmatch(r"bleu_avg(\d+)\.csv", os.path.basename(f))
            decodes.append({"run": run, "average": int(average.group(1)) if average else 0,
                            "decode": self.evaluate.decode_settings(self.runs.run_corpus(run), run)})
        return decodes

    def probe_model(self, run, **model):
        return {**self.plan_settings(self.runs.run_settings(run)), **model}

    def trained_epochs(self, run):
        epochs, cap = self.runs.run_settings(run).get("epochs", TRAIN_DEFAULTS["epochs"]), self.train.train_cap(run)[0]
        return min(epochs, cap) if cap else epochs

    def plan_probes(self):
        """The DAG's probe jobs and their passes, counted from their settings as the commands run them:
        {rule, job, group, models: [{settings, fwd_bwd, forward, checkpoints}]}, one batch of the run's
        max_tokens per pass."""
        probes = []
        if self.config.get("gradient_probe"):
            p, run = self.probe.probe_cfg(), self.probe.probe_cfg()["run"]
            n = p.get("seeds", 10) * p.get("batches", 4)  # probe-gradients: every seed's model over its batches
            for norm in ("post", "pre"):
                for layers in self.probe.probe_layers():
                    model = self.probe_model(run, enc_layers=layers, dec_layers=layers, enc_norm=norm, dec_norm=norm)
                    probes.append({"rule": "probe_gradients", "job": f"{norm}_{layers}L", "group": "fig3",
                                   "models": [{"settings": model, "fwd_bwd": n}]})
            probes.append({"rule": "probe_after_warmup", "job": run, "group": "fig3",
                           "models": [{"settings": self.probe_model(run), "fwd_bwd": n, "checkpoints": p.get("seeds", 10)}]})
        a = self.admin.admin_cfg()
        if "gradients" in a:  # one batch per seed and combination; Admin's omega profiled by a forward pass
            sec, run = a["gradients"], a["gradients"]["run"]
            seeds, layers = sec.get("seeds", 3), sec.get("layers", 18)
            models = [{"settings": self.probe_model(run, enc_layers=layers, dec_layers=layers, enc_norm=enc, dec_norm=dec),
                       "fwd_bwd": seeds, "forward": seeds * ("admin" in (enc, dec))}
                      for enc, dec in (c.split("/") for c in self.admin.vanishing_combinations())]
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
            models = [{"settings": self.probe_model(run), "forward": 2 + ("admin" in self.runs.run_norms(run)), "checkpoints": 1}
                      for run in spec["runs"]]
            probes.append({"rule": "layer_dependency", "job": f"liu_{fig}", "group": f"liu_{fig}", "models": models})
        for fig, spec in a.get("update_norms", {}).items():  # per epoch pair: the gradient over `batches` batches
            models = []
            for run in spec["runs"]:
                epochs, drawn = self.trained_epochs(run), self.checkpoint_reads.drawn_pairs(spec)
                pairs = epochs - 1 if drawn == "all" else len([i for i in drawn if i + 1 <= epochs])
                models.append({"settings": self.probe_model(run), "fwd_bwd": pairs * spec.get("batches", 8),
                               "checkpoints": 2 * pairs})
            probes.append({"rule": "update_norms", "job": f"liu_{fig}", "group": f"liu_{fig}", "models": models})
        return probes

    # ---- each job's wall time: resources.smk's runtime where the config sets none ---------------------
    def runtime(self, kind, rule=None):
        """Time limit (minutes) of a job of this kind; a job killed at its limit is retried with a
        longer one, and training resumes from its last complete epoch. The config's
        `resources.KIND.runtime` where it sets one; else, for a job the cost plan estimates (rule: train,
        pretrain, evaluate, evaluate_averaged, finetune), its planned runtime (Plan.planned_job: from the
        config alone, as results/plan_jobs.csv lists it), at most `resources.max_runtime`; else
        RESOURCE_DEFAULTS."""

        def per_attempt(wildcards, attempt):
            if rule and "runtime" not in self.config.get("resources", {}).get(kind, {}):
                job = self.planned_job(rule, wildcards)
                if job["runtime"] is not None:  # None: a corpus of a size the config does not state
                    return self.plan_throughput().runtime(job["minutes"], attempt)  # at most resources.max_runtime
            return self.resources.job_resources(kind)["runtime"] * attempt

        return per_attempt

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
                return pretrain_job(run, s, vocab, th, self.resources.threads("train"))
            return finetune_job(run, s, vocab, self.runs.bert_section()["finetune"], wildcards.task, int(wildcards.round), th,
                                self.runs.training_cap().get("finetune_updates", 0), self.resources.threads("evaluate"),
                                self.config.get("glue", {}).get(wildcards.task))
        s = self.plan_run(run)
        corpus = self.runs.corpus_cfg(s["corpus"])
        if rule == "train":
            return train_job(run, s, corpus, th, self.resources.threads("train"))
        average = int(wildcards.n) if rule == "evaluate_averaged" else 0
        return decode_job(run, s, corpus, self.evaluate.decode_settings(s["corpus"], run), average, th, self.resources.threads("evaluate"))

    def plan_spec(self, wildcards):
        return spec_argument({"runs": {run: self.plan_run(run) for run in self.config["runs"]},
                               "corpora": self.config["corpora"], "groups": self.plan_groups(),
                               "dicts": {corpus: self.runs.bin_files(corpus)["dict"] for corpus in self.config["corpora"]},
                               "bert": {"runs": {run: self.plan_bert_run(run) for run in self.runs.bert_runs()},
                                        "corpora": self.config.get("bert_corpora", {}), "finetune": self.runs.bert_section().get("finetune"),
                                        "tasks": self.runs.bert_section().get("fig5", {}).get("tasks", []),
                                        "finetune_rounds": {run: len(self.bert.finetuned_rounds(run)) for run in self.bert.finetuned_runs()},
                                        "finetune_updates": self.runs.training_cap().get("finetune_updates", 0),
                                        "glue": {task: self.config["glue"][task] for task in self.runs.bert_section().get("fig5", {}).get("tasks", [])}},
                               "checkpoints": {"keep": self.config.get("checkpoints", {}).get("keep", "all"),
                                               "needs": {run: self.retention.checkpoint_needs(run) for run in self.retention.checkpoint_readers()}},
                               "decodes": self.plan_decodes(), "probes": self.plan_probes(),
                               "threads": {kind: self.resources.threads(kind) for kind in ("train", "evaluate")},
                               "plan": self.config.get("plan", {}),  # the throughput: lnrepro plan's defaults where absent
                               "max_runtime": self.max_runtime(),
                               "runtimes": {kind: {"explicit": self.config.get("resources", {}).get(kind, {}).get("runtime"),
                                                   "default": self.resources.RESOURCE_DEFAULTS[kind]["runtime"]}
                                            for kind in ("train", "evaluate")}})
