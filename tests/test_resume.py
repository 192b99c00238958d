"""Resuming through the workflow: an edit that rebuilds a run's data retrains it from scratch
(saying why in the run's log), while a rerun on the same data resumes from its checkpoints.

One generated corpus and one tiny run of 2 epochs in a scratch copy of the workflow.
"""
import pandas as pd
import pytest
import yaml

from workflow_helpers import ROOT, snakemake, workflow_copy

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


@pytest.mark.parametrize("key", EDITS)
def test_an_edit_that_rebuilds_the_data_retrains_afresh(built, key):
    workdir, cfg = built
    before = pd.read_csv(workdir / METRICS).valid_loss.iloc[-1]
    EDITS[key](cfg["corpora"]["deen"])
    log, after = build(workdir, cfg)
    assert "last.pt was trained on other data (" in log and "; starting afresh" in log, log
    assert "resuming" not in log and after != before


def test_a_rerun_on_the_same_data_resumes(built):
    workdir, cfg = built
    before = pd.read_csv(workdir / METRICS)
    (workdir / METRICS).unlink()  # a killed job leaves no metrics, and its checkpoints
    log, _ = build(workdir, cfg)
    assert "resuming after epoch 2" in log and "starting afresh" not in log
    pd.testing.assert_frame_equal(before, pd.read_csv(workdir / METRICS))
    previous = (workdir / "logs" / "train" / f"{RUN}.log.previous").read_text()  # the run before, kept
    assert "epoch 2/2 done" in previous and "resuming" not in previous, previous
