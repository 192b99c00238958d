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
from run_files import metrics_pairs

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


# ---- case 2: max_tokens dropped pairs without a word; runs on different valid sets in one figure ------
def test_pairs_over_max_tokens_are_counted_said_and_validated_alone(tmp_path, capsys, one_thread):
    """Training leaves out pairs over max_tokens and says how many; validation keeps them (each in a
    batch of its own), leaves out only what exceeds the model's 1,024 positions, and says so too."""
    long_train = [long_pair(70, s) for s in (11, 12, 13)]                      # 71 tokens > max_tokens 60
    long_valid = [long_pair(70, 21), long_pair(70, 22), long_pair(1100, 23)]   # the last > 1,024 positions
    data = binarized(tmp_path, {"train": reversal_pairs(200, 1) + long_train,
                                "valid": reversal_pairs(20, 2) + long_valid})
    run = tmp_path / "runs" / "train" / "max60"
    assert train(data, run, "--max-tokens", "60") == 0
    err = capsys.readouterr().err
    assert (f"WARNING: {data / 'train.pt'}: 3 of 203 training pairs are longer than max_tokens 60 (or the model's "
            f"1024 positions) and are left out of training (lines 201, 202, 203; the longest has 71 tokens); to "
            f"train on them raise max_tokens (config: train_defaults.max_tokens or runs.RUN.max_tokens) to 71") in err
    assert (f"{data / 'valid.pt'}: 2 validation pair(s) longer than max_tokens 60, each validated in a batch of "
            f"its own") in err
    assert (f"WARNING: {data / 'valid.pt'}: 1 of 23 validation pairs are longer than the model's 1024 positions and "
            f"are not validated (lines 23); the valid loss is that of the other 22") in err
    m = pd.read_csv(run / "metrics.csv")
    assert list(m.valid_pairs) == [22] and list(m.valid_skipped) == [1] and list(m.train_skipped) == [3]
    # the valid loss is over all 22 pairs, the two over max_tokens included
    every = validation_loss_of_every_pair(run / m.checkpoint.iloc[0], ParallelData.load(data / "valid.pt"))
    assert m.valid_loss.iloc[0] == pytest.approx(every, rel=1e-5)


@pytest.mark.medium
def test_a_figure_marks_a_panel_of_runs_validated_on_different_sets(tmp_path, capsys, one_thread):
    """One run validated on 22 pairs (one of 23 is over the model's positions), one on 20 (another valid
    split): their validation panel is marked, with each run's count; a panel of one run, or of train
    loss, is not."""
    data = binarized(tmp_path, {"train": reversal_pairs(200, 1),
                                "valid": reversal_pairs(22, 2) + [long_pair(1100, 23)]})
    assert train(data, tmp_path / "runs" / "train" / "max60", "--max-tokens", "60") == 0
    other = binarized(tmp_path, {"train": reversal_pairs(200, 1), "valid": reversal_pairs(20, 2)}, name="bin20")
    assert train(other, tmp_path / "runs" / "train" / "short", "--max-tokens", "60") == 0
    capsys.readouterr()
    spec = {"title": "t", "run_settings": {},
            "panels": [{"title": "both", "metric": "valid_loss", "runs": ["max60", "short"]},
                       {"title": "one", "metric": "valid_loss", "runs": ["max60"]},
                       {"title": "train", "metric": "train_loss", "runs": ["max60", "short"]}]}
    args = type("Args", (), {"spec": json.dumps(spec), "metrics": metrics_pairs(tmp_path / "runs"), "bleu": [],
                             "pdf": str(tmp_path / "f.pdf"), "csv": str(tmp_path / "f.csv"), "summary": None,
                             "scale_note": None})
    assert figure.run(args) == 0
    err = capsys.readouterr().err
    assert (f"WARNING: panel (a) 'both' compares runs validated on different sets (valid_pairs "
            f"{tmp_path / 'runs' / 'train' / 'max60' / 'metrics.csv'}: 22, "
            f"{tmp_path / 'runs' / 'train' / 'short' / 'metrics.csv'}: 20); its curves are not comparable") in err
    table = pd.read_csv(tmp_path / "f.csv")
    assert table.groupby("panel").valid_sets_differ.max().tolist() == [1, 0, 0]
    assert table.set_index(["panel", "run"]).valid_pairs.to_dict() == {
        (0, "max60"): 22, (0, "short"): 20, (1, "max60"): 22, (2, "max60"): 22, (2, "short"): 20}
    assert "note" in table and "capped" in table
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"


# ---- case 4: an empty validation split trained a whole epoch, then ZeroDivisionError -------------------
def test_an_empty_valid_split_is_refused_before_training(tmp_path, capsys):
    text = tmp_path / "text"
    text.mkdir()
    pairs = reversal_pairs(30, 1)
    for k, lang in enumerate(("de", "en")):
        (text / f"all.{lang}").write_text("".join(p[k] + "\n" for p in pairs), encoding="utf-8")
    split = [str(text / f"{part}.{lang}") for part in ("train", "valid") for lang in ("de", "en")]
    assert main(["split-valid", "--every", "40", "--inputs", str(text / "all.de"), str(text / "all.en"),
                 "--train-outputs", *split[:2], "--valid-outputs", *split[2:]]) == 0
    assert "the valid split is empty" in capsys.readouterr().err
    data = tmp_path / "bin"
    assert main(["binarize", "--src-lang", "de", "--tgt-lang", "en", "--train-prefix", str(text / "train"),
                 "--splits", "train", "valid", "--prefixes", str(text / "train"), str(text / "valid"),
                 "--out-dir", str(data)]) == 0
    with pytest.raises(SystemExit) as e:
        train(data, tmp_path / "run", "--max-tokens", "60")
    message = str(e.value.code)
    assert message.startswith(f"{data / 'valid.pt'}: no validation pairs, so no epoch could be validated")
    assert "corpora.CORPUS.valid_every" in message and f"rebuild {data / 'valid.pt'}" in message
    assert not (tmp_path / "run" / "metrics.csv").exists()
    assert not list((tmp_path / "run").glob("**/*.pt"))  # not one epoch trained


# ---- case 5: a test sentence over 1,024 tokens killed evaluation with IndexError ------------------------
def test_a_test_sentence_over_the_models_positions_is_skipped_and_said(tmp_path, capsys, one_thread):
    test = reversal_pairs(6, 3)
    test[2] = long_pair(1100, 31)  # line 3: 1,101 tokens with </s>
    short_test = test[:2] + test[3:]
    data = binarized(tmp_path, {"train": reversal_pairs(200, 1), "valid": reversal_pairs(10, 2),
                                "test": test, "short": short_test})
    for name, pairs in (("test", test), ("short", short_test)):
        (tmp_path / f"{name}.ref").write_text("".join(en + "\n" for _, en in pairs), encoding="utf-8")
    run = tmp_path / "run"
    assert train(data, run, "--max-tokens", "60") == 0
    capsys.readouterr()

    def evaluate(split):
        out = tmp_path / split / "bleu.csv"
        assert main(["evaluate", "--metrics", str(run / "metrics.csv"), "--data", str(data), "--split", split,
                     "--reference", str(tmp_path / f"{split}.ref"), "--beam", "2", "--max-len-b", "12",
                     "--device", "cpu", "--out", str(out)]) == 0
        return pd.read_csv(out), capsys.readouterr().err

    bleu, err = evaluate("test")
    assert (f"WARNING: {data / 'test.pt'}: 1 of 6 source sentences are longer than the model's 1024 positions and "
            f"are not translated (lines 3 of {tmp_path / 'test.ref'}; their hypothesis lines stay empty); BLEU is "
            f"over the other 5") in err
    assert list(bleu.sentences) == [5] and list(bleu.skipped) == [1]
    hyps = (tmp_path / "test" / "hyp_epoch1.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(hyps) == 6 and hyps[2] == ""
    # the score is that of the other five sentences
    short, _ = evaluate("short")
    assert bleu.bleu.iloc[0] == short.bleu.iloc[0] and list(short.skipped) == [0]
    assert hyps[:2] + hyps[3:] == (tmp_path / "short" / "hyp_epoch1.txt").read_text(encoding="utf-8").split("\n")[:-1]


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
