"""What probe.smk's rules ask of the config (parse time; no torch)."""

from snakemake.io import expand

from lnrepro import paths
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import PROBE_KEYS, TRAIN_DEFAULTS, WARMUP_PROBE_KEYS, cli_flags, picked_flags


class Probe:
    def __init__(self, config, errors, runs, sections):
        self.config = config
        self.errors = errors
        self.runs = runs
        self.sections = sections

    def probed_warmup(self, run):
        """The run's T_warmup as it trains: the trainer's default where it sets none."""
        return self.runs.run_settings(run).get("warmup", TRAIN_DEFAULTS["warmup"])

    def check_probe_config(self):
        probe = self.config.get("gradient_probe")
        if probe:
            run = probe["run"]
            if run not in self.config["runs"]:
                self.errors.unknown_name("gradient_probe.run", run, "a run", "runs", self.config["runs"])
            if self.probed_warmup(run) <= 1 or self.runs.run_norms(run) != ("post", "post"):  # as it trains: the trainer's defaults too
                self.errors.config_error(f"gradient_probe.run: '{run}' must be a Post-LN run with a warm-up (Fig 3: after warm-up)")

    def probe_cfg(self):
        self.sections.checked("probe")
        if not self.config.get("gradient_probe"):
            self.errors.config_error(f"Fig 3 ({paths.figure('fig3')}, {paths.RESULTS}/probe/) needs a 'gradient_probe' section")
        return self.config["gradient_probe"]

    def probe_settings(self):
        """The probed run's settings: corpus, width, batch size, label smoothing; its depth is drawn in (a,b)."""
        return self.runs.run_settings(self.probe_cfg()["run"])

    def probed_depth(self):
        """The probed run's decoder depth: probed at init beside the configured depths, and drawn in Fig 3."""
        return self.probe_settings().get("dec_layers", TRAIN_DEFAULTS["dec_layers"])

    def probe_layers(self):
        """Depths probed at init: the configured model sizes and the probed run's own depth."""
        return sorted(set(self.probe_cfg()["depths"]) | {self.probed_depth()})

    def probe_data(self, wildcards):
        files = self.runs.run_bin_files(self.probe_cfg()["run"])
        return {"dict": files["dict"], "train": files["train"]}

    def probe_bin_dir(self, wildcards):
        return self.runs.run_data_dir(self.probe_cfg()["run"])

    def probe_common_flags(self):
        p = self.probe_cfg()
        return cli_flags({"seeds": p.get("seeds", 10), "batches": p.get("batches", 4)})

    def probe_flags(self, wildcards):
        """At init: the probed run's width and batches; its depth and norm come from the wildcards."""
        s = self.probe_settings()
        return f"{self.probe_common_flags()} {picked_flags(s, PROBE_KEYS)}"

    def warmup_probe_inputs(self, wildcards):
        return {**self.probe_data(wildcards), "metrics": paths.metrics(wildcards.run)}

    def warmup_probe_flags(self, wildcards):
        """After warm-up: the checkpoint of the first epoch past the run's T_warmup updates."""
        s = self.runs.run_settings(wildcards.run)
        batches = {k: s[k] for k in WARMUP_PROBE_KEYS if k in s}
        return f"{self.probe_common_flags()} {cli_flags({**batches, 'after_updates': self.probed_warmup(wildcards.run)})}"

    def probe_files(self, kind):
        init = expand(paths.probe("init/{norm}_{layers}L", "{kind}"), norm=["post", "pre"], layers=self.probe_layers(), kind=kind)
        return [*init, paths.probe(f"after_warmup/{self.probe_cfg()['run']}", kind)]

    def gradient_figure_inputs(self, wildcards):
        return {"grads": self.probe_files("grads"), "concentration": self.probe_files("concentration")}

    def gradient_figure_spec(self, wildcards):
        p = self.probe_cfg()
        return spec_argument({"title": p["title"], "panel_layers": self.probed_depth()})
