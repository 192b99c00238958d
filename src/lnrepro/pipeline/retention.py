"""What retention.smk's rules ask of the config (parse time; no torch)."""
import functools
import json
import os
import pathlib

from lnrepro import paths
from lnrepro.pipeline.products import TABLE_SECTIONS


# keep: all (the default) adds no job and deletes nothing.


class Retention:
    def __init__(self, config, admin, bert, checkpoint_reads, claims, figures, probe, runs):
        self.config = config
        self.admin = admin
        self.bert = bert
        self.checkpoint_reads = checkpoint_reads
        self.claims = claims
        self.figures = figures
        self.probe = probe
        self.runs = runs

    def keep_all_checkpoints(self):
        return self.config.get("checkpoints", {}).get("keep", "all") == "all"

    def path_run(self, path):
        """results/<stage>/<run>/...: the run."""
        return pathlib.PurePosixPath(path).parts[2]

    def trained_dir(self, run):
        return paths.run_dir(run, "pretrain" if run in self.runs.bert_runs() else "train")

    def claim_files(self):
        """{flag: {run: path}} the claims table reads (its runs' metrics and BLEU), where this config has one."""
        return self.claims.claims_files() if self.claims.applicable_claims() else {"metrics": {}, "bleu": {}}

    def table_sections(self):
        """The admin tables and lr grid this config has: each reads its runs' metrics and BLEU."""
        return [section for section in TABLE_SECTIONS if section in self.admin.admin_cfg()]

    def eval_files(self):
        """Every results/eval/ file a target of this config reads: figures' BLEU panels, claims, tables."""
        files = [f for fig in self.config["figures"] for f in self.figures.figure_files(fig)["bleu"].values()]
        files += sorted(self.claim_files()["bleu"].values())
        files += [f for section in self.table_sections() for f in self.admin.table_files(section)["bleu"].values()]
        return list(dict.fromkeys(files))

    def admin_figure_runs(self, section):
        """{fig: its runs} of an admin figure section (layer_dependency, update_norms)."""
        return {fig: spec["runs"] for fig, spec in self.admin.admin_cfg().get(section, {}).items()}

    def trained_runs(self):
        """The runs whose training this config's targets ask for (their metrics.csv is read)."""
        runs = [run for fig in self.config["figures"] for run in self.figures.figure_runs(fig)]
        claimed = self.claim_files()["metrics"]
        runs += sorted(claimed, key=claimed.get)  # in the order of their files
        runs += [run for section in self.table_sections() for run in self.admin.table_runs(section)]
        runs += [run for section in self.admin.FIGURE_SECTIONS for runs_ in self.admin_figure_runs(section).values() for run in runs_]
        runs += [self.probe.probe_cfg()["run"]] if self.config.get("gradient_probe") else []
        runs += self.runs.bert_section()["fig5"]["runs"] if self.runs.bert_section().get("fig5") else []
        return list(dict.fromkeys(runs))

    def merged_pairs(self, have, firsts):
        """The update-norm pairs of two figures of one run: their first epochs, or "all" where one draws every pair."""
        return "all" if "all" in (have, firsts) else sorted({*have, *firsts})

    @functools.cache
    def checkpoint_readers(self):
        """{run: (the outputs of the steps that read its checkpoints, what they need kept)}."""
        readers = {run: ([], {}) for run in self.trained_runs()}
        for f in self.eval_files():  # results/eval/{run}/bleu.csv or bleu_avg{n}.csv
            run = self.path_run(f)
            readers[run][0].append(f)
            if os.path.basename(f).startswith("bleu_avg"):
                readers[run][1]["average_last"] = self.admin.averaged_checkpoints(run)
        if self.config.get("gradient_probe"):
            run = self.probe.probe_cfg()["run"]
            readers[run][0].append(self.probe.probe_files("grads")[-1])  # the after-warm-up probe
            readers[run][1]["after_updates"] = self.probe.probed_warmup(run)
        for fig, runs in self.admin_figure_runs("layer_dependency").items():
            for run in runs:
                readers[run][0].append(paths.figure(f"liu_{fig}"))
                readers[run][1]["last"] = True
        for fig, runs in self.admin_figure_runs("update_norms").items():
            firsts = self.checkpoint_reads.drawn_pairs(self.admin.figure_cfg("update_norms", fig))
            for run in runs:
                readers[run][0].append(paths.figure(f"liu_{fig}"))
                readers[run][1]["update_pairs"] = self.merged_pairs(readers[run][1].get("update_pairs", []), firsts)
        if self.runs.bert_section().get("fig5") and "finetune" in self.runs.bert_section():
            for f in self.bert.fig5_summaries():  # results/finetune/{run}/{task}/round{r}.summary.csv
                readers[self.path_run(f)][0].append(f)
            for run in self.runs.bert_section()["fig5"]["runs"]:
                readers[run][1]["rounds"] = self.bert.finetuned_rounds(run)
        return {run: (list(dict.fromkeys(files)), needs) for run, (files, needs) in readers.items()}

    def checkpoint_needs(self, run):
        return self.checkpoint_readers()[run][1]

    def retention_targets(self):
        return [] if self.keep_all_checkpoints() else [f"{self.trained_dir(run)}/retained.json" for run in self.checkpoint_readers()]

    def retain_inputs(self, wildcards):
        return {"metrics": f"{self.trained_dir(wildcards.run)}/metrics.csv", "readers": self.checkpoint_readers()[wildcards.run][0]}

    def retain_needs(self, wildcards):
        return json.dumps(self.checkpoint_needs(wildcards.run), sort_keys=True)
