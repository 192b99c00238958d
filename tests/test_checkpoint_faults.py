"""Damaged checkpoints and data, a full disk, copied checkpoints, a killed Snakemake (issue 29, cases
3, 7, 8, 9): each is a message naming the file and the fix, and what is left on disk resumes.

Real tiny trainings on the toy reversal task: one module-wide run of 2 epochs, copied per test.
"""
import os
import shlex
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch

from lnrepro.cli import main
from lnrepro.core.translation import TrainConfig, train

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dict(enc_layers=1, dec_layers=1, d_model=32, ffn_dim=64, heads=4, dropout=0.1, max_tokens=200,
            device="cpu", threads=1, log_interval=0.5, lr=1e-3, warmup=20)
CFG = TrainConfig(**TINY, epochs=2)
DETERMINISTIC = ["epoch", "updates", "train_loss", "train_nll", "valid_loss", "valid_nll", "lr", "grad_norm"]


@pytest.fixture(scope="module")
def trained(toy_data, tmp_path_factory, one_thread):
    """run/: CFG's 2 epochs; other/: the same with another lr."""
    root = tmp_path_factory.mktemp("trained")
    train(CFG, toy_data, root / "run")
    train(TrainConfig(**{**TINY, "lr": 2e-3}, epochs=2), toy_data, root / "other")
    return root


def copy_run(trained, tmp_path, name="run"):
    return shutil.copytree(trained / name, tmp_path / name)


def stops(call):
    """The message of the SystemExit call() must raise."""
    with pytest.raises(SystemExit) as e:
        call()
    message = str(e.value.code)
    assert e.value.code not in (0, None), message
    return message


def evaluate(run_dir, data, out):
    return main(["evaluate", "--metrics", str(run_dir / "metrics.csv"), "--data", str(data), "--reference",
                 str(data / "test.ref"), "--beam", "1", "--device", "cpu", "--threads", "1", "--out", str(out)])


CORRUPTIONS = {
    "truncated": lambda b: b[:len(b) // 2],
    "garbage": lambda b: bytes(range(256)) * 40,
    "empty": lambda b: b"",
}


# ---- case 7: a full disk while saving a checkpoint --------------------------------------------------

def pages(path):
    return -(-path.stat().st_size // 4096)


@pytest.fixture
def small_disk(tmp_path):
    """A folder on its own tmpfs; its size is set by the test (mount needs root)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = []

    def mount(size):
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                              capture_output=True, text=True)
        if proc.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        mounted.append(where)
        return where
    yield mount
    for m in mounted:
        subprocess.run(["umount", "--lazy", str(m)], check=True)  # lazy: a failed test may hold a file open


def test_a_full_disk_while_saving_says_so_and_leaves_a_resumable_run(trained, toy_data, tmp_path, small_disk,
                                                                     capsys):
    ref = trained / "run" / "checkpoints"
    # room for epoch 1's files and epoch2.pt, but only half of the second last.pt
    epoch, last = pages(ref / "epoch1.pt"), pages(ref / "last.pt")
    disk = small_disk(4096 * (2 * epoch + last + last // 2 + 2))
    run = disk / "run"
    message = stops(lambda: train(CFG, toy_data, run))
    assert message.startswith(f"disk full (ENOSPC) while writing {run / 'checkpoints' / 'last.pt'}"), message
    assert "iostream error" not in message
    left = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert left == ["epoch1.pt", "epoch2.pt", "last.pt"]  # no half-written .tmp
    assert torch.load(run / "checkpoints" / "last.pt", weights_only=True)["epoch"] == 1
    # freed (here: copied elsewhere), the run resumes after epoch 1 and ends as an uninterrupted one
    again = shutil.copytree(run, tmp_path / "again")
    capsys.readouterr()
    assert train(CFG, toy_data, again) == 0
    assert "resuming after epoch 1" in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_csv(trained / "run" / "metrics.csv")[DETERMINISTIC],
                                  pd.read_csv(again / "metrics.csv")[DETERMINISTIC])


