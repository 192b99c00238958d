"""What admin.smk's rules ask of the config (parse time; no torch)."""
import shlex

from lnrepro import paths
from lnrepro.pipeline.run_pairs import flag_pairs, input_lists
from lnrepro.pipeline.products import TABLE_SECTIONS, of_section
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import (ADMIN_PROBE_KEYS, DEPENDENCY_KEYS, OUTPUT_CHANGE_NORMS, RUN_VALUE_DEFAULTS, UPDATE_NORM_KEYS,
                              cli_flags, picked_flags)


class Admin:
    FIGURE_SECTIONS = ("layer_dependency", "update_norms")  # {fig: {title, runs, ...}}: results/figures/liu_{fig}

    # what each run of Table 2's §5.2 block trains with (Liu: "FixUp (without using layer normalization)
    # and LookLinear (with Post-LN)")
    INIT_RUN_SETTINGS = {"fixup": {"enc_norm": "fixup", "dec_norm": "fixup"},
                         "looklinear": {"init": "looklinear", "enc_norm": "post", "dec_norm": "post"}}

    def __init__(self, config, errors, runs, sections):
        self.config = config
        self.errors = errors
        self.runs = runs
        self.sections = sections

    def admin_cfg(self, section=None):
        self.sections.checked("admin")
        a = self.config.get("admin", {})
        if section is None:
            return a
        if section not in a:
            self.errors.config_error(f"{of_section('admin', section).targets[0]} needs an 'admin.{section}' section")
        return a[section]

    def table_runs(self, section):
        """Every run a table or grid of the admin section reads, each once."""
        s = self.admin_cfg(section)
        if section == "table1":
            runs = [r["run"] for r in s["rows"]]
        elif section == "table2":
            runs = [run for runs in (*s["runs"].values(), *s.get("seed_runs", {}).values()) for run in runs]
            runs += list(s.get("init_runs", {}).values())
        else:
            runs = [c["run"] for c in s["cells"]]
        return list(dict.fromkeys(runs))

    def check_admin_config(self):
        a = self.admin_cfg()
        for section in ("gradients", "output_change"):
            if section in a and a[section]["run"] not in self.config["runs"]:
                self.errors.unknown_name(f"admin.{section}.run", a[section]["run"], "a run", "runs", self.config["runs"])
        for section in TABLE_SECTIONS:
            if section in a:
                for run in self.table_runs(section):
                    if run not in self.config["runs"]:
                        self.errors.unknown_name(f"admin.{section}", run, "a run", "runs", self.config["runs"])
        if "table2" in a:
            t2 = a["table2"]
            for norm, runs in t2["runs"].items():
                if len(runs) != len(t2["depths"]):
                    self.errors.config_error(f"admin.table2.runs.{norm}: {len(runs)} runs for {len(t2['depths'])} depths")
        for section in self.FIGURE_SECTIONS:
            for fig, spec in a.get(section, {}).items():
                for run in spec["runs"]:
                    if run not in self.config["runs"]:
                        self.errors.unknown_name(f"admin.{section}.{fig}.runs", run, "a run", "runs", self.config["runs"])
                if len({self.runs.run_data_dir(run) for run in spec["runs"]}) > 1:  # its probes feed them one data dir
                    self.errors.config_error(f"admin.{section}.{fig}.runs: the runs of one figure must share a corpus and "
                                             "its dictionaries (joined_dictionary)")
        if "table1" in a and "gradients" not in a:
            self.errors.config_error("admin.table1 needs admin.gradients (its 'gradient vanishing' column is measured there)")

    def check_run_is(self, key, run, says, **want):
        """One error line at `key` when the run does not train with `want` (`says`: who asks for it)."""
        values = {k: self.runs.run_value(run, k) for k in want}
        have = {k: v for k, v in values.items() if v != want[k]}
        if have:
            text = lambda d: ", ".join(f"{k} {d[k]}" for k in have)
            self.errors.config_error(f"{key}: {run} has {text(have)}; {says} {text(want)}")

    def check_update_norm_epochs(self, a):
        """The checkpoints Figs 3/11 read (epochs i and i+1 of each pair) are ones their runs write:
        a pair past a run's epochs is a planning error here, not a failed update_norms job."""
        for fig, spec in a.get("update_norms", {}).items():
            for run in spec["runs"]:
                epochs = self.runs.run_settings(run).get("epochs")
                late = [i for i in spec.get("epochs") or [] if epochs and i + 1 > epochs]
                if late:
                    self.errors.config_error(f"admin.update_norms.{fig}.epochs: the pair ({late[0]}, {late[0] + 1}) reads the "
                                             f"checkpoint of epoch {late[0] + 1}, but {run} trains {epochs} epochs")

    def check_admin_run_settings(self):
        """Each table cell's run trains what the cell is labelled with (the runs exist: checked above)."""
        a = self.admin_cfg()
        self.check_update_norm_epochs(a)
        for i, row in enumerate(a.get("table1", {}).get("rows", [])):
            self.check_run_is(f"admin.table1.rows[{i}].run", row["run"], "the row says", enc_norm=row["enc"], dec_norm=row["dec"])
        t2 = a.get("table2", {})
        for norm, runs in t2.get("runs", {}).items():
            for i, (run, depth) in enumerate(zip(runs, t2["depths"])):
                self.check_run_is(f"admin.table2.runs.{norm}[{i}]", run, f"its norm and depths[{i}] say",
                                  enc_norm=norm, dec_norm=norm, enc_layers=depth, dec_layers=depth)
        for norm, runs in t2.get("seed_runs", {}).items():
            first = self.runs.run_settings(runs[0])
            for i, run in enumerate(runs):
                key = f"admin.table2.seed_runs.{norm}[{i}]"
                self.check_run_is(key, run, "its norm says", enc_norm=norm, dec_norm=norm)
                keys = sorted({*first, *self.runs.run_settings(run)} - {"seed", "description"})
                self.check_run_is(key, run, f"the cell's runs differ only in seed, and {runs[0]} has",
                                  **{k: first.get(k, RUN_VALUE_DEFAULTS.get(k)) for k in keys})
            seeds = [self.runs.run_value(run, "seed") for run in runs]
            if len(set(seeds)) < len(seeds):
                self.errors.config_error(f"admin.table2.seed_runs.{norm}: seeds {seeds} repeat (one run per seed)")
        for init, run in t2.get("init_runs", {}).items():
            self.check_run_is(f"admin.table2.init_runs.{init}", run, "the block says", **self.INIT_RUN_SETTINGS[init])
        for i, cell in enumerate(a.get("lr_grid", {}).get("cells", [])):
            self.check_run_is(f"admin.lr_grid.cells[{i}].run", cell["run"], "the cell says",
                              enc_norm=cell["norm"], dec_norm=cell["norm"], lr=cell["lr"], adam_beta2=cell["beta2"])
        for fig, spec in a.get("layer_dependency", {}).items():
            for i, run in enumerate(spec["runs"]):
                enc, dec = self.runs.run_norms(run)
                if enc != dec:  # the figure labels each run with one norm (its encoder's)
                    self.errors.config_error(f"admin.layer_dependency.{fig}.runs[{i}]: {run} has enc_norm {enc}, dec_norm {dec}; "
                                             "a figure's run has one norm on both sides")
                if enc == "fixup":  # beta is carried through Post-LN, Pre-LN and Admin residuals only
                    self.errors.config_error(f"admin.layer_dependency.{fig}.runs[{i}]: {run} has norm fixup; the figure measures "
                                             "post, pre and admin runs")

    # ---- init-time probes: the named run's corpus, width and batches; depth from the section ----
    def admin_probe_settings(self, section):
        return self.runs.run_settings(self.admin_cfg(section)["run"])

    def admin_probe_data(self, section):
        files = self.runs.run_bin_files(self.admin_cfg(section)["run"])
        return {"dict": files["dict"], "train": files["train"]}

    def admin_probe_flags(self, section, keys, title=None):
        s, sec = self.admin_probe_settings(section), self.admin_cfg(section)
        own = {k: sec[k] for k in keys if k in sec}
        width = picked_flags(s, ADMIN_PROBE_KEYS)
        return f"--data {self.runs.run_data_dir(sec['run'])} {width} {cli_flags(own)} --title {shlex.quote(title or sec['title'])}"

    def vanishing_data(self, wildcards):
        return self.admin_probe_data("gradients")

    def vanishing_combinations(self):
        """Post/Post, Pre/Pre and Admin/Admin (drawn; Liu §4.3: Admin 'suffers from gradient vanishing'),
        plus every combination of Table 1."""
        rows = self.admin_cfg().get("table1", {}).get("rows", [])
        return list(dict.fromkeys(["post/post", "pre/pre", "admin/admin"] + [f"{r['enc']}/{r['dec']}" for r in rows]))

    def vanishing_flags(self, wildcards):
        flags = self.admin_probe_flags("gradients", ("layers", "seeds", "vanishing_below"))
        return f"{flags} --combinations {' '.join(self.vanishing_combinations())}"

    def output_change_data(self, wildcards):
        return self.admin_probe_data("output_change")

    def output_change_flags(self, wildcards, title=None):
        flags = self.admin_probe_flags("output_change", ("seeds", "delta"), title)
        return f"{flags} --depths {' '.join(str(int(n)) for n in self.admin_cfg('output_change')['depths'])}"

    def lab_output_change_flags(self, wildcards):
        """The lab's Fig 2: the paper's three schemes and admin.output_change.lab_norms, power-law fits."""
        section = self.admin_cfg("output_change")
        if not section.get("lab_norms"):
            self.errors.config_error(f"{paths.figure('lab_output_change')} needs admin.output_change.lab_norms (the schemes it adds)")
        title = f"The lab: output change vs depth at initialization, every scheme ({section['title']})"
        norms = [*OUTPUT_CHANGE_NORMS, *section["lab_norms"]]
        return f"{self.output_change_flags(wildcards, title)} --norms {' '.join(norms)} --fit power"

    # ---- tables and the lr grid: the runs' metrics and (averaged) BLEU ----
    def averaged_checkpoints(self, run):
        """Checkpoints averaged for a run's table BLEU: its own entry, else its corpus's, else 0 (none)."""
        table = self.admin_cfg().get("average_last", {})
        return table.get(run, table.get(self.runs.run_corpus(run), 0))

    def table_bleu_file(self, run):
        return paths.bleu(run, self.averaged_checkpoints(run))

    def table_files(self, section):
        """{flag: {run: path}} a table or the lr grid reads (admin_table1, admin_table2, lr_grid): each run's
        metrics and (averaged) BLEU. Its input and its command's pairs, both."""
        runs = self.table_runs(section)
        return {"metrics": {run: paths.metrics(run) for run in runs},
                "bleu": {run: self.table_bleu_file(run) for run in runs}}

    # The table rules' input functions, params and spec, one factory each: P.admin.table_inputs("table2")
    def table_inputs(self, section, **also):
        """unpack() input of a table or grid rule: its runs' metrics and (averaged) BLEU, and `also`."""
        return lambda wildcards: {**input_lists(self.table_files(section)), **also}

    def table_pairs(self, section):
        """--metrics RUN=PATH ... --bleu RUN=PATH ...: the files of its input, by run."""
        return lambda wildcards: flag_pairs(self.table_files(section))

    def table_spec(self, section, drawn_as=None):
        """The section plus what the command needs to read its runs, and nothing about other runs; under
        `drawn_as` where the command knows the section by another name (lr-grid reads lr_grid)."""
        def spec(wildcards):
            runs = self.table_runs(section)
            spec = {drawn_as or section: self.admin_cfg(section),
                    "run_corpus": {run: self.runs.run_corpus(run) for run in runs},
                    "average_last": {run: self.averaged_checkpoints(run) for run in runs}}
            if "converged_below" in self.admin_cfg():
                spec["converged_below"] = self.admin_cfg()["converged_below"]
            return spec_argument(spec)
        return spec

    def figure_cfg(self, section, fig):
        figures = self.admin_cfg().get(section, {})
        if fig not in figures:
            self.errors.config_error(f"{paths.figure(f'liu_{fig}')} needs admin.{section}.{fig}")
        return figures[fig]

    def figure_run(self, section, fig):
        """The run whose binarized data (corpus and dictionaries) a figure's probes read: its first."""
        return self.figure_cfg(section, fig)["runs"][0]

    def figure_data_dir(self, section, fig):
        return self.runs.run_data_dir(self.figure_run(section, fig))

    def dependency_cfg(self, wildcards):
        return self.figure_cfg("layer_dependency", wildcards.ldfig)

    def figure_metrics(self, section, fig):
        """{"metrics": {run: path}} a trained-run probe reads (layer_dependency, update_norms): each run's
        metrics.csv, through which it reads the checkpoints. Its input and its command's pairs, both."""
        return {"metrics": {run: paths.metrics(run) for run in self.figure_cfg(section, fig)["runs"]}}

    def dependency_inputs(self, wildcards):
        files = self.runs.run_bin_files(self.figure_run("layer_dependency", wildcards.ldfig))
        return {"dict": files["dict"], "train": files["train"],
                **input_lists(self.figure_metrics("layer_dependency", wildcards.ldfig))}

    def dependency_pairs(self, wildcards):
        """--metrics RUN=PATH ...: the metrics of its input, by run."""
        return flag_pairs(self.figure_metrics("layer_dependency", wildcards.ldfig))

    def dependency_data_dir(self, wildcards):
        return self.figure_data_dir("layer_dependency", wildcards.ldfig)

    def dependency_spec(self, wildcards):
        """The figure's title and its runs' settings: what rebuilds each run's model at init."""
        fig = self.dependency_cfg(wildcards)
        runs = {run: {k: v for k, v in self.runs.run_settings(run).items() if k in DEPENDENCY_KEYS} for run in fig["runs"]}
        return spec_argument({"title": fig["title"], "runs": runs})

    def update_norms_cfg(self, wildcards):
        return self.figure_cfg("update_norms", wildcards.unfig)

    def update_norms_inputs(self, wildcards):
        """The runs' metrics (their epoch checkpoints are written with them) and the corpus's batches."""
        return {"train": self.runs.run_bin_files(self.figure_run("update_norms", wildcards.unfig))["train"],
                **input_lists(self.figure_metrics("update_norms", wildcards.unfig))}

    def update_norms_pairs(self, wildcards):
        """--metrics RUN=PATH ...: the metrics of its input, by run."""
        return flag_pairs(self.figure_metrics("update_norms", wildcards.unfig))

    def update_norms_data_dir(self, wildcards):
        return self.figure_data_dir("update_norms", wildcards.unfig)

    def update_norms_spec(self, wildcards):
        fig = self.update_norms_cfg(wildcards)
        runs = {run: {k: self.runs.run_value(run, k) for k in UPDATE_NORM_KEYS} for run in fig["runs"]}
        return spec_argument({"title": fig["title"], "batches": fig.get("batches", 8), "epochs": fig.get("epochs"),
                              "runs": runs})
