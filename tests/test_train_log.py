"""What a training log says (issue 31, item 3): the run's settings before training, perplexity beside
each epoch's loss (2**nll, fairseq's ppl; the log only: metrics.csv keeps its columns), and TensorBoard's
missing package in one line."""
import re
import sys

import pandas as pd
import pytest
from test_bert import TINY as BERT_TINY, bert_data  # noqa: F401 (a fixture)
from test_train import TINY

from lnrepro.core.translation import TrainConfig, train
from lnrepro.training.pretrain import PretrainConfig, pretrain

EPOCH_END = re.compile(r"^epoch (\d+)/\d+ done \| train ([\d.]+) ppl ([\d.]+) \| valid ([\d.]+) ppl ([\d.]+) \| gnorm ",
                       flags=re.M)


def epoch_lines(err, metrics, valid_nll):
    """Each epoch-end line's losses and perplexities against metrics.csv's row of that epoch."""
    lines = EPOCH_END.findall(err)
    assert len(lines) == len(metrics), err
    for (epoch, train_loss, train_ppl, valid_loss, valid_ppl), row in zip(lines, metrics.itertuples()):
        assert int(epoch) == row.epoch
        assert float(train_loss) == pytest.approx(row.train_loss, abs=6e-4)
        assert float(valid_loss) == pytest.approx(row.valid_loss, abs=6e-4)
        assert float(train_ppl) == pytest.approx(2 ** row.train_nll, abs=6e-3)
        assert float(valid_ppl) == pytest.approx(2 ** getattr(row, valid_nll), abs=6e-3)


def test_translation_log_states_its_settings_and_perplexity(toy_data, tmp_path, capsys, one_thread):
    cfg = TrainConfig(**TINY, enc_norm="pre", dec_norm="post", lr=2e-3, warmup=10, epochs=2, label_smoothing=0.2,
                      adam_beta2=0.997, clip_norm=1.5, seed=3)
    train(cfg, toy_data, tmp_path)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert re.match(r"[\d,]+ parameters, vocab \d+, ", lines[0])  # the first line stays (tests/test_paper_config.py)
    assert lines[1:5] == [
        "settings: lr 0.002, schedule inverse_sqrt, warmup 10 updates from lr 0 | optimizer adam (optimizer_impl "
        "torch), betas (0.9, 0.997), eps 1e-08, weight decay 0, clip norm 1.5",
        "settings: batch max_tokens 200 x update_freq 1 x 1 process(es) | seed 3 | precision fp32 | device cpu",
        "settings: norm enc/dec pre/post, layers enc/dec 2/2, d_model 32, ffn 64, heads 4, share_all_embeddings "
        "False, init standard",
        "settings: dropout 0.1, attention dropout 0, activation dropout 0 | label smoothing 0.2 | epochs 2"], err
    assert err.count("settings: ") == 4  # once, before training
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    assert not any("ppl" in c for c in metrics.columns)  # the log's, not the result files'
    epoch_lines(err, metrics, "valid_nll")


def test_bert_log_states_its_settings_and_masked_lm_perplexity(bert_data, tmp_path, capsys):  # noqa: F811
    cfg = PretrainConfig(**{**BERT_TINY, "max_updates": 20}, norm="pre", nsp=True)
    pretrain(cfg, bert_data, tmp_path)
    err = capsys.readouterr().err
    assert ("settings: BERT norm pre, 2 layers, d_model 32, ffn 64, heads 4, init_std 0.02, ln_eps 1e-05 | "
            "dropout 0.1, attention dropout 0.1") in err.splitlines()
    assert ("settings: masked LM (mask_prob 0.15) + next-sentence prediction | block_size 32 (max_tokens 256) from "
            "update 0 | "
            "max_updates 20, valid_interval 10") in err.splitlines()
    # valid ppl: of the masked LM's nll (valid_loss; NSP is not in it)
    epoch_lines(err, pd.read_csv(tmp_path / "metrics.csv"), "valid_loss")


def test_tensorboard_without_its_package_is_one_line(toy_data, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails as if not installed
    with pytest.raises(SystemExit) as stop:
        train(TrainConfig(**TINY, epochs=1, tensorboard=True), toy_data, tmp_path)
    message = str(stop.value)
    assert "\n" not in message
    assert message.startswith("tensorboard: true (--tensorboard) needs the tensorboard package: "
                              "pip install -e '.[tensorboard]'"), message
