# What each job asks for; common.smk includes this file, so every rule file has it. A job's
# `threads:` and, for a cluster, its `resources:`, from the config's `resources` section and
# each run's `device`, `nodes` and `gpus`. The SLURM executor (--profile slurm) turns them into
# sbatch options (gpu -> --gpus, nodes, tasks, mem_mb -> --mem, runtime -> --time). A local run
# counts only threads, and `gpu` where a profile sets a limit (profiles/local: resources gpu=1).
# Every value is None unless it applies, and Snakemake leaves a None resource out.

# Run beside Snakemake instead of queueing a cluster job: single-pass line filters and plots
# (seconds even on WMT14; queueing costs more) and downloads (compute nodes often have no network).
localrules:
    plot_figure,
    download_archive,
    check_counts,
    clean_corpus,
    lowercase,
    split_valid,
    copy_tokenized,


RESOURCE_DEFAULTS = {  # attempt 1; a retry (attempt N) asks for N times as much
    "data": {"mem_mb": 4000, "runtime": 60},
    "train": {"mem_mb": 8000, "runtime": 240},
    "evaluate": {"mem_mb": 8000, "runtime": 120},
}


def threads(kind):
    return config.get("threads", {}).get(kind, {"data": 2, "train": 1, "evaluate": 1}[kind])


def job_resources(kind):
    return {**RESOURCE_DEFAULTS[kind], **config.get("resources", {}).get(kind, {})}


def mem_mb(kind):
    """Memory (MB) of a job of this kind; attempt N (a retry) asks for N times as much."""

    def per_attempt(wildcards, attempt):
        return job_resources(kind)["mem_mb"] * attempt

    return per_attempt


def runtime(kind):
    """Time limit (minutes) of a job of this kind; a job killed at its limit is retried with a
    longer one, and training resumes from its last complete epoch."""

    def per_attempt(wildcards, attempt):
        return job_resources(kind)["runtime"] * attempt

    return per_attempt


# ---- GPUs and processes of a run ----------------------------------------------------------------
def run_nodes(run):
    return run_settings(run).get("nodes", LAUNCH_DEFAULTS["nodes"])


def run_gpus(run):
    """Training processes per node: one per GPU (CPU worker processes when the device is cpu)."""
    return run_settings(run).get("gpus", LAUNCH_DEFAULTS["gpus"])


def wants_gpu(run):
    """`resources.gpu`: auto asks for GPUs for runs that would use one (device cuda or auto);
    always also for device cpu (a test cluster with fake GPUs); never."""
    mode = config.get("resources", {}).get("gpu", "auto")
    if mode == "auto":
        return run_settings(run).get("device", "auto") != "cpu"
    return mode == "always"


def gpu_model():
    """`resources.gpu_model` (e.g. a100): sbatch --gpus=a100:N; None: any GPU."""
    return config.get("resources", {}).get("gpu_model") or None


def gpu_spec(count):
    return f"{gpu_model()}:{count}" if gpu_model() else str(count)


def train_threads(wildcards):
    """CPU threads per node: the configured training threads for each of its processes."""
    return threads("train") * run_gpus(wildcards.run)


def train_gpu(wildcards):
    """A one-node run asks for its GPUs as `gpu` (sbatch --gpus); see train_slurm_extra for more."""
    if wants_gpu(wildcards.run) and run_nodes(wildcards.run) == 1:
        return run_gpus(wildcards.run)
    return None


def eval_gpu(wildcards):
    return 1 if wants_gpu(wildcards.run) else None


def train_gpu_model(wildcards):
    """Only beside a `gpu` request: the executor turns a lone gpu_model into --gpus=MODEL:1."""
    return gpu_model() if train_gpu(wildcards) else None


def eval_gpu_model(wildcards):
    return gpu_model() if eval_gpu(wildcards) else None


def multi_node(wildcards):
    return run_nodes(wildcards.run) > 1


def train_nodes(wildcards):
    return run_nodes(wildcards.run) if multi_node(wildcards) else None


def train_tasks(wildcards):
    """One SLURM task per node: each starts a torchrun agent for that node's processes."""
    return run_nodes(wildcards.run) if multi_node(wildcards) else None


def train_mpi(wildcards):
    """Set for multi-node runs: the SLURM job step then runs the rule's command as it is, which
    starts its own `srun` (lnrepro.core.launch), instead of wrapping it in a one-task srun."""
    return "srun" if multi_node(wildcards) else None


def train_slurm_extra(wildcards):
    """Multi-node runs: one task per node and the same GPUs on every node (--gpus would spread a
    total over the nodes in any proportion)."""
    if not multi_node(wildcards):
        return None
    extra = "--ntasks-per-node=1"
    if wants_gpu(wildcards.run):
        extra += f" --gpus-per-node={gpu_spec(run_gpus(wildcards.run))}"
    return extra
