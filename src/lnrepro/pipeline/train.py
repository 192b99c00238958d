"""What train.smk's rules ask of the config (parse time; no torch)."""
from lnrepro import paths
from lnrepro.settings import STEP_SCHEDULES, launched_trainer_flags, trainer_flags


class Train:
    def __init__(self, runs):
        self.runs = runs

    def model_flags(self, wildcards):
        """The run's own settings: what its training and its Admin profiling depend on."""
        return trainer_flags(self.runs.run_settings(wildcards.run))

    def uses_admin(self, run):
        s = self.runs.run_settings(run)
        return "admin" in (s.get("enc_norm"), s.get("dec_norm"))

    def omega_file(self, run):
        return paths.omega(run)

    def train_flags(self, wildcards):
        """Only this run's settings reach its training job, so an edit reruns only this run."""
        flags = launched_trainer_flags(self.runs.run_settings(wildcards.run))
        flags += f" --admin-omega {self.omega_file(wildcards.run)}" if self.uses_admin(wildcards.run) else ""
        return flags + self.train_cap_flags(wildcards.run) + self.runs.log_flags(wildcards.run)

    def train_cap(self, run):
        """(epochs, epoch_updates), 0 where uncapped: at most `epochs` epochs of at most `epoch_updates`
        updates; a run whose lr steps down at decay_epoch trains up to that epoch, so the decay is exercised too."""
        cap, s = self.runs.training_cap(), self.runs.run_settings(run)
        epochs = cap.get("epochs", 0)
        if epochs and s.get("schedule") in STEP_SCHEDULES:
            epochs = max(epochs, s.get("decay_epoch", 0))
        return epochs, cap.get("epoch_updates", 0)

    def train_cap_flags(self, run):
        return self.runs.cap_flags(*self.train_cap(run))

    def run_data(self, wildcards):
        return self.runs.run_bin_files(wildcards.run)

    def train_data(self, wildcards):
        files = self.run_data(wildcards)
        if self.uses_admin(wildcards.run):
            files["omega"] = self.omega_file(wildcards.run)
        return files
