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
from lnrepro.core.processes import alive  # an orphan's zombie, not reaped where no init reaps, does not count
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


# ---- case 3: a corrupt last.pt, data file or epoch checkpoint --------------------------------------

@pytest.mark.medium
@pytest.mark.parametrize("how", CORRUPTIONS)
@pytest.mark.parametrize("settings", ["same", "changed"])
def test_a_corrupt_last_pt_is_moved_aside_and_the_run_starts_afresh(trained, toy_data, tmp_path, capsys, how,
                                                                     settings):
    run = copy_run(trained, tmp_path)
    last = run / "checkpoints" / "last.pt"
    bad = CORRUPTIONS[how](last.read_bytes())
    last.write_bytes(bad)
    cfg = CFG if settings == "same" else TrainConfig(**{**TINY, "lr": 2e-3}, epochs=2)
    capsys.readouterr()
    assert train(cfg, toy_data, run) == 0
    log = capsys.readouterr().err
    assert f"{last}: unreadable, {len(bad)} bytes (truncated, empty or not written by torch.save" in log, log
    assert "moved aside to last.pt.corrupt-" in log and "; starting afresh" in log and "resuming" not in log
    assert "weights_only=False" not in log
    aside = list(run.glob("checkpoints/last.pt.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == bad  # kept, as it was
    assert torch.load(last, weights_only=True)["epoch"] == 2  # a new, good one
    reference = trained / ("run" if settings == "same" else "other") / "metrics.csv"
    pd.testing.assert_frame_equal(pd.read_csv(reference)[DETERMINISTIC], pd.read_csv(run / "metrics.csv")[DETERMINISTIC])


@pytest.mark.parametrize("name", ["train.pt", "valid.pt"])
def test_a_truncated_training_data_file_names_itself_and_the_fix(trained, toy_data, tmp_path, name):
    data = shutil.copytree(toy_data, tmp_path / "data")
    (data / name).write_bytes((data / name).read_bytes()[:len((data / name).read_bytes()) // 2])
    message = stops(lambda: train(CFG, data, tmp_path / "run"))
    assert message.startswith(f"{data / name}: unreadable") and f"snakemake --force {data / name}" in message, message
    assert not (tmp_path / "run" / "checkpoints").exists() or not any((tmp_path / "run" / "checkpoints").iterdir())


def test_a_truncated_test_set_names_itself_and_the_fix(trained, toy_data, tmp_path, capsys):
    data = shutil.copytree(toy_data, tmp_path / "data")
    test = data / "test.pt"
    test.write_bytes(test.read_bytes()[:len(test.read_bytes()) // 2])
    message = stops(lambda: evaluate(trained / "run", data, tmp_path / "eval" / "bleu.csv"))
    assert message.startswith(f"{test}: unreadable") and f"snakemake --force {test}" in message, message
    assert not (tmp_path / "eval" / "bleu.csv").exists()


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_a_corrupt_epoch_checkpoint_names_itself_and_the_fix(trained, toy_data, tmp_path, how):
    run = copy_run(trained, tmp_path)
    ckpt = run / "checkpoints" / "epoch2.pt"
    ckpt.write_bytes(CORRUPTIONS[how](ckpt.read_bytes()))
    message = stops(lambda: evaluate(run, toy_data, tmp_path / "eval" / "bleu.csv"))
    assert message.startswith(f"{ckpt}: unreadable"), message
    assert f"retrain its run: rm -r {run / 'checkpoints'} && snakemake --force {run / 'metrics.csv'}" in message
    assert "weights_only=False" not in message and not (tmp_path / "eval" / "bleu.csv").exists()


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
    disk = small_disk(4096 * (2 * epoch + last + last // 2 + 3))  # + 3: metrics, progress, the run lock
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


# ---- case 8: a checkpoint whose content is not what its name says -----------------------------------

def test_an_epoch_checkpoint_copied_over_another_is_refused(trained, toy_data, tmp_path):
    run = copy_run(trained, tmp_path)
    shutil.copy(run / "checkpoints" / "epoch1.pt", run / "checkpoints" / "epoch2.pt")
    message = stops(lambda: evaluate(run, toy_data, tmp_path / "eval" / "bleu.csv"))
    assert message.startswith(f"{run / 'checkpoints' / 'epoch2.pt'}: holds epoch 1 of run 'run', not epoch 2 "
                              "as its name says"), message
    assert not (tmp_path / "eval" / "bleu.csv").exists()


def test_an_epoch_checkpoint_of_another_run_is_refused(trained, toy_data, tmp_path):
    run = copy_run(trained, tmp_path)
    shutil.copy(trained / "other" / "checkpoints" / "epoch1.pt", run / "checkpoints" / "epoch1.pt")
    message = stops(lambda: evaluate(run, toy_data, tmp_path / "eval" / "bleu.csv"))
    ours, theirs = CFG.fingerprint(), TrainConfig(**{**TINY, "lr": 2e-3}, epochs=2).fingerprint()
    assert message.startswith(f"{run / 'checkpoints' / 'epoch1.pt'}: epoch 1 of run 'other' with settings {theirs}, "
                              f"but {run / 'checkpoints' / 'last.pt'} is of settings {ours} of run 'run'"), message
    assert not (tmp_path / "eval" / "bleu.csv").exists()


def test_the_checkpoints_say_what_they_are(trained):
    for epoch in (1, 2):
        state = torch.load(trained / "run" / "checkpoints" / f"epoch{epoch}.pt", weights_only=True)
        assert (state["epoch"], state["run"], state["fingerprint"]) == (epoch, "run", CFG.fingerprint())


# ---- case 9: Snakemake killed with -9 while it trains -----------------------------------------------

def train_command(out, data, epochs):
    args = [sys.executable, "-m", "lnrepro.cli", "train", "--data", str(data), "--out", str(out)]
    for k, v in {**TINY, "epochs": epochs}.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    return args


def test_the_rules_exec_the_trainer_so_it_is_snakemakes_own_child():
    for rules, command in (("train.smk", '"exec lnrepro train '), ("bert.smk", '"exec lnrepro pretrain ')):
        assert command in open(os.path.join(ROOT, "workflow", "rules", rules)).read()


EPOCHS = 12  # an orphan would run on for seconds after epoch 1 (0.4 s an epoch here, unloaded)


@pytest.mark.medium
def test_a_trainer_whose_snakemake_is_killed_stops_and_resumes(toy_data, tmp_path):
    """A stand-in for Snakemake starts the trainer as the train rule does (bash -c 'set -euo pipefail;
    exec lnrepro train ... > log 2>&1') and is killed with SIGKILL after epoch 1."""
    run, log = tmp_path / "run", tmp_path / "train.log"
    shell = f"set -euo pipefail; exec {shlex.join(train_command(run, toy_data, EPOCHS))} > {log} 2>&1"
    parent = ("import subprocess, sys, time\n"
              f"p = subprocess.Popen(['/bin/bash', '-c', {shell!r}])\n"
              "print(p.pid, flush=True)\n"
              "time.sleep(600)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    snakemake = subprocess.Popen([sys.executable, "-c", parent], env=env, stdout=subprocess.PIPE, text=True)
    trainer = int(snakemake.stdout.readline())
    deadline = time.time() + 120
    while not (run / "checkpoints" / "epoch1.pt").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert alive(trainer), log.read_text()
    snakemake.kill()  # SIGKILL: no clean-up of its own
    snakemake.wait()
    killed = time.time()
    while alive(trainer) and time.time() < killed + 3:
        time.sleep(0.05)
    assert not alive(trainer), "the trainer runs on as an orphan"
    text = log.read_text()
    assert "died (Snakemake or its job step killed?); a rerun resumes from" in text, text
    assert not (run / "metrics.csv").exists()
    state = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert 1 <= state["epoch"] < EPOCHS
    again = subprocess.run(train_command(run, toy_data, EPOCHS), env=env, capture_output=True, text=True)
    assert again.returncode == 0 and f"resuming after epoch {state['epoch']}" in again.stderr, again.stderr
    assert list(pd.read_csv(run / "metrics.csv").epoch) == list(range(1, EPOCHS + 1))
