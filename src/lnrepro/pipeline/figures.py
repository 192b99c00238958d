"""What figures.smk's rules ask of the config (parse time; no torch)."""

from lnrepro import paths
from lnrepro.pipeline.run_pairs import flag_pairs, input_lists
from lnrepro.pipeline.spec_argument import spec_argument


class Figures:
    def __init__(self, config, runs):
        self.config, self.runs = config, runs

    def figure_runs(self, fig):
        return sorted({run for panel in self.config["figures"][fig]["panels"] for run in panel["runs"]})

    def figure_files(self, fig):
        """{flag: {run: path}} plot_figure reads: every run's metrics; BLEU (a decode of every epoch) only
        for the runs a BLEU panel draws. Its input and its command's pairs, both."""
        panels = self.config["figures"][fig]["panels"]
        decoded = sorted({run for panel in panels if panel["metric"] == "bleu" for run in panel["runs"]})
        return {"metrics": {run: paths.metrics(run) for run in self.figure_runs(fig)},
                "bleu": {run: paths.bleu(run) for run in decoded}}

    def figure_inputs(self, wildcards):
        return input_lists(self.figure_files(wildcards.fig))

    def figure_pairs(self, wildcards):
        """--metrics RUN=PATH ... --bleu RUN=PATH ...: the files of its input, by run."""
        return flag_pairs(self.figure_files(wildcards.fig))

    def figure_spec(self, wildcards):
        """The figure's panels plus the settings of the runs it draws (for legends)."""
        spec = dict(self.config["figures"][wildcards.fig])
        spec["run_settings"] = {run: self.runs.run_settings(run) for run in self.figure_runs(wildcards.fig)}
        return spec_argument(spec)
