"""Resuming through the workflow: an edit that rebuilds a run's data retrains it from scratch
(saying why in the run's log), while a rerun on the same data resumes from its checkpoints.

One generated corpus and one tiny run of 2 epochs in a scratch copy of the workflow.
"""
import os
import re
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml

from workflow_helpers import ROOT, SNAKEMAKE, snakemake, workflow_copy

RUN = "tiny"
METRICS = f"results/train/{RUN}/metrics.csv"


def tiny_config():
    demo = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    corpus = {**demo["corpora"]["deen"], "generator": {"task": "deen", "seed": 1, "n_train": 300, "n_test": 20},
              "valid_every": 10, "bpe_merges": 200}
    model = {**demo["models"]["demo"], "enc_layers": 1, "dec_layers": 1, "d_model": 16, "ffn_dim": 32, "heads": 2}
    return {"corpora": {"deen": corpus}, "models": {"tiny": model},
            "train_defaults": {**demo["train_defaults"], "model": "tiny", "warmup": 10, "epochs": 2},
            "runs": {RUN: {}}, "figures": {}, "threads": {"data": 1, "train": 1, "evaluate": 1}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    workdir = workflow_copy(tmp_path_factory.mktemp("resume"))
    cfg = tiny_config()
    build(workdir, cfg)
    return workdir, cfg


def build(workdir, cfg):
    """Build the run's metrics with cfg: (its train log, its final valid loss)."""
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    out = snakemake(workdir, METRICS, "--cores", "2", "--configfile", "tiny.yaml").stderr
    assert "checkpoint train:" in out, out[-3000:]  # the training job ran (train: a checkpoint rule)
    log = (workdir / "logs" / "train" / f"{RUN}.log").read_text()
    return log, pd.read_csv(workdir / METRICS).valid_loss.iloc[-1]


# in this order, each on top of the last: every edit rebuilds the run's data
EDITS = {
    "valid_every": lambda corpus: corpus.update(valid_every=7),
    "bpe_merges": lambda corpus: corpus.update(bpe_merges=150),
    "n_train": lambda corpus: corpus["generator"].update(n_train=250),
}


@pytest.mark.medium
@pytest.mark.parametrize("key", EDITS)
def test_an_edit_that_rebuilds_the_data_retrains_afresh(built, key):
    workdir, cfg = built
    before = pd.read_csv(workdir / METRICS).valid_loss.iloc[-1]
    EDITS[key](cfg["corpora"]["deen"])
    log, after = build(workdir, cfg)
    assert "last.pt was trained on other data (" in log and "; starting afresh" in log, log
    assert "resuming" not in log and after != before


@pytest.mark.medium
def test_a_rerun_on_the_same_data_resumes(built):
    workdir, cfg = built
    before = pd.read_csv(workdir / METRICS)
    (workdir / METRICS).unlink()  # a killed job leaves no metrics, and its checkpoints
    log, _ = build(workdir, cfg)
    assert "resuming after epoch 2" in log and "starting afresh" not in log
    pd.testing.assert_frame_equal(before, pd.read_csv(workdir / METRICS))


@pytest.mark.medium
def test_a_failed_attempts_log_outlives_its_retry(tmp_path):
    """Snakemake deletes a job's log before each attempt: a training stopped by SIGTERM (a SLURM cancel,
    a time limit) and retried lost the first attempt's lines. They are kept as LOG.failed."""
    workdir = workflow_copy(tmp_path)
    cfg = tiny_config()
    cfg["train_defaults"]["epochs"] = 40  # time to stop it after its first epoch
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    progress, lock = workdir / "results" / "train" / RUN / "progress.csv", workdir / "results" / "train" / RUN / ".lnrepro.lock"
    proc = subprocess.Popen(SNAKEMAKE + [METRICS, "--cores", "1", "--configfile", "tiny.yaml", "--retries", "1"],
                            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.time() + 300
        while not (progress.exists() and len(pd.read_csv(progress)) >= 1):
            assert time.time() < end and proc.poll() is None, "no epoch finished"
            time.sleep(0.1)
        os.kill(int(re.match(r"PID (\d+)", lock.read_text()).group(1)), signal.SIGTERM)  # the trainer's own
        assert proc.wait(timeout=600) == 0  # the retry resumed and finished
    finally:
        proc.kill()
    log = (workdir / "logs" / "train" / f"{RUN}.log").read_text()
    failed = (workdir / "logs" / "train" / f"{RUN}.log.failed").read_text()
    resumed = re.search(r"resuming after epoch (\d+)", log)
    assert resumed and "epoch 40/40 done" in log
    assert f"epoch {resumed.group(1)}/40 done" in failed and "resuming" not in failed, failed
