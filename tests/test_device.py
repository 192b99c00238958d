"""A run that asks for a GPU where torch cannot use one stops at once, saying the node, the torch build
and the fix; device auto falls back to the CPU only where no GPU was given, and says so on the terminal.
This machine has no usable CUDA, so the failing side is what runs here (lnrepro.core.device.pick_device)."""
import os
import socket
import subprocess
import time

import pytest
import torch
import yaml

from lnrepro.core import device
from workflow_helpers import SNAKEMAKE, workflow_copy

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the machine without usable CUDA is the case")
NO_GPU_ENV = {k: v for k, v in os.environ.items() if k not in device.VISIBLE_GPU_VARIABLES and not k.startswith("SLURM_")}


def test_gpus_given_reads_what_slurm_or_the_user_made_visible(tmp_path):
    nothing = tmp_path / "none"
    assert device.gpus_given({}, nothing) is None
    assert device.gpus_given({"CUDA_VISIBLE_DEVICES": "0,1"}, nothing) == "CUDA_VISIBLE_DEVICES=0,1"
    assert device.gpus_given({"SLURM_JOB_GPUS": "3"}, nothing) == "SLURM_JOB_GPUS=3"
    for hidden in ("", "-1", "NoDevFiles"):  # hidden GPUs, or older SLURM's none allocated
        assert device.gpus_given({"CUDA_VISIBLE_DEVICES": hidden}, nothing) is None
    driver = tmp_path / "gpus"
    (driver / "0000:3b:00.0").mkdir(parents=True)
    assert "NVIDIA GPU" in device.gpus_given({}, driver)
    assert device.gpus_given({"SLURM_JOB_ID": "7"}, driver) is None  # a SLURM job not given the node's GPU


def test_cuda_without_usable_cuda_stops_naming_node_build_and_fix(monkeypatch):
    monkeypatch.setattr(device, "gpus_given", lambda: None)
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)  # outside SLURM: the hostname
    for name in ("cuda", "cuda:1"):
        with pytest.raises(SystemExit) as stop:
            device.pick_device(name)
        message = str(stop.value)
        assert f"device {name} asked for" in message and socket.gethostname() in message
        assert torch.__version__ in message and "CPU-only build" in message
        assert "TORCH_INDEX_URL=" in message and "setup.sh" in message and "device: cpu" in message
    monkeypatch.setenv("SLURMD_NODENAME", "gpu17")  # in a SLURM job: SLURM's name of the node
    with pytest.raises(SystemExit, match="but node gpu17 has torch "):
        device.pick_device("cuda")


def test_auto_in_a_job_given_gpus_stops_and_elsewhere_falls_back_saying_so(monkeypatch, capsys):
    monkeypatch.setattr(device, "gpus_given", lambda: "CUDA_VISIBLE_DEVICES=0")
    with pytest.raises(SystemExit, match=r"device auto in a job given GPUs \(CUDA_VISIBLE_DEVICES=0\), but node "):
        device.pick_device("auto")
    monkeypatch.setattr(device, "gpus_given", lambda: None)
    assert device.pick_device("auto") == torch.device("cpu")
    assert capsys.readouterr().err == f"{device.DEVICE_NOTE} auto: {device.torch_build()} cannot use a GPU here: running on the CPU\n"
    assert device.pick_device("cpu") == torch.device("cpu") and not capsys.readouterr().err


# ---- through the real rule ----------------------------------------------------------------------
def device_config():
    """test_slurm's tiny demo (one small generated corpus, 2 epochs) with a run per device case."""
    from test_slurm import tiny_config
    cfg = tiny_config()
    cfg["resources"] = {"gpu": "auto"}  # as config/config.yaml: auto and cuda runs ask for a GPU
    cfg["runs"] = {**{k: cfg["runs"][k] for k in ("post", "pre")}, "cuda": {"device": "cuda"},
                   "auto": {"device": "auto"}, "given": {"device": "auto"}}
    return cfg


@pytest.mark.slow
def test_a_training_asking_for_cuda_fails_at_once_and_auto_says_it_runs_on_the_cpu(tmp_path):
    workdir = workflow_copy(tmp_path)
    (workdir / "device.yaml").write_text(yaml.safe_dump(device_config()))
    base = SNAKEMAKE + ["--cores", "2", "--configfile", "device.yaml", "--keep-going"]
    env = {**NO_GPU_ENV, "LNREPRO_PROGRESS": "0"}
    targets = [f"results/train/{run}/metrics.csv" for run in ("cuda", "auto")]
    proc = subprocess.run(base + targets, cwd=workdir, env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    log = (workdir / "logs/train/cuda.log").read_text()
    assert "lnrepro: device cuda asked for, but node " in log and "CPU-only build" in log, log
    assert "epoch 1/" not in log  # nothing trained
    assert "logs/train/cuda.log" in proc.stderr  # Snakemake's error names the log
    assert (workdir / "results/train/auto/metrics.csv").exists()
    assert "[train auto] lnrepro: device auto: torch " in proc.stderr, proc.stderr[-3000:]
    assert "[train cuda] lnrepro: device cuda asked for, but node " in proc.stderr  # its error on the terminal too
    # a job given a GPU (here by hand, as SLURM does) with device auto stops too, before training
    t0 = time.time()
    given = subprocess.run(base + ["results/train/given/metrics.csv"], cwd=workdir,
                           env={**env, "CUDA_VISIBLE_DEVICES": "0"}, capture_output=True, text=True)
    assert given.returncode != 0
    log = (workdir / "logs/train/given.log").read_text()
    assert "device auto in a job given GPUs (CUDA_VISIBLE_DEVICES=0), but node" in log and "epoch 1/" not in log, log
    assert time.time() - t0 < 60
