"""Which epoch checkpoints each later step reads, as the DAG's inputs (issue 32, item 3).

`train` and `pretrain` are Snakemake checkpoint rules: once a run's metrics.csv (its manifest: each
row names the checkpoint it wrote) exists, the steps that read its checkpoints declare exactly those
files, picked from the manifest by the same rule as `lnrepro retain` keeps them
(lnrepro.retention.needed_epochs), which keeps all of them. A listed checkpoint that is not on
disk is then a planning error (Snakemake's missing input), not a job that fails.

Per-epoch decoding (evaluate) reads every checkpoint its manifest lists and declares none: under
`checkpoints: {keep: needed}` most are deleted after it by design, and a declared input that goes
missing, or a set of inputs that changes, would make Snakemake plan it again. Its rerun after they
are deleted is refused at its start in one line (lnrepro.retention.deleted_note)."""
import os

from lnrepro.retention import needed_epochs, trained_checkpoints


class CheckpointReads:
    def __init__(self, checkpoints, admin, probe, runs):
        self.checkpoints = checkpoints
        self.admin = admin
        self.probe = probe
        self.runs = runs

    def listed_checkpoints(self, run):
        """[(epoch, updates, path)] of the run's manifest; Snakemake plans a reader after its training."""
        stage = self.checkpoints.pretrain if run in self.runs.bert_runs() else self.checkpoints.train
        manifest = stage.get(run=run).output[0]
        # none where the training is done but wrote nothing: only `snakemake --touch` does that
        return trained_checkpoints(manifest) if os.path.exists(manifest) else []

    def read_checkpoints(self, run, needs):
        """The checkpoint files a step with these needs (retain's) reads."""
        listed = self.listed_checkpoints(run)
        epochs = needed_epochs(needs, [(e, u) for e, u, _ in listed])
        return [str(path) for epoch, _, path in listed if epoch in epochs]

    # one input item per rule (`checkpoints=`): until the training has run, Snakemake puts its
    # metrics.csv there in their place and plans them again once it has
    def last_checkpoints(self, wildcards):
        """evaluate_averaged: the last n."""
        return self.read_checkpoints(wildcards.run, {"average_last": int(wildcards.n)})

    def probed_checkpoint(self, wildcards):
        """Fig 3's after-warm-up probe: the first checkpoint past the run's T_warmup updates."""
        return self.read_checkpoints(wildcards.run, {"after_updates": self.probe.probed_warmup(wildcards.run)})

    def dependency_checkpoints(self, wildcards):
        """Figs 7-8: each run's last checkpoint."""
        return [f for run in self.admin.dependency_cfg(wildcards)["runs"] for f in self.read_checkpoints(run, {"last": True})]

    def drawn_pairs(self, fig):
        """The first epochs i of the pairs (i, i+1) an update-norms figure draws; epochs: null, "all"."""
        return "all" if fig.get("epochs") is None else fig["epochs"]

    def update_norm_checkpoints(self, wildcards):
        """Figs 3 and 11: both checkpoints of every pair drawn (epochs: null, every pair)."""
        fig = self.admin.update_norms_cfg(wildcards)
        pairs = {"update_pairs": self.drawn_pairs(fig)}
        return [f for run in fig["runs"] for f in self.read_checkpoints(run, pairs)]

    def finetuned_checkpoint(self, wildcards):
        """Fig 5: the pre-training round's checkpoint (none where the run diverged before it)."""
        return self.read_checkpoints(wildcards.run, {"rounds": [int(wildcards.round)]})
