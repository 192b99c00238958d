"""What resources.smk's rules ask of the config (parse time; no torch)."""
from lnrepro.settings import LAUNCH_DEFAULTS


class Resources:
    RESOURCE_DEFAULTS = {  # attempt 1; a retry (attempt N) asks for N times as much
        "data": {"mem_mb": 4000, "runtime": 60},
        "train": {"mem_mb": 8000, "runtime": 240},
        "evaluate": {"mem_mb": 8000, "runtime": 120},
    }

    def __init__(self, config, runs):
        self.config, self.runs = config, runs

    def threads(self, kind):
        return self.config.get("threads", {}).get(kind, {"data": 2, "train": 1, "evaluate": 1}[kind])

    def job_resources(self, kind):
        return {**self.RESOURCE_DEFAULTS[kind], **self.config.get("resources", {}).get(kind, {})}

    def mem_mb(self, kind):
        """Memory (MB) of a job of this kind; attempt N (a retry) asks for N times as much."""

        def per_attempt(wildcards, attempt):
            return self.job_resources(kind)["mem_mb"] * attempt

        return per_attempt

    # ---- GPUs and processes of a run ----------------------------------------------------------------
    def run_nodes(self, run):
        return self.runs.run_settings(run).get("nodes", LAUNCH_DEFAULTS["nodes"])

    def run_gpus(self, run):
        """Training processes per node: one per GPU (CPU worker processes when the device is cpu)."""
        return self.runs.run_settings(run).get("gpus", LAUNCH_DEFAULTS["gpus"])

    def wants_gpu(self, run):
        """`resources.gpu`: auto asks for GPUs for runs that would use one (device cuda or auto);
        always also for device cpu (a test cluster with fake GPUs); never."""
        mode = self.config.get("resources", {}).get("gpu", "auto")
        if mode == "auto":
            return self.runs.run_settings(run).get("device", "auto") != "cpu"
        return mode == "always"

    def gpu_model(self):
        """`resources.gpu_model` (e.g. a100): sbatch --gpus=a100:N; None: any GPU."""
        return self.config.get("resources", {}).get("gpu_model") or None

    def gpu_spec(self, count):
        return f"{self.gpu_model()}:{count}" if self.gpu_model() else str(count)

    def train_threads(self, wildcards):
        """CPU threads per node: the configured training threads for each of its processes."""
        return self.threads("train") * self.run_gpus(wildcards.run)

    def train_gpu(self, wildcards):
        """A one-node run asks for its GPUs as `gpu` (sbatch --gpus); see train_slurm_extra for more."""
        if self.wants_gpu(wildcards.run) and self.run_nodes(wildcards.run) == 1:
            return self.run_gpus(wildcards.run)
        return None

    def eval_gpu(self, wildcards):
        return 1 if self.wants_gpu(wildcards.run) else None

    def train_gpu_model(self, wildcards):
        """Only beside a `gpu` request: the executor turns a lone gpu_model into --gpus=MODEL:1."""
        return self.gpu_model() if self.train_gpu(wildcards) else None

    def eval_gpu_model(self, wildcards):
        return self.gpu_model() if self.eval_gpu(wildcards) else None

    def multi_node(self, wildcards):
        return self.run_nodes(wildcards.run) > 1

    def train_nodes(self, wildcards):
        return self.run_nodes(wildcards.run) if self.multi_node(wildcards) else None

    def train_tasks(self, wildcards):
        """One SLURM task per node: each starts a torchrun agent for that node's processes."""
        return self.run_nodes(wildcards.run) if self.multi_node(wildcards) else None

    def train_mpi(self, wildcards):
        """Set for multi-node runs: the SLURM job step then runs the rule's command as it is, which
        starts its own `srun` (lnrepro.core.launch), instead of wrapping it in a one-task srun."""
        return "srun" if self.multi_node(wildcards) else None

    def train_slurm_extra(self, wildcards):
        """Multi-node runs: one task per node and the same GPUs on every node (--gpus would spread a
        total over the nodes in any proportion)."""
        if not self.multi_node(wildcards):
            return None
        extra = "--ntasks-per-node=1"
        if self.wants_gpu(wildcards.run):
            extra += f" --gpus-per-node={self.gpu_spec(self.run_gpus(wildcards.run))}"
        return extra
