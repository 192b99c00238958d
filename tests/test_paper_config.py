"""The paper configuration trained end to end, at the papers' model sizes, with its training capped.

config/config.yaml is taken as it is (models, runs, figures, admin, BERT, GLUE, probes, theory,
claims); the slow test replaces only what a test machine cannot have or afford:
  * downloads: the corpora's archives, the Wikipedia dump, the books folder and the GLUE files,
    by files in the real formats (tests/fabricate.py, tests/test_bert_data.py), pinned by sha256;
    BPE merges small enough for those tiny corpora;
  * hardware: `device: cpu`, one process (the BERT runs' 4 nodes x 8 GPUs), one thread per job,
    no GPU resources;
  * the amount of training, by the config's own `training_cap` (config/README.md): 2 epochs of 1
    update for every translation run (the step-decay runs train up to their decay epoch: 8 and
    6 epochs), 2 pre-training rounds of 3 updates (the 128 -> 512 switch at 90% falls in the
    second), 1 update per fine-tuning of the whole grid;
  * the sample counts of the measurements that train nothing (theory, Fig 3's probes, Liu et
    al.'s Figs 2 and 5): fewer seeds, batches and depths; d = 512 and 18 layers stay.
Every model keeps the paper's size (IWSLT 6+6 d=512, WMT base up to 18+18, BERT-base). The
claims are checked on what this cap leaves, so their verdicts mean nothing here; the table must
hold every claim with one.

Checkpoints of d=512 models take ~130 MB (~0.6 GB a run with last.pt) and the config trains 88 runs, so
the build goes in stages and deletes the epoch checkpoints of runs no later stage reads; the
last stage builds `rule all` and must find only what is left.
"""
import csv
import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from fabricate import fabricate_iwslt, fabricate_wmt, pin_archives
from lnrepro import probe
from lnrepro.pretrain import MaskedLMTask, PretrainConfig
from lnrepro.train import TrainConfig, train
from workflow_helpers import ROOT, snakemake, workflow_copy

CAP = {"epochs": 2, "epoch_updates": 1, "bert_rounds": 2, "bert_round_updates": 3, "finetune_updates": 1}
TINY = dict(enc_layers=2, dec_layers=2, d_model=32, ffn_dim=64, heads=4, dropout=0.1, max_tokens=200,
            device="cpu", threads=1, log_interval=0.5, schedule="linear", warmup=0, epochs=4)


# ---- the cap in the trainers (fast) -------------------------------------------------------------
def test_capped_translation_trains_the_first_updates_of_fewer_epochs_and_says_so(toy_data, tmp_path, capsys):
    train(TrainConfig(**TINY, max_rounds=2, max_round_updates=3), toy_data, tmp_path)
    m = pd.read_csv(tmp_path / "metrics.csv")
    assert list(m.epoch) == [1, 2] and list(m.updates) == [3, 6] and set(m.capped) == {1}
    assert m.lr.iloc[-1] == pytest.approx(5e-4 / 6)  # linear decay placed on the capped run's 6 updates
    assert "CAPPED (training_cap): 2 of 4 rounds, 3 of " in capsys.readouterr().err


def test_a_capped_checkpoint_is_never_resumed_by_a_real_run(toy_data, tmp_path, capsys):
    train(TrainConfig(**TINY, max_rounds=1, max_round_updates=2), toy_data, tmp_path)
    capsys.readouterr()
    train(TrainConfig(**{**TINY, "epochs": 1}), toy_data, tmp_path)
    assert "other settings (epochs, max_round_updates, max_rounds differ); starting afresh" in capsys.readouterr().err
    assert set(pd.read_csv(tmp_path / "metrics.csv").capped) == {0}


def test_an_uncapped_fingerprint_is_unchanged_by_the_cap_fields():
    assert not {"max_rounds", "max_round_updates"} & set(TrainConfig().settings())
    assert TrainConfig(max_rounds=3).settings()["max_rounds"] == 3


def test_capped_pretraining_switches_phase_at_the_same_fraction_of_its_own_updates(tmp_path):
    cfg = PretrainConfig(max_updates=1000, valid_interval=100, short_block_size=128, short_fraction=0.9,
                         max_rounds=2, max_round_updates=3)
    assert cfg.total_updates() == 6 and [start for start, *_ in cfg.phases()] == [0, 5]
    uncapped = PretrainConfig(max_updates=1000, valid_interval=100, short_block_size=128, short_fraction=0.9)
    assert [start for start, *_ in uncapped.phases()] == [0, 900]


def test_capped_pretraining_rounds_are_contiguous_in_the_batch_stream(tmp_path):
    task = MaskedLMTask.__new__(MaskedLMTask)  # round_batches reads cfg and phases only
    task.cfg = PretrainConfig(max_updates=1000, valid_interval=100, max_rounds=2, max_round_updates=3)
    task.phases = [type("P", (), {"start": 0, "batches": [[i] for i in range(50)]})()]
    positions = [pos for r in (1, 2) for pos, _, _ in task.round_batches(r, per_update=2)]
    assert positions == list(range(12))


def test_probe_after_warmup_takes_a_capped_runs_last_checkpoint(tmp_path, capsys):
    rows = [{"epoch": e, "updates": e, "diverged": 0, "capped": 1, "checkpoint": f"checkpoints/epoch{e}.pt"}
            for e in (1, 2)]
    write_rows(tmp_path / "metrics.csv", rows)
    assert probe.checkpoint_after(tmp_path / "metrics.csv", 4000) == (tmp_path / "checkpoints/epoch2.pt", 2)
    assert "a capped run (training_cap) ended before warm-up" in capsys.readouterr().err
    write_rows(tmp_path / "metrics.csv", [{**r, "capped": 0} for r in rows])
    with pytest.raises(SystemExit, match="before warm-up ended"):  # a real run still fails loudly
        probe.checkpoint_after(tmp_path / "metrics.csv", 4000)


def write_rows(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def dry_run_commands(workdir, cfg, *targets):
    (workdir / "cfg.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return snakemake(workdir, "-n", "-p", "--forceall", *targets, "--configfile", "cfg.yaml").stdout


def test_the_cap_reaches_every_trainer_as_flags_and_only_with_the_key(tmp_path):
    workdir = workflow_copy(tmp_path)
    paper = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    targets = ["results/train/preln_5e-4_nowarm/metrics.csv", "results/train/wmt_preln_7e-4_nowarm/metrics.csv",
               "results/train/adam_5e-4_warm4000/metrics.csv", "results/figures/fig5.pdf"]
    plain = dry_run_commands(workdir, paper, *targets)
    assert "--max-round" not in plain and "--max-updates 1 " not in plain
    out = dry_run_commands(workdir, {**paper, "training_cap": CAP}, *targets)
    commands = {run: next(line for line in out.splitlines() if f"--out results/train/{run} " in line)
                for run in ("preln_5e-4_nowarm", "wmt_preln_7e-4_nowarm", "adam_5e-4_warm4000")}
    # step-decay runs train up to their decay epoch (8, 6), the others the capped 2
    assert [re.search(r"--max-rounds (\d+)", c).group(1) for c in commands.values()] == ["8", "6", "2"]
    assert all("--max-round-updates 1" in c for c in commands.values())
    pretrain = next(line for line in out.splitlines() if "lnrepro pretrain" in line)
    assert "--max-rounds 2" in pretrain and "--max-round-updates 3" in pretrain and "--max-updates 1000000" in pretrain
    assert "--max-updates 1 " in next(line for line in out.splitlines() if "lnrepro finetune" in line)
    assert "round2.csv" in out and "round3.csv" not in out  # only the capped rounds are fine-tuned
