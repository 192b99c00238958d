"""No result invented or dropped quietly (issue 27): a run with no value, a diverged or capped run,
fewer checkpoints averaged than asked, one surviving seed, a stale BLEU table; each is an error or a
visible mark in what the user reads (the CSV, the figure, the table). Runs are trained for real
(tiny, on the toy reversal task) and decoded with lnrepro evaluate."""
import argparse
import json
import math
import shutil

import pandas as pd
import pytest

from lnrepro.analyses import admin_tables, figure, lr_grid
from lnrepro.analyses.outcomes import run_outcome
from lnrepro.cli import main
from lnrepro.core.translation import TrainConfig, train
from run_files import bleu_pairs, laid_out, metrics_pairs

TINY = dict(enc_layers=1, dec_layers=1, d_model=32, ffn_dim=64, heads=4, dropout=0.1, max_tokens=200,
            device="cpu", threads=1, log_interval=0.5)


def evaluate(root, run, data, *flags):
    out = root / "eval" / run / ("bleu_avg10.csv" if "--average-last" in flags else "bleu.csv")
    assert main(["evaluate", "--metrics", str(root / "train" / run / "metrics.csv"), "--data", str(data),
                 "--reference", str(data / "test.ref"), "--beam", "1", "--device", "cpu", "--threads", "1",
                 "--out", str(out), *flags]) == 0


@pytest.fixture(scope="module")
def trained(toy_data, tmp_path_factory, one_thread):
    """short: capped by training_cap at 2 rounds of 4 updates; blowup: SGD at lr 1e6 diverges in its
    first round, before any checkpoint. Both decoded per epoch and as the average of the last 10."""
    root = tmp_path_factory.mktemp("runs")
    train(TrainConfig(**TINY, lr=2e-3, schedule="constant", warmup=0, epochs=5, max_rounds=2, max_round_updates=4),
          toy_data, root / "train" / "short")
    train(TrainConfig(**{**TINY, "log_interval": 0.0}, optimizer="sgd", lr=1e6, schedule="constant", epochs=3),
          toy_data, root / "train" / "blowup")
    for run in ("short", "blowup"):
        evaluate(root, run, toy_data)
        evaluate(root, run, toy_data, "--average-last", "10")
    return root


def metrics(root, run):
    return pd.read_csv(root / "train" / run / "metrics.csv")


def test_the_runs_are_what_the_tests_need(trained):
    short, blowup = metrics(trained, "short"), metrics(trained, "blowup")
    assert list(short.epoch) == [1, 2] and set(short.capped) == {1} and short.diverged.sum() == 0
    assert list(blowup.diverged) == [1] and blowup.checkpoint.isna().all() and set(blowup.capped) == {0}


def test_averaging_records_how_many_checkpoints_it_really_averaged(trained):
    short = pd.read_csv(trained / "eval" / "short" / "bleu_avg10.csv")
    assert list(short.epoch) == [2] and list(short.averaged) == [2] and list(short.average_last) == [10]
    blowup = pd.read_csv(trained / "eval" / "blowup" / "bleu_avg10.csv")
    assert len(blowup) == 0 and {"averaged", "average_last"} <= set(blowup.columns)


TRAINED = "Post-LN, Adam, lr 1e-3, no warm-up"  # what each run's settings say it trained, after its description


def figure_spec():
    return {"title": "Fig", "run_settings": {run: {"description": f"{run} run", "lr": 1e-3, "warmup": 0} for run in ("short", "blowup", "late")},
            "panels": [{"title": "valid", "metric": "valid_loss", "runs": ["short", "blowup", "late"]},
                       {"title": "BLEU", "metric": "bleu", "runs": ["short", "blowup"]}]}


def draw_figure(root, tmp_path, monkeypatch):
    """Run lnrepro figure; returns its CSV, its summary and the matplotlib figure it saved."""
    saved = []
    monkeypatch.setattr(figure, "save_figure", lambda fig, title, pdf, **_: saved.append((fig, title)))
    args = argparse.Namespace(spec=json.dumps(figure_spec()), metrics=metrics_pairs(root), bleu=bleu_pairs(root),
                              pdf=str(tmp_path / "f.pdf"),
                              csv=str(tmp_path / "f.csv"), summary=str(tmp_path / "f_final.csv"),
                              scale_note=None)
    assert figure.run(args) == 0
    return pd.read_csv(tmp_path / "f.csv"), pd.read_csv(tmp_path / "f_final.csv"), saved[0]


@pytest.fixture
def runs(trained, tmp_path):
    """A copy of the trained runs, plus late: short's curve, diverging in its second round as the trainer records it."""
    root = tmp_path / "runs"
    shutil.copytree(trained, root)
    late = metrics(root, "short").astype({"diverged_reason": object}).assign(capped=0)
    late.loc[1, ["diverged", "diverged_reason", "valid_loss", "checkpoint"]] = [1, "loss is not finite", math.nan, None]
    (root / "train" / "late").mkdir()
    late.to_csv(root / "train" / "late" / "metrics.csv", index=False)
    return root


def test_figure_marks_divergence_and_caps_and_draws_no_invented_value(runs, tmp_path, monkeypatch):
    table, summary, (fig, title) = draw_figure(runs, tmp_path, monkeypatch)
    update = int(metrics(runs, "blowup").updates.iloc[0])
    never = f"diverged before its first checkpoint (update {update})"
    blowup = table[(table.run == "blowup")]
    assert blowup.value.isna().all() and list(blowup.note) == [never, never]  # NaN and why, not 0
    assert set(table[table.run == "short"].capped) == {1} and set(table[table.run != "short"].capped) == {0}
    final = summary.set_index(["metric", "run"])
    assert math.isnan(final.loc[("valid_loss", "blowup"), "final"]) and final.loc[("valid_loss", "blowup"), "note"] == never
    assert final.loc[("valid_loss", "short"), "capped"] == 1
    assert "CAPPED (training_cap)" in title

    valid, bleu = fig.axes[0], fig.axes[1]
    lines = {line.get_label(): line for line in valid.get_lines() if not line.get_label().startswith("_")}
    legend = [t.get_text().replace("\n", " ") for t in valid.get_legend().get_texts()]  # as one line each
    assert legend == list(lines)
    short, blow, late = legend
    assert short == f"short run: {TRAINED} [CAPPED]"
    assert blow == f"blowup run: {TRAINED}: {never}" and len(lines[blow].get_xdata()) == 0  # named, not drawn
    late_update = int(metrics(runs, "late").updates.iloc[1])
    assert late == f"late run: {TRAINED}: diverged at update {late_update}"
    first_loss = metrics(runs, "late").valid_loss.iloc[0]
    markers = [(list(m.get_xdata()), list(m.get_ydata())) for m in valid.get_lines() if m.get_marker() == "x"
               and len(m.get_xdata())]
    assert markers == [([2], [first_loss])]  # at its last value, where it diverged
    assert not any(0.0 in list(line.get_ydata()) for line in valid.get_lines())
    blow_bleu = [line for line in bleu.get_lines() if line.get_label() == f"blowup run: {TRAINED}: {never}"]
    assert len(blow_bleu) == 1 and len(blow_bleu[0].get_xdata()) == 0


def test_figure_of_a_bleu_table_missing_a_checkpoint_is_an_error(runs, tmp_path, monkeypatch):
    path = runs / "eval" / "short" / "bleu.csv"
    pd.read_csv(path).iloc[1:].to_csv(path, index=False)
    with pytest.raises(SystemExit, match=rf"{path}: no BLEU for epoch\(s\) \[1\].*snakemake --force"):
        draw_figure(runs, tmp_path, monkeypatch)


def test_a_stale_bleu_table_is_an_error_not_an_earlier_score(runs):
    path = runs / "eval" / "short" / "bleu.csv"
    pd.read_csv(path).iloc[:1].to_csv(path, index=False)
    with pytest.raises(SystemExit, match="its last BLEU is of epoch 1, but the run's last checkpoint is of epoch 2"):
        run_outcome(runs / "train" / "short" / "metrics.csv", path)


def table2(root, tmp_path):
    spec = {"average_last": {"short": 10, "blowup": 10}, "table2": {
        "title": "T2", "corpus_label": "toy", "depths": [1], "runs": {"post": ["blowup"], "pre": ["short"]},
        "seed_label": "seeds", "seed_runs": {"pre": ["short"]}}}
    args = argparse.Namespace(table=2, spec=json.dumps(spec), metrics=metrics_pairs(root),
                              bleu=bleu_pairs(root, spec["average_last"]), vanishing=None,
                              csv=str(tmp_path / "t2.csv"), md=str(tmp_path / "t2.md"))
    assert admin_tables.run(args) == 0
    return pd.read_csv(tmp_path / "t2.csv"), (tmp_path / "t2.md").read_text()


def test_liu_tables_say_what_was_averaged_how_many_seeds_and_capped(trained, tmp_path):
    csv, text = table2(trained, tmp_path)
    short = pd.read_csv(trained / "eval" / "short" / "bleu_avg10.csv").bleu.iloc[0]
    valid = metrics(trained, "short").valid_loss.iloc[-1]
    update = int(metrics(trained, "blowup").updates.iloc[0])
    averaged = "avg of 2 of 10 checkpoints: the run has 2 epoch checkpoint(s)"
    assert (f"| Post-LN | diverged [no checkpoint to average: diverged before its first checkpoint (update {update})] |"
            in text)
    assert f"| Pre-LN | {short:.2f} (valid {valid:.2f}) [{averaged}; CAPPED] | {short:.2f} (n = 1 seed) " \
           f"[short: {averaged}; CAPPED] |" in text
    seeds = csv[csv.column == "seeds"].iloc[0]
    assert math.isnan(seeds.bleu_std) and (seeds.seeds, seeds.seeds_run, seeds.capped) == (1, 1, 1)
    cell = csv[csv.run == "short"].iloc[0]
    assert (cell.averaged, cell.average_last, cell.capped, cell.note) == (2, 10, 1, averaged)
    assert math.isnan(csv[csv.run == "blowup"].iloc[0].bleu)


def test_liu_lr_grid_carries_the_cap_and_the_averaging(trained, tmp_path, monkeypatch):
    spec = {"average_last": {"short": 10, "blowup": 10}, "lr_grid": {"title": "grid", "cells": [
        {"norm": "pre", "lr": 1e-3, "beta2": 0.98, "run": "short"}, {"norm": "pre", "lr": 1e6, "beta2": 0.98,
                                                                    "run": "blowup"}]}}
    table = lr_grid.grid_table(spec, laid_out(trained, average_last=spec["average_last"]))
    assert list(table.capped) == [1, 0] and list(table.averaged) == [2, 0]
    saved = []
    monkeypatch.setattr(lr_grid, "save_figure", lambda fig, title, pdf, **_: saved.append((fig, title)))
    lr_grid.draw(table, "grid", tmp_path / "grid.pdf")
    fig, title = saved[0]
    assert "CAPPED (training_cap)" in title
    assert any(t.get_text().endswith("\navg 2/10") for t in fig.axes[0].texts)
