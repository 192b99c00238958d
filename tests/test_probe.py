"""Fig 3's gradient probe and its figure on the toy corpus: statistics, checkpoint choice, CSVs."""
import argparse
import csv
import dataclasses

import pandas as pd
import pytest
import torch

from lnrepro.analyses import plot_gradients, probe_gradients
from lnrepro.core.batching import make_batches
from lnrepro.core.data import Dictionary, ParallelData
from lnrepro.core.model import ModelConfig, Transformer


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_model(toy_data, norm="post", layers=2):
    torch.manual_seed(0)
    vocab = Dictionary.load(toy_data / "dict.txt")
    return Transformer(ModelConfig(vocab_size=len(vocab), d_model=16, ffn_dim=32, heads=2, enc_layers=layers,
                                   dec_layers=layers, dropout=0.0, enc_norm=norm, dec_norm=norm))


def test_norm_of_the_mean_gradient_is_at_most_the_mean_norm(toy_data):
    data = ParallelData.load(toy_data / "train.pt")
    batches = make_batches(data, 200, seed=1)[:3]
    stats, sq = probe_gradients.probe(tiny_model(toy_data), data, batches, 0.1)
    assert len(stats) == 2 * 2 * 2  # 2 encoder + 2 decoder FFNs, W1 and W2
    for expected, mean in stats.values():
        assert 0 < expected <= mean + 1e-9
    assert len(sq) == sum(int((data.target(i) != 1).sum()) for b in batches for i in b)


def test_with_one_batch_both_statistics_agree(toy_data):
    data = ParallelData.load(toy_data / "train.pt")
    stats, _ = probe_gradients.probe(tiny_model(toy_data, "pre"), data, make_batches(data, 200, seed=1)[:1], 0.1)
    for expected, mean in stats.values():
        assert expected == pytest.approx(mean, rel=1e-6)


def test_ffn_sublayers_are_numbered_encoder_then_decoder(toy_data):
    model = tiny_model(toy_data, layers=3)
    sides = [(side, i) for side, i, _ in probe_gradients.ffn_sublayers(model)]
    assert sides == [("enc", 1), ("enc", 2), ("enc", 3), ("dec", 1), ("dec", 2), ("dec", 3)]
    assert probe_gradients.last_norm_input(model) is model.decoder.layers[-1].ffn_block.layer_norm
    pre = tiny_model(toy_data, "pre")
    assert probe_gradients.last_norm_input(pre) is pre.decoder.final_norm


def write_metrics(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["epoch", "updates", "diverged", "checkpoint"])
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize("warmup, epoch", [(1, 1), (80, 1), (81, 2), (240, 3)])
def test_checkpoint_after_picks_the_epoch_where_warmup_ended(tmp_path, warmup, epoch):
    write_metrics(tmp_path / "metrics.csv", [{"epoch": e, "updates": 80 * e, "diverged": 0,
                                             "checkpoint": f"checkpoints/epoch{e}.pt"} for e in (1, 2, 3)])
    path, got = probe_gradients.checkpoint_after(tmp_path / "metrics.csv", warmup)
    assert got == epoch and path == tmp_path / f"checkpoints/epoch{epoch}.pt"


def test_checkpoint_after_refuses_a_run_that_ended_or_diverged_before(tmp_path):
    write_metrics(tmp_path / "metrics.csv", [{"epoch": 1, "updates": 80, "diverged": 0, "checkpoint": "checkpoints/epoch1.pt"},
                                             {"epoch": 2, "updates": 160, "diverged": 1, "checkpoint": ""}])
    with pytest.raises(SystemExit, match="diverged"):
        probe_gradients.checkpoint_after(tmp_path / "metrics.csv", 100)
    with pytest.raises(SystemExit, match="before warm-up ended"):
        probe_gradients.checkpoint_after(tmp_path / "metrics.csv", 1000)


def probe_args(toy_data, out, **kw):
    args = dict(data=str(toy_data), norm="post", layers=2, checkpoint_metrics=None, after_updates=0, d_model=16,
                ffn_dim=32, heads=2, dropout=0.1, attn_dropout=0.0, act_dropout=0.0, share_all_embeddings=False,
                max_tokens=200, label_smoothing=0.1, seeds=2, batches=2, device="cpu", threads=1,
                grads_out=str(out / "grads.csv"), concentration_out=str(out / "conc.csv"))
    args.update(kw)
    return argparse.Namespace(**args)


def test_probe_command_at_init_and_after_warmup(toy_data, tmp_path):
    init, after = tmp_path / "init", tmp_path / "after"
    probe_gradients.run(probe_args(toy_data, init, norm="pre"))
    grads = pd.read_csv(init / "grads.csv")
    assert len(grads) == 2 * 4 * 2  # seeds x FFN sub-layers x matrices
    assert set(grads.state) == {"init"} and set(grads.norm) == {"pre"} and sorted(set(grads["index"])) == [1, 2, 3, 4]
    conc = pd.read_csv(init / "conc.csv")
    assert len(conc) == 2 * 5 and conc.delta_hat.between(0, 1).all()

    model = tiny_model(toy_data)  # a "trained" checkpoint in the trainer's epoch format
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    torch.save({"model": model.state_dict(), "model_config": dataclasses.asdict(model.cfg), "epoch": 2},
               tmp_path / "run" / "checkpoints" / "epoch2.pt")
    write_metrics(tmp_path / "run" / "metrics.csv", [{"epoch": e, "updates": 10 * e, "diverged": 0,
                                                     "checkpoint": f"checkpoints/epoch{e}.pt"} for e in (1, 2, 3)])
    probe_gradients.run(probe_args(toy_data, after, checkpoint_metrics=str(tmp_path / "run" / "metrics.csv"),
                                   after_updates=15))
    grads = pd.read_csv(after / "grads.csv")
    assert set(grads.state) == {"after_warmup"} and set(grads.norm) == {"post"} and set(grads.layers) == {2}


def fake_grads(state, norm, layers, value):
    return pd.DataFrame([{"state": state, "norm": norm, "layers": layers, "seed": s, "side": side, "layer": i,
                          "index": i + (layers if side == "dec" else 0), "matrix": m,
                          "expected_grad_norm": value(i + (layers if side == "dec" else 0)) * s,
                          "mean_grad_norm": 2 * value(layers) * s, "batches": 3}
                         for s in (1, 2) for side in ("enc", "dec") for i in range(1, layers + 1) for m in ("W1", "W2")])


@pytest.mark.medium
def test_figure_table_holds_every_panel(tmp_path):
    grads = pd.concat([fake_grads("init", n, L, (lambda i: float(i)) if n == "post" else (lambda i: 1.0))
                       for n in ("post", "pre") for L in (2, 3)] + [fake_grads("after_warmup", "post", 2, lambda i: 0.01)])
    conc = pd.DataFrame([{"state": "init", "norm": "post", "layers": 2, "seed": s, "epsilon": 0.1, "delta_hat": 0.1 * s,
                          "mean_sq_norm_over_d": 1.5, "positions": 10} for s in (1, 2)])
    table = plot_gradients.summarize(grads, conc, panel_layers=2)
    ab = table[table.panel == "ab"]
    assert len(ab) == 3 * 4 * 2  # series x layers x matrices (only the 2-2 model's layers)
    post_w1 = ab[(ab.state == "init") & (ab.norm == "post") & (ab.matrix == "W1")]
    assert list(post_w1["mean"]) == [1.5, 3.0, 4.5, 6.0]  # layer index x mean seed (1.5)
    cd = table[table.panel == "cd"]
    assert sorted(cd.x) == [2, 2, 3, 3] and set(cd.matrix) == {"W2"} and set(cd["index"]) == {4, 6}
    c = table[table.panel == "concentration"]
    assert c["mean"].iloc[0] == pytest.approx(0.15)
    summary = plot_gradients.series_summary(table)
    assert set(summary.panel) == {"ab", "cd"}
    plot_gradients.draw(table, {"title": "t", "panel_layers": 2}, tmp_path / "fig3.pdf")
    assert (tmp_path / "fig3.pdf").read_bytes()[:5] == b"%PDF-"
