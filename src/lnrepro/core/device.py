"""The torch device a run computes on (pick_device), for the trainers and every command that runs a
model: a GPU that was asked for, or given to the job, but that torch cannot use stops the command at
once, naming the node, the torch build and the fix."""
import os
import socket
import sys
from pathlib import Path

import torch

DEVICE_NOTE = "lnrepro: device"  # pick_device's lines start so: workflow/lib/run_progress.py shows them at once

# A job that asks for a GPU and gets a torch that cannot use one stops before it starts: training on
# the CPU instead would spend a GPU allocation (a 12-hour SLURM slot) on a run that never ends in time.
VISIBLE_GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS")
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one entry per GPU where NVIDIA's driver is loaded


def gpus_given(environ=None, nvidia=NVIDIA_GPUS):
    """What shows this process was given GPUs, or None: GPUs SLURM or the user made visible to it
    (SLURM sets CUDA_VISIBLE_DEVICES for a job's --gpus), or, outside SLURM, an NVIDIA GPU in this node."""
    environ = os.environ if environ is None else environ
    for key in VISIBLE_GPU_VARIABLES:
        value = environ.get(key, "").strip()
        if value and value not in ("-1", "NoDevFiles"):  # hidden GPUs; older SLURM's "none allocated"
            return f"{key}={value}"
    # in a SLURM job only its allocation counts: a CPU job on a GPU node sees the node's GPUs in /proc
    if "SLURM_JOB_ID" not in environ and nvidia.is_dir() and any(nvidia.iterdir()):
        return f"an NVIDIA GPU in {nvidia}"
    return None


def torch_build():
    """'torch 2.9.0+cpu (CPU-only build)', 'torch 2.9.0+cu128 (CUDA 12.8 build)'."""
    kind = (f"CUDA {torch.version.cuda} build" if torch.version.cuda
            else f"ROCm {torch.version.hip} build" if getattr(torch.version, "hip", None) else "CPU-only build")
    return f"torch {torch.__version__} ({kind})"


def no_cuda(asked):
    """The one message of a run that asked for CUDA where torch cannot use it: the node, the build, the fix."""
    # SLURM's name of the node (what sinfo and an admin know it by), else its hostname
    node, build = os.environ.get("SLURMD_NODENAME") or socket.gethostname(), torch_build()
    if torch.version.cuda or getattr(torch.version, "hip", None):  # a GPU build that sees no GPU
        return (f"{DEVICE_NOTE} {asked}, but on node {node} {build} sees no usable GPU "
                f"(torch.cuda.device_count() = {torch.cuda.device_count()}). Fix: check the node's GPU "
                f"driver (nvidia-smi) and that the job was given a GPU, or set the run's device: cpu")
    return (f"{DEVICE_NOTE} {asked}, but node {node} has {build}, which cannot use a GPU. Fix: install a CUDA "
            f"build of torch in the environment the job runs in, e.g. TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 "
            f"bash workflow/scripts/setup.sh (the CUDA version the node's driver supports), or set the run's device: cpu")


def pick_device(name):
    """The torch device of `--device`. cuda (or cuda:N) must be usable, and so must auto in a job
    given GPUs (gpus_given); auto elsewhere falls back to the CPU and says so on stderr, where a
    terminal (or lnrepro's Snakefile, which shows the line from the job's log) sees it."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        given = gpus_given()
        if given:
            raise SystemExit(no_cuda(f"auto in a job given GPUs ({given})"))
        print(f"{DEVICE_NOTE} auto: {torch_build()} cannot use a GPU here: running on the CPU",
              file=sys.stderr, flush=True)
        return torch.device("cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(no_cuda(f"{name} asked for"))
    return device
