"""Input a run cannot use (issue 29): what is left out is counted and said, what leaves nothing to
train or validate on is refused before training, each message naming the file and the fix.

Real files through the real commands (lnrepro.cli.main): text corpora of the reversal task,
binarized by `lnrepro binarize`, trained by `lnrepro train`, decoded by `lnrepro evaluate`.
"""
import json
import math

import pandas as pd
import pytest
import torch
from conftest import reversal_pairs

from lnrepro.analyses import figure
from lnrepro.cli import main
from lnrepro.core.batching import collate
from lnrepro.core.data import PAD, ParallelData
from lnrepro.core.model import label_smoothed_loss
from lnrepro.core.translation import load_model

TINY = ["--enc-layers", "1", "--dec-layers", "1", "--d-model", "16", "--ffn-dim", "32", "--heads", "2",
        "--dropout", "0", "--device", "cpu", "--threads", "1", "--schedule", "constant", "--warmup", "0",
        "--lr", "1e-3", "--epochs", "1"]


def long_pair(words, seed):
    """A reversal pair of `words` words (words + 1 tokens with </s>)."""
    return reversal_pairs(1, seed, min_len=words, max_len=words)[0]


def binarized(tmp_path, splits, name="bin"):
    """{split: [(de, en)]} -> text files {split}.de/.en -> `lnrepro binarize` (dictionary of train)."""
    text = tmp_path / f"{name}_text"
    text.mkdir()
    for split, pairs in splits.items():
        for k, lang in enumerate(("de", "en")):
            (text / f"{split}.{lang}").write_text("".join(p[k] + "\n" for p in pairs), encoding="utf-8")
    out = tmp_path / name
    assert main(["binarize", "--src-lang", "de", "--tgt-lang", "en", "--train-prefix", str(text / "train"),
                 "--splits", *splits, "--prefixes", *[str(text / s) for s in splits], "--out-dir", str(out)]) == 0
    return out


def train(data, out, *flags):
    return main(["train", "--data", str(data), "--out", str(out), *TINY, *flags])


def validation_loss_of_every_pair(checkpoint, valid, limit=1024):
    """Bits per target token of the checkpoint over every valid pair the model can take, one pair at a time."""
    model = load_model(checkpoint)
    loss = ntok = 0.0
    with torch.no_grad():
        for i in range(len(valid)):
            if max(int(valid.src_lengths[i]), int(valid.tgt_lengths[i])) <= limit:
                src, prev, tgt = collate(valid, [i])
                loss += label_smoothed_loss(model(src, prev), tgt, 0.1)[0].item()
                ntok += int((tgt != PAD).sum())
    return loss / ntok / math.log(2)


# ---- case 8: a UTF-8 byte order mark became a vocabulary token -----------------------------------------
BOM = "\ufeff"


def test_a_byte_order_mark_is_not_text(tmp_path):
    raw = tmp_path / "raw.en"
    raw.write_bytes(BOM.encode() + "Hello world.\nHello again.\n".encode())
    assert main(["tokenize", "--lang", "en", "--input", str(raw), "--output", str(tmp_path / "tok.en")]) == 0
    assert (tmp_path / "tok.en").read_text(encoding="utf-8") == "Hello world .\nHello again .\n"

    for lang, text in (("de", "Hallo Welt .\nHallo wieder .\n"), ("en", "Hello world .\nHello again .\n")):
        (tmp_path / f"train.{lang}").write_bytes(BOM.encode() + text.encode())
    assert main(["binarize", "--src-lang", "de", "--tgt-lang", "en", "--train-prefix", str(tmp_path / "train"),
                 "--splits", "train", "--prefixes", str(tmp_path / "train"), "--out-dir", str(tmp_path / "bin")]) == 0
    vocab = (tmp_path / "bin" / "dict.txt").read_text(encoding="utf-8")
    assert BOM not in vocab
    assert "Hallo 2\n" in vocab and "Hello 2\n" in vocab  # the first word counted with its twin, not apart
