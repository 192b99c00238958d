import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch
from conftest import reversal_pairs

from lnrepro.core.admin import METHOD
from lnrepro.core.data import Dictionary, ParallelData, load_dictionaries, save_split
from lnrepro.prepare.binarize import binarize
from lnrepro.training.evaluate import decode
from lnrepro.core.translation import TrainConfig, load_model, train

TINY = dict(enc_layers=2, dec_layers=2, d_model=32, ffn_dim=64, heads=4, dropout=0.1, max_tokens=200,
            device="cpu", threads=1, log_interval=0.5)
DETERMINISTIC = ["epoch", "updates", "train_loss", "train_nll", "valid_loss", "valid_nll", "lr", "grad_norm"]


@pytest.mark.medium
def test_training_lowers_the_loss_and_writes_every_epoch(toy_data, tmp_path):
    cfg = TrainConfig(**TINY, enc_norm="pre", dec_norm="pre", lr=2e-3, schedule="constant", warmup=0, epochs=4)
    train(cfg, toy_data, tmp_path)
    m = pd.read_csv(tmp_path / "metrics.csv")
    assert list(m.epoch) == [1, 2, 3, 4] and m.diverged.sum() == 0
    assert m.valid_loss.iloc[-1] < m.valid_loss.iloc[0] - 0.5
    assert m.train_loss.is_monotonic_decreasing
    assert (m.grad_norm > 0).all() and (m.tokens_per_s > 0).all()
    for ckpt in m.checkpoint:  # weights-only loadable
        assert load_model(tmp_path / ckpt).cfg.enc_norm == "pre"


@pytest.mark.medium
def test_a_run_on_separate_dictionaries_sizes_each_side_and_decodes_target_words(tmp_path):
    """One dictionary per side (Xiong et al.'s IWSLT runs): the target's 20 words, not the source's 30,
    size the decoder's embedding and output, the model learns, and decoding spells target words."""
    text = tmp_path / "text"
    text.mkdir()
    for split, n, seed in (("train", 600, 1), ("valid", 40, 2), ("test", 40, 3)):
        pairs = reversal_pairs(n, seed)
        (text / f"{split}.src").write_text("\n".join(a for a, _ in pairs) + "\n")
        (text / f"{split}.tgt").write_text(  # w0..w29 -> T0..T19: a function of the source, its own symbols
            "\n".join(" ".join(f"T{int(w[1:]) % 20}" for w in b.split()) for _, b in pairs) + "\n")
    splits = ["train", "valid", "test"]
    binarize("src", "tgt", text / "train", splits, [text / s for s in splits], tmp_path / "bin", separate=True)
    src, tgt = load_dictionaries(tmp_path / "bin")
    assert (len(src), len(tgt)) == (34, 24)
    cfg = TrainConfig(**TINY, enc_norm="pre", dec_norm="pre", lr=2e-3, schedule="constant", warmup=0, epochs=4)
    train(cfg, tmp_path / "bin", tmp_path / "run")
    m = pd.read_csv(tmp_path / "run" / "metrics.csv")
    assert m.diverged.sum() == 0 and m.valid_loss.iloc[-1] < m.valid_loss.iloc[0] - 0.5
    model = load_model(tmp_path / "run" / m.checkpoint.iloc[-1])
    assert model.encoder.embed.tokens.num_embeddings == 34 and model.decoder.embed.tokens.num_embeddings == 24
    hyps = decode(model, ParallelData.load(tmp_path / "bin" / "test.pt"), tgt, beam=2, lenpen=1.0, max_len_a=1.2,
                  max_len_b=5, batch_sentences=40, device="cpu")
    words = {w for h in hyps for w in h.split()}
    assert words and all(w.startswith("T") for w in words), words


def cli(out, data, epochs=6):
    flags = {**TINY, "enc_norm": "post", "dec_norm": "post", "lr": 1e-3, "warmup": 20, "epochs": epochs}
    args = [sys.executable, "-m", "lnrepro.cli", "train", "--data", str(data), "--out", str(out)]
    for k, v in flags.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    return args


@pytest.mark.medium
def test_killed_run_resumes_to_the_same_metrics(toy_data, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run(cli(tmp_path / "full", toy_data), check=True, env=env, capture_output=True)
    proc = subprocess.Popen(cli(tmp_path / "killed", toy_data), env=env, stderr=subprocess.PIPE)
    ckpt = tmp_path / "killed" / "checkpoints" / "epoch2.pt"
    deadline = time.time() + 120
    while not ckpt.exists() and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # mid-run, no chance to clean up
    proc.wait()
    assert not (tmp_path / "killed" / "metrics.csv").exists()
    resumed = subprocess.run(cli(tmp_path / "killed", toy_data), check=True, env=env, capture_output=True, text=True)
    assert "resuming after epoch" in resumed.stderr
    full = pd.read_csv(tmp_path / "full" / "metrics.csv")
    again = pd.read_csv(tmp_path / "killed" / "metrics.csv")
    pd.testing.assert_frame_equal(full[DETERMINISTIC], again[DETERMINISTIC])


def test_changed_settings_never_resume_stale_state(toy_data, tmp_path, capsys):
    train(TrainConfig(**TINY, epochs=1), toy_data, tmp_path)
    first = pd.read_csv(tmp_path / "metrics.csv")
    capsys.readouterr()
    train(TrainConfig(**{**TINY, "epochs": 2}, lr=1e-3), toy_data, tmp_path)
    assert "was trained with other settings (epochs, lr differ); starting afresh" in capsys.readouterr().err
    second = pd.read_csv(tmp_path / "metrics.csv")
    assert list(second.epoch) == [1, 2] and second.lr.iloc[0] != first.lr.iloc[0]


def other_valid_set(data):
    pairs = reversal_pairs(40, 7)
    vocab = Dictionary.load(data / "dict.txt")
    save_split(data / "valid.pt", [vocab.encode(a) for a, _ in pairs], [vocab.encode(b) for _, b in pairs])


def larger_dictionary(data):
    with open(data / "dict.txt", "a") as f:
        f.write("unseen 1\n")


@pytest.mark.parametrize("edit, reason", [(other_valid_set, "valid.pt differs"),
                                          (larger_dictionary, "dict.txt differs")], ids=["valid", "dict"])
@pytest.mark.medium
def test_a_checkpoint_of_other_data_is_never_resumed(toy_data, tmp_path, capsys, edit, reason):
    """Same settings, data rebuilt (another valid split, another BPE vocabulary): a fresh run."""
    cfg = TrainConfig(**TINY, epochs=2)
    train(cfg, toy_data, tmp_path / "run")
    data = shutil.copytree(toy_data, tmp_path / "data")
    edit(data)
    capsys.readouterr()
    train(cfg, data, tmp_path / "run")
    log = capsys.readouterr().err
    assert f"last.pt was trained on other data ({reason}); starting afresh" in log and "resuming" not in log
    train(cfg, data, tmp_path / "fresh")
    again, fresh = (pd.read_csv(tmp_path / d / "metrics.csv") for d in ("run", "fresh"))
    pd.testing.assert_frame_equal(fresh[DETERMINISTIC], again[DETERMINISTIC])


@pytest.mark.medium
def test_an_admin_checkpoint_of_other_omegas_is_never_resumed(toy_data, tmp_path, capsys):
    """omega.json is among the files a run trains on: a new profile (another profiling method, say)
    restarts the Admin run with the reason, as other data does."""
    omega = tmp_path / "omega.json"
    write = lambda top: omega.write_text(json.dumps({"method": METHOD, "encoder": [1.0, 1.3, 1.5, top],
                                                     "decoder": [1.0, 1.3, 1.5, 1.6, 1.7, top]}))
    cfg = TrainConfig(**TINY, enc_norm="admin", dec_norm="admin", admin_omega=str(omega), epochs=2)
    write(1.8)
    train(cfg, toy_data, tmp_path / "run")
    write(1.7)
    capsys.readouterr()
    train(cfg, toy_data, tmp_path / "run")
    log = capsys.readouterr().err
    assert "last.pt was trained on other data (omega.json differs); starting afresh" in log and "resuming" not in log


def as_older_checkpoint(state_dict):
    """The layout before the stacked in_proj: separate q/k/v projections."""
    old = {}
    for key, value in state_dict.items():
        if ".in_proj." in key:
            for name, block in zip("qkv", value.chunk(3)):
                old[key.replace("in_proj.", f"{name}_proj.")] = block
        else:
            old[key] = value
    return old


def test_older_checkpoints_load_for_evaluation_and_are_not_resumed(toy_data, tmp_path, capsys):
    train(TrainConfig(**TINY, epochs=1), toy_data, tmp_path)
    ckpt = tmp_path / "checkpoints" / "epoch1.pt"
    state = torch.load(ckpt, weights_only=True)
    state["model"] = as_older_checkpoint(state["model"])
    assert any(".q_proj." in k for k in state["model"])
    torch.save(state, tmp_path / "older.pt")
    src, prev = torch.randint(4, 20, (2, 5)), torch.randint(4, 20, (2, 4))
    torch.testing.assert_close(load_model(tmp_path / "older.pt")(src, prev), load_model(ckpt)(src, prev), rtol=0, atol=0)
    last = torch.load(tmp_path / "checkpoints" / "last.pt", weights_only=True)
    del last["format"]  # as written by an older version: its optimizer moments do not fit
    torch.save(last, tmp_path / "checkpoints" / "last.pt")
    capsys.readouterr()
    train(TrainConfig(**TINY, epochs=1), toy_data, tmp_path)
    log = capsys.readouterr().err
    assert "by an older version of lnrepro (checkpoint format 1, now 3); starting afresh" in log
    assert "resuming" not in log
    assert list(pd.read_csv(tmp_path / "metrics.csv").epoch) == [1]


@pytest.mark.medium
@pytest.mark.parametrize("fields, reason", [
    ({"format": 2}, "was written by an older version of lnrepro (checkpoint format 2, now 3)"),  # as format 2 wrote it
    ({"format": 3}, "was trained on other data (dict.txt, train.pt, valid.pt differ)"),  # no digests, whatever the format
], ids=["format2", "format3"])
def test_a_checkpoint_without_data_digests_is_not_resumed(toy_data, tmp_path, capsys, fields, reason):
    cfg = TrainConfig(**TINY, epochs=2)
    train(cfg, toy_data, tmp_path)
    last = torch.load(tmp_path / "checkpoints" / "last.pt", weights_only=True)
    del last["data"]
    torch.save({**last, **fields}, tmp_path / "checkpoints" / "last.pt")
    capsys.readouterr()
    train(cfg, toy_data, tmp_path)
    log = capsys.readouterr().err
    assert f"last.pt {reason}; starting afresh" in log
    assert "resuming" not in log and list(pd.read_csv(tmp_path / "metrics.csv").epoch) == [1, 2]


def test_divergence_is_recorded_not_raised(toy_data, tmp_path):
    cfg = TrainConfig(**{**TINY, "log_interval": 0.0}, optimizer="sgd", lr=1e6, schedule="constant", epochs=5)
    assert train(cfg, toy_data, tmp_path) == 0
    m = pd.read_csv(tmp_path / "metrics.csv")
    assert m.diverged.iloc[-1] == 1 and m.diverged.iloc[:-1].sum() == 0
    assert len(m) < 5  # stopped early
    assert pd.isna(m.checkpoint.iloc[-1]) and pd.isna(m.valid_loss.iloc[-1])


def test_divergence_is_checked_on_a_schedule_of_updates_whatever_the_log_interval(toy_data, tmp_path):
    """Progress lines every update, every few seconds or never: the same verdict at the same update."""
    columns = DETERMINISTIC + ["diverged", "diverged_reason"]
    runs = []
    for log_interval in (0.0, 1e-9, 1e9):
        cfg = TrainConfig(**{**TINY, "log_interval": log_interval}, optimizer="sgd", lr=1e6, schedule="constant",
                          epochs=3, divergence_interval=3)
        train(cfg, toy_data, tmp_path / str(log_interval))
        runs.append(pd.read_csv(tmp_path / str(log_interval) / "metrics.csv")[columns])
    for m in runs[1:]:
        pd.testing.assert_frame_equal(runs[0], m)
    diverged = runs[0].iloc[-1]
    assert diverged.diverged == 1 and diverged.updates % 3 == 0 and len(runs[0]) == 1  # within round 1
    assert "is not finite" in diverged.diverged_reason or "above divergence_factor" in diverged.diverged_reason


def test_update_freq_accumulates_batches_into_one_update(toy_data, tmp_path):
    from lnrepro.core.batching import make_batches
    from lnrepro.core.data import ParallelData
    n_batches = len(make_batches(ParallelData.load(toy_data / "train.pt"), TINY["max_tokens"], 1))
    cfg = TrainConfig(**TINY, update_freq=2, epochs=2, lr=2e-3, schedule="constant", warmup=0)
    train(cfg, toy_data, tmp_path)
    m = pd.read_csv(tmp_path / "metrics.csv")
    assert list(m.updates) == [-(-n_batches // 2), 2 * -(-n_batches // 2)]
    assert m.valid_loss.iloc[1] < m.valid_loss.iloc[0]
