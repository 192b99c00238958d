"""BERT pre-training and fine-tuning (Xiong et al. Fig 5): masking statistics, instances, the
shared trainer's resume and divergence for the masked LM, fine-tuning and its confidence interval."""
import math
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
import torch

from lnrepro.core import loop
from lnrepro.core.batching import epoch_order
from lnrepro.core.bert import CLS, SEP, Bert, BertClassifier, BertConfig, load_bert, mask_tokens, pair_input
from lnrepro.core.data import PAD, Dictionary
from lnrepro.core.mono_data import FlatBuilder, MonoData, PairData
from lnrepro.prepare.demo_grammar import generate_documents, generate_pairs
from lnrepro.training.finetune import ci95, summarize
from lnrepro.training.pretrain import MaskedLMTask, PretrainConfig, make_instances, pretrain

TINY = dict(layers=2, d_model=32, ffn_dim=64, heads=4, block_size=32, max_tokens=256, max_updates=40,
            valid_interval=10, schedule="constant", warmup=0, lr=2e-3, device="cpu", threads=1, log_interval=0.5)


def mono(docs, vocab):
    sentences, doc_offsets = FlatBuilder(), [0]
    for doc in docs:
        for sentence in doc:
            sentences.append([vocab.index.get(t, 3) for t in sentence.lower().split()])
        doc_offsets.append(len(sentences))
    tokens, offsets = sentences.tensors()
    return MonoData(tokens, offsets, torch.tensor(doc_offsets, dtype=torch.int64))


@pytest.fixture(scope="module")
def bert_data(tmp_path_factory):
    """A word-level masked-LM corpus from the demo generator (no BPE needed here)."""
    out = tmp_path_factory.mktemp("bert_data")
    train, valid = generate_documents(60, 1, "train"), generate_documents(6, 1, "valid")
    counted = Dictionary.build(s.lower() for d in train for s in d)
    vocab = Dictionary(counted.symbols[4:] + ["<mask>"], counted.counts + [0])
    vocab.save(out / "dict.txt")
    mono(train, vocab).save(out / "train.pt")
    mono(valid, vocab).save(out / "valid.pt")
    for split, n in (("train", 64), ("dev", 32)):
        s1, s2, labels = FlatBuilder(), FlatBuilder(), []
        for a, b, y in generate_pairs("mrpc", n, 1, split):
            s1.append([vocab.index.get(t, 3) for t in a.lower().split()])
            s2.append([vocab.index.get(t, 3) for t in b.lower().split()])
            labels.append(int(y))
        (t1, o1), (t2, o2) = s1.tensors(), s2.tensors()
        PairData(t1, o1, t2, o2, torch.tensor(labels)).save(out / f"mrpc_{split}.pt")
    return out


def test_masking_follows_devlin_15_percent_80_10_10():
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, 1000, (400, 128))
    tokens[:, 0], tokens[:, -1], tokens[:10, 60:] = CLS, SEP, PAD
    inputs, targets = mask_tokens(tokens, mask_id=1000, generator=g)
    real = (tokens != PAD) & (tokens != CLS) & (tokens != SEP)
    chosen = targets != PAD
    assert not (chosen & ~real).any()  # never [CLS], [SEP] or padding
    assert torch.equal(targets[chosen], tokens[chosen])  # targets are the original tokens
    assert chosen.sum() / real.sum() == pytest.approx(0.15, abs=0.005)
    n = chosen.sum().item()
    masked = (inputs == 1000) & chosen
    kept = (inputs == tokens) & chosen
    replaced = chosen & ~masked & ~kept
    assert masked.sum().item() / n == pytest.approx(0.8, abs=0.01)
    # a random replacement can draw the token itself (1 in ~1000): counted as kept
    assert kept.sum().item() / n == pytest.approx(0.1, abs=0.01)
    assert replaced.sum().item() / n == pytest.approx(0.1, abs=0.01)
    assert torch.equal(inputs[~chosen], tokens[~chosen])
    assert (inputs[replaced] >= 4).all() and (inputs[replaced] < 1000).all()  # ordinary symbols, never <mask>


def test_instances_pack_documents_and_pairs_stay_inside_the_block(bert_data):
    data = MonoData.load(bert_data / "train.pt")
    plain = make_instances(data, 32, nsp=False, rng=np.random.default_rng(0))
    assert (plain[:, 2] == plain[:, 3]).all()  # no second segment
    covered = np.concatenate([np.arange(a0, a1) for a0, a1, *_ in plain])
    assert list(covered) == list(range(data.n_sentences))  # every sentence once, in order
    nsp = make_instances(data, 32, nsp=True, rng=np.random.default_rng(0))
    assert 0.3 < nsp[:, 4].mean() < 0.7  # about half are true continuations
    doc_of = np.searchsorted(data.doc_offsets.numpy(), np.arange(data.n_sentences), side="right") - 1
    for a0, a1, b0, b1, is_next in nsp:
        assert doc_of[a0] == doc_of[a1 - 1] and b1 > b0
        assert (doc_of[b0] == doc_of[a0]) == bool(is_next) and (b0 == a1) == bool(is_next)
    task = MaskedLMTask(PretrainConfig(**{**TINY, "nsp": True}), bert_data)
    inputs, segments, targets, is_next = task.masked(task.train, task.phases[0].rows, range(20), ("t", 0), 32)
    assert inputs.size(1) <= 32 and (inputs[:, 0] == CLS).all()
    assert ((segments == 1).sum(1) > 0).all()  # every NSP instance has a B segment


def test_pair_input_truncates_the_longer_side():
    tokens, segments = pair_input(range(10, 30), range(40, 45), max_len=16)
    assert len(tokens) == 16 and tokens[0] == CLS and tokens.count(SEP) == 2
    assert segments == [0] * 10 + [1] * 6  # a cut to 8, b kept at 5


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_pretraining_lowers_the_masked_lm_loss_and_resumes_exactly(bert_data, tmp_path, norm):
    cfg = PretrainConfig(**TINY, norm=norm, nsp=True)
    pretrain(cfg, bert_data, tmp_path / "full")
    full = pd.read_csv(tmp_path / "full" / "metrics.csv")
    assert list(full.updates) == [10, 20, 30, 40] and full.diverged.sum() == 0
    assert full.valid_loss.iloc[-1] < full.valid_loss.iloc[0] - 0.3
    assert full.valid_loss.iloc[0] < math.log2(len(Dictionary.load(bert_data / "dict.txt")))
    # stop after 2 rounds (as a kill after round 2's checkpoint would), then resume to the end
    short = PretrainConfig(**{**TINY, "max_updates": 20}, norm=norm, nsp=True)
    pretrain(short, bert_data, tmp_path / "resumed")
    state = torch.load(tmp_path / "resumed" / "checkpoints" / "last.pt", weights_only=True)
    state["fingerprint"] = cfg.fingerprint()  # the same run, cut short
    torch.save(state, tmp_path / "resumed" / "checkpoints" / "last.pt")
    pretrain(cfg, bert_data, tmp_path / "resumed")
    again = pd.read_csv(tmp_path / "resumed" / "metrics.csv")
    columns = ["updates", "train_loss", "valid_loss", "valid_mlm_acc", "valid_nsp_acc", "grad_norm"]
    pd.testing.assert_frame_equal(full[columns], again[columns])


# the paper config at tiny scale: BERT's eps, and Devlin et al. A.2's two lengths: 16 tokens for the
# first 45% of 40 updates (the switch at update 18, inside round 2), then 32; 8 sequences per batch in both
TWO_PHASE = {**TINY, "ln_eps": 1e-12, "short_block_size": 16, "short_fraction": 0.45, "short_max_tokens": 128,
             "nsp": True}


def test_two_phase_batches_switch_length_at_the_expected_update(bert_data):
    task = MaskedLMTask(PretrainConfig(**TWO_PHASE), bert_data)
    items = [item for r in range(1, 5) for item in task.round_batches(r, per_update=2)]
    assert [p for _, p, _ in items] == [0] * 36 + [1] * 44  # updates 0..17 short, 18..39 long
    shapes = [task.batch(item)[0].shape for item in items]
    short, long = shapes[:36], shapes[36:]
    assert max(t for _, t in short) == 16 and all(n * t <= 128 for n, t in short)
    assert max(t for _, t in long) == 32 and all(n * t <= 256 for n, t in long)
    assert items[36][2] == tuple(epoch_order(task.phases[1].batches, 1, 1)[0])  # the long stream from its start
    # validation stays at the short length (our reading: one curve across the switch)
    assert max(inputs.size(1) for inputs, *_ in task.valid_masked) == 16
    with pytest.raises(ValueError, match="set together"):
        PretrainConfig(**{**TINY, "short_block_size": 16})


class Killed(Exception):
    pass


def kill_after_round(monkeypatch, n):
    """A run that dies right after round n's checkpoint, as a job killed there would."""
    save, calls = loop.save_round, []

    def save_then_die(*args, **kwargs):
        save(*args, **kwargs)
        calls.append(1)
        if len(calls) == n:
            raise Killed
    monkeypatch.setattr(loop, "save_round", save_then_die)  # where Run.checkpoint looks it up


@pytest.mark.parametrize("killed_after", [1, 2])  # resumed before the switch, and just after it
def test_two_phase_run_resumes_exactly_across_the_switch(bert_data, tmp_path, monkeypatch, capsys, killed_after):
    cfg = PretrainConfig(**TWO_PHASE)
    pretrain(cfg, bert_data, tmp_path / "full")
    with monkeypatch.context() as m:
        kill_after_round(m, killed_after)
        with pytest.raises(Killed):
            pretrain(cfg, bert_data, tmp_path / "resumed")
    capsys.readouterr()
    pretrain(cfg, bert_data, tmp_path / "resumed")
    assert f"resuming after epoch {killed_after} ({10 * killed_after} updates)" in capsys.readouterr().err
    full, again = (pd.read_csv(tmp_path / run / "metrics.csv") for run in ("full", "resumed"))
    columns = ["updates", "train_loss", "valid_loss", "valid_mlm_acc", "valid_nsp_acc", "grad_norm", "lr"]
    assert list(full.updates) == [10, 20, 30, 40]
    pd.testing.assert_frame_equal(full[columns], again[columns])
    assert load_bert(tmp_path / "resumed" / "checkpoints" / "epoch4.pt").cfg.ln_eps == 1e-12  # as fine-tuning reads it


def test_layer_norms_carry_the_configured_eps():
    cfg = PretrainConfig(**{**TINY, "ln_eps": 1e-12}, norm="pre").model_config(vocab_size=50)
    norms = [m for m in Bert(cfg).modules() if isinstance(m, torch.nn.LayerNorm)]
    # embeddings, 2 per layer, Pre-LN's final one, the masked-LM head
    assert len(norms) == 1 + 2 * 2 + 1 + 1 and {m.eps for m in norms} == {1e-12}
    assert {m.eps for m in Bert(BertConfig(vocab_size=50, layers=1)).modules()
            if isinstance(m, torch.nn.LayerNorm)} == {1e-5}  # the default: the demo's models unchanged


def test_a_checkpoint_older_than_ln_eps_loads_with_1e_5(tmp_path):
    model = Bert(BertConfig(vocab_size=50, layers=1, d_model=16, ffn_dim=32, heads=2))
    old = {k: v for k, v in asdict(model.cfg).items() if k != "ln_eps"}  # as written before ln_eps existed
    torch.save({"model": model.state_dict(), "model_config": old, "epoch": 1, "updates": 10}, tmp_path / "epoch1.pt")
    loaded = load_bert(tmp_path / "epoch1.pt")  # as fine-tuning builds its model
    assert loaded.cfg.ln_eps == 1e-5
    assert {m.eps for m in loaded.modules() if isinstance(m, torch.nn.LayerNorm)} == {1e-5}
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), model.state_dict().values()))


def test_pretraining_divergence_is_recorded(bert_data, tmp_path):
    cfg = PretrainConfig(**{**TINY, "lr": 1e4, "optimizer": "sgd", "log_interval": 0.0}, norm="post", nsp=False)
    assert pretrain(cfg, bert_data, tmp_path) == 0
    m = pd.read_csv(tmp_path / "metrics.csv")
    assert m.diverged.iloc[-1] == 1 and len(m) < 4 and math.isnan(m.valid_loss.iloc[-1])


def test_classifier_reuses_the_nsp_pooler_and_learns_a_separable_task():
    torch.manual_seed(0)
    bert = Bert(BertConfig(vocab_size=50, layers=1, d_model=16, ffn_dim=32, heads=2, max_positions=16, nsp=True))
    pooler = bert.pooler.weight.clone()
    model = BertClassifier(bert)
    assert torch.equal(model.bert.pooler.weight, pooler)
    x = torch.randint(4, 50, (64, 8))
    x[:, 0] = CLS
    y = (x[:, 1] < 27).long()  # the label is visible in one token
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = torch.nn.functional.cross_entropy(model(x, torch.zeros_like(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    assert (model(x, torch.zeros_like(x)).argmax(-1) == y).float().mean() > 0.95


def test_confidence_interval_of_six_seeds():
    mean, std, half = ci95([0.80, 0.82, 0.78, 0.81, 0.79, 0.84])
    assert mean == pytest.approx(0.8067, abs=1e-4)
    assert std == pytest.approx(0.021602, abs=1e-5)
    assert half == pytest.approx(2.571 * 0.021602 / math.sqrt(6), abs=1e-5)  # t(0.975, 5 df) = 2.571
    rows = [{"batch": 16, "lr": lr, "epochs": 3, "seed": s, "dev_acc": acc}
            for lr, accs in ((1e-5, [0.6, 0.62]), (1e-4, [0.7, 0.66])) for s, acc in enumerate(accs)]
    best = summarize(rows, "mrpc", 2, 200)
    assert best["lr"] == 1e-4 and best["mean_acc"] == pytest.approx(0.68) and best["seeds"] == 2


def test_finetune_command_writes_every_seed_and_the_summary(bert_data, tmp_path):
    from lnrepro.cli import main
    pretrain(PretrainConfig(**{**TINY, "max_updates": 10}, norm="pre", nsp=False), bert_data, tmp_path / "run")
    glue = tmp_path / "mrpc"
    glue.mkdir()
    for split in ("train", "dev"):
        (glue / f"{split}.pt").write_bytes((bert_data / f"mrpc_{split}.pt").read_bytes())
    out = tmp_path / "ft" / "round1.csv"
    out.parent.mkdir()
    assert main(["finetune", "--checkpoint", str(tmp_path / "run" / "checkpoints" / "epoch1.pt"), "--data", str(glue),
                 "--task", "mrpc", "--batch", "16", "--lr", "1e-4", "3e-4", "--epochs", "1", "--seeds", "3",
                 "--out", str(out), "--threads", "1"]) == 0
    runs, summary = pd.read_csv(out), pd.read_csv(out.with_suffix(".summary.csv"))
    assert len(runs) == 6 and set(runs.seed) == {1, 2, 3}
    assert runs.dev_acc.between(0, 1).all()
    best = runs.groupby("lr").dev_acc.mean().max()
    assert summary.mean_acc.iloc[0] == pytest.approx(best) and summary.updates.iloc[0] == 10
    labels = PairData.load(glue / "dev.pt").labels.tolist()  # the chance level beside it: always the commonest label
    assert summary.majority_acc.iloc[0] == max(labels.count(0), labels.count(1)) / len(labels)
    from lnrepro.core.provenance import read
    assert read(out)["command"] == read(out.with_suffix(".summary.csv"))["command"] == "finetune"  # both have theirs


def test_one_seed_has_no_spread_and_fewer_seeds_than_run_are_counted():
    mean, std, half = ci95([0.7])
    assert mean == 0.7 and math.isnan(std) and math.isnan(half)  # not a spread of 0
    rows = [{"batch": 16, "lr": lr, "epochs": 3, "seed": s, "dev_acc": acc}
            for lr, accs in ((1e-5, [0.6, 0.62, 0.61]), (1e-4, [0.7, math.nan, math.nan]))
            for s, acc in enumerate(accs)]
    best = summarize(rows, "mrpc", 2, 200)
    assert (best["lr"], best["mean_acc"], best["seeds"], best["n"]) == (1e-4, 0.7, 3, 1)
    assert math.isnan(best["std_acc"]) and math.isnan(best["ci95"]) and best["note"] == "n = 1 seed (of 3)"
    rows[1]["dev_acc"] = math.nan  # 2 of lr 1e-5's 3 seeds
    rows[4]["dev_acc"] = 0.68
    best = summarize(rows, "mrpc", 2, 200)
    assert (best["n"], best["note"]) == (2, "n = 2 of 3 seeds") and best["ci95"] > 0


def test_a_fine_tuning_that_blows_up_has_no_accuracy_and_is_not_counted(bert_data, tmp_path):
    from lnrepro.cli import main
    pretrain(PretrainConfig(**{**TINY, "max_updates": 10}, norm="pre", nsp=False), bert_data, tmp_path / "run")
    out = tmp_path / "ft" / "round1.csv"
    out.parent.mkdir()
    assert main(["finetune", "--checkpoint", str(tmp_path / "run" / "checkpoints" / "epoch1.pt"),
                 "--data", str(glue_dir(bert_data, tmp_path)), "--task", "mrpc", "--batch", "16",
                 "--lr", "1e-4", "1e30", "--epochs", "1", "--seeds", "1", "--out", str(out), "--threads", "1"]) == 0
    runs, summary = pd.read_csv(out).set_index("lr"), pd.read_csv(out.with_suffix(".summary.csv")).iloc[0]
    assert math.isnan(runs.dev_acc[1e30]) and 0 <= runs.dev_acc[1e-4] <= 1  # NaN weights: no accuracy
    assert (summary.lr, summary.seeds, summary.n, summary.note) == (1e-4, 1, 1, "n = 1 seed")
    assert math.isnan(summary.std_acc) and math.isnan(summary.ci95)


def glue_dir(bert_data, tmp_path):
    glue = tmp_path / "mrpc"
    glue.mkdir()
    for split in ("train", "dev"):
        (glue / f"{split}.pt").write_bytes((bert_data / f"mrpc_{split}.pt").read_bytes())
    return glue


def test_finetuning_a_missing_checkpoint_of_a_run_that_did_not_diverge_is_an_error(bert_data, tmp_path):
    from lnrepro.cli import main
    pretrain(PretrainConfig(**{**TINY, "max_updates": 10}, norm="pre", nsp=False), bert_data, tmp_path / "run")
    (tmp_path / "run" / "checkpoints" / "epoch1.pt").unlink()  # deleted by hand, say
    out, glue = tmp_path / "ft" / "round1.csv", glue_dir(bert_data, tmp_path)
    for round_ in (1, 9):  # deleted, and never written: neither is a divergence
        checkpoint = tmp_path / "run" / "checkpoints" / f"epoch{round_}.pt"
        with pytest.raises(SystemExit, match=rf"{checkpoint}: no such checkpoint, and {tmp_path / 'run' / 'metrics.csv'}"
                                             rf" records no divergence .*snakemake --force"):
            main(["finetune", "--checkpoint", str(checkpoint), "--data", str(glue), "--task", "mrpc", "--out", str(out)])
    assert not out.exists() and not out.with_suffix(".summary.csv").exists()


def test_finetuning_after_the_pretraining_diverged_says_where_it_diverged(bert_data, tmp_path):
    from lnrepro.cli import main
    cfg = PretrainConfig(**{**TINY, "lr": 1e4, "optimizer": "sgd", "log_interval": 0.0}, norm="post", nsp=False)
    pretrain(cfg, bert_data, tmp_path / "run")
    m = pd.read_csv(tmp_path / "run" / "metrics.csv")
    diverged = m.iloc[-1]
    assert diverged.diverged == 1 and pd.isna(diverged.checkpoint)
    out = tmp_path / "ft" / "round4.csv"
    out.parent.mkdir()
    assert main(["finetune", "--checkpoint", str(tmp_path / "run" / "checkpoints" / "epoch4.pt"),
                 "--metrics", str(tmp_path / "run" / "metrics.csv"), "--data", str(glue_dir(bert_data, tmp_path)),
                 "--task", "mrpc", "--out", str(out)]) == 0
    summary = pd.read_csv(out.with_suffix(".summary.csv"))
    assert summary.diverged.iloc[0] == 1 and math.isnan(summary.mean_acc.iloc[0])
    assert summary.note.iloc[0] == (f"pre-training diverged at update {diverged.updates} (round {diverged.epoch}): "
                                    f"{diverged.diverged_reason}")


@pytest.mark.medium
def test_two_workers_pretrain_like_one_process_with_update_freq_2(bert_data, tmp_path):
    """Multi-GPU pre-training is the translation trainer's DDP (2 gloo workers here); masks are keyed
    by the batch's place in the stream, so both layouts mask alike."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    flags = {**TINY, "max_updates": 20, "dropout": 0.0, "attn_dropout": 0.0, "norm": "pre", "nsp": True}

    def cmd(out, **extra):
        args = ["-m", "lnrepro.cli", "pretrain", "--data", str(bert_data), "--out", str(out)]
        return args + [a for k, v in {**flags, **extra}.items() for a in (f"--{k.replace('_', '-')}", str(v))]

    subprocess.run([sys.executable, *cmd(tmp_path / "one", update_freq=2)], check=True, env=env, capture_output=True)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           *cmd(tmp_path / "two", update_freq=1)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 worker(s)" in proc.stderr
    one, two = pd.read_csv(tmp_path / "one" / "metrics.csv"), pd.read_csv(tmp_path / "two" / "metrics.csv")
    assert list(one.updates) == list(two.updates) == [10, 20]
    for col in ("train_loss", "valid_loss", "valid_nsp_acc", "grad_norm"):
        pd.testing.assert_series_equal(one[col], two[col], rtol=1e-4, check_names=False)
