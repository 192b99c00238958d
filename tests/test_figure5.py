"""Xiong Fig 5 hides nothing (issue 27): a diverged pre-training is drawn to its last value and
labelled, one with no validation is named with a NaN row, a diverged checkpoint's accuracy is not
plotted, capped runs are marked, and a point from one seed says 'n = 1 seed' with no band. The
pre-trainings and fine-tunings are real (tiny) runs of lnrepro pretrain and lnrepro finetune."""
import argparse
import json
import math
import shutil

import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from lnrepro.analyses import figure5
from lnrepro.cli import main
from lnrepro.core.mono_data import PairData
from lnrepro.training.pretrain import PretrainConfig, pretrain
from run_files import metrics_pairs
from test_bert import TINY, bert_data  # noqa: F401  (a fixture)


TRAINED = "Post-LN, lr 1e-3, no warm-up"  # what each run's settings say it trained, after its description


def unwrapped(legend):
    """The legend's labels as one line each (plotting.legend wraps them at the panel's width)."""
    return [t.get_text().replace("\n", " ") for t in legend.get_texts()]


def finetune(root, bert_data, run, round_, seeds):  # noqa: F811
    glue = root / "glue"
    if not glue.exists():
        glue.mkdir()
        for split in ("train", "dev"):
            (glue / f"{split}.pt").write_bytes((bert_data / f"mrpc_{split}.pt").read_bytes())
    out = root / "finetune" / run / "mrpc" / f"round{round_}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    assert main(["finetune", "--checkpoint", str(root / "pretrain" / run / "checkpoints" / f"epoch{round_}.pt"),
                 "--data", str(glue), "--task", "mrpc", "--batch", "16", "--lr", "1e-4", "--epochs", "1",
                 "--seeds", str(seeds), "--threads", "1", "--out", str(out)]) == 0


@pytest.fixture(scope="module")
def results(bert_data, tmp_path_factory, one_thread):  # noqa: F811
    """short: capped at 2 rounds of 5 updates, fine-tuned with one seed; blowup: SGD at lr 1e4 diverges
    before its first validation; late: short's run uncapped, diverging in its second round as the
    trainer records it (round 1 fine-tuned with 2 seeds)."""
    root = tmp_path_factory.mktemp("fig5")
    pretrain(PretrainConfig(**{**TINY, "max_rounds": 2, "max_round_updates": 5}, norm="pre", nsp=False),
             bert_data, root / "pretrain" / "short")
    pretrain(PretrainConfig(**{**TINY, "lr": 1e4, "optimizer": "sgd", "log_interval": 0.0, "divergence_interval": 1},
                            norm="post", nsp=False), bert_data, root / "pretrain" / "blowup")
    shutil.copytree(root / "pretrain" / "short", root / "pretrain" / "late")
    late = pd.read_csv(root / "pretrain" / "late" / "metrics.csv").astype({"diverged_reason": object}).assign(capped=0)
    late.loc[1, ["diverged", "diverged_reason", "valid_loss", "checkpoint"]] = [1, "loss is not finite", math.nan, None]
    late.to_csv(root / "pretrain" / "late" / "metrics.csv", index=False)
    (root / "pretrain" / "late" / "checkpoints" / "epoch2.pt").unlink()
    for run, round_, seeds in (("short", 1, 1), ("short", 2, 1), ("late", 1, 2), ("late", 2, 2), ("blowup", 1, 2)):
        finetune(root, bert_data, run, round_, seeds)  # late 2 and blowup 1: recorded as diverged
    return root


def draw(root, tmp_path, monkeypatch):
    saved = []
    monkeypatch.setattr(figure5, "save_figure", lambda fig, title, pdf, **_: saved.append((fig, title)))
    spec = {"title": "Fig 5", "runs": ["short", "blowup", "late"], "tasks": ["mrpc"],
            "run_settings": {run: {"description": f"{run} run", "lr": 1e-3, "warmup": 0} for run in ("short", "blowup", "late")},
            "rounds": {"short": [1, 2], "blowup": [1], "late": [1, 2]}}
    summaries = [(f"{p.parts[-3]}:{p.parts[-2]}:{p.name.removeprefix('round').removesuffix('.summary.csv')}", str(p))
                 for p in sorted(root.glob("finetune/*/*/round*.summary.csv"))]  # every one there: it reads the spec's
    args = argparse.Namespace(spec=json.dumps(spec), metrics=metrics_pairs(root), summaries=summaries,
                              pdf=str(tmp_path / "f.pdf"),
                              csv=str(tmp_path / "f.csv"), scale_note=None)
    assert figure5.run(args) == 0
    return pd.read_csv(tmp_path / "f.csv"), saved[0]


def test_the_runs_are_what_the_tests_need(results):
    short = pd.read_csv(results / "pretrain" / "short" / "metrics.csv")
    blowup = pd.read_csv(results / "pretrain" / "blowup" / "metrics.csv")
    assert list(short.epoch) == [1, 2] and set(short.capped) == {1} and short.diverged.sum() == 0
    assert list(blowup.diverged) == [1] and blowup.checkpoint.isna().all()


def test_figure5_marks_divergence_caps_and_single_seeds(results, tmp_path, monkeypatch):
    table, (fig, title) = draw(results, tmp_path, monkeypatch)
    assert {"note", "capped", "n", "seeds"} <= set(table.columns)
    blowup_update = int(pd.read_csv(results / "pretrain" / "blowup" / "metrics.csv").updates.iloc[0])
    never = f"diverged before its first checkpoint (update {blowup_update})"
    late_metrics = pd.read_csv(results / "pretrain" / "late" / "metrics.csv")
    late_update = int(late_metrics.updates.iloc[1])
    loss, acc = table[table.panel == "valid_loss"].set_index(["run", "round"]), table[table.panel == "mrpc"]
    assert math.isnan(loss.loc[("blowup", 1), "value"]) and loss.loc[("blowup", 1), "note"] == never  # NaN, not 0
    assert loss.loc[("late", 2), "note"] == f"diverged at update {late_update}"
    assert set(table[table.run == "short"].capped) == {1} and set(table[table.run != "short"].capped) == {0}
    assert "CAPPED (training_cap): a smoke test, not a result" in title

    # a diverged checkpoint has no accuracy; a single seed has no spread and says so
    acc = acc.set_index(["run", "round"])
    for diverged in (("late", 2), ("blowup", 1)):
        row = acc.loc[diverged]
        assert row.diverged == 1 and math.isnan(row.value) and row.note.startswith("pre-training diverged at update")
    for r in (1, 2):
        row = acc.loc[("short", r)]
        assert 0 <= row.value <= 1 and math.isnan(row.ci95) and (row.n, row.seeds) == (1, 1)
        assert row.note == "n = 1 seed"
    assert acc.loc[("late", 1), "n"] == 2 and pd.isna(acc.loc[("late", 1), "note"])  # two seeds: nothing to say

    valid, mrpc = fig.axes
    legend = unwrapped(valid.get_legend())
    assert legend == [f"short run: {TRAINED} [CAPPED]", f"blowup run: {TRAINED}: {never}",
                      f"late run: {TRAINED}: diverged at update {late_update}"]
    lines = {line.get_label(): line for line in valid.get_lines() if not line.get_label().startswith("_")}
    assert len(lines[f"blowup run: {TRAINED}: {never}"].get_xdata()) == 0  # named, not drawn
    markers = [(list(m.get_xdata()), list(m.get_ydata())) for m in valid.get_lines()
               if m.get_marker() == "x" and len(m.get_xdata())]
    assert markers == [([int(late_metrics.updates.iloc[0])], [late_metrics.valid_loss.iloc[0]])]
    assert not any(0.0 in list(line.get_ydata()) for line in valid.get_lines())

    legend = unwrapped(mrpc.get_legend())
    labels = PairData.load(results / "glue" / "dev.pt").labels
    majority = labels.bincount().max().item() / len(labels)  # the chance level, drawn (it was not)
    assert legend == [f"short run: {TRAINED}: n = 1 seed [CAPPED]", f"blowup run: {TRAINED}: {never}",
                      f"late run: {TRAINED}: diverged at update {late_update}", f"majority class of dev: {majority:.3f}"]
    assert set(table[table.panel == "mrpc"].majority) == {majority}
    lines = {line.get_label(): line for line in mrpc.get_lines() if not line.get_label().startswith("_")}
    assert list(lines[legend[0]].get_ydata()) == list(acc.loc["short"].value)
    assert len(lines[legend[1]].get_xdata()) == 0
    assert list(lines[legend[2]].get_ydata()) == [acc.loc[("late", 1), "value"]]  # round 2's is not a number
    bands = [tuple(c.get_facecolor()[0]) for c in mrpc.collections if len(c.get_paths())]
    assert bands == [to_rgba(lines[legend[2]].get_color(), 0.2)]  # late's two seeds; short's one seed has none


def test_a_round_the_config_does_not_fine_tune_is_not_read(results, tmp_path, monkeypatch):
    """Fig 5 read every round*.summary.csv in the folder: a demo rebuilt after `every` changed drew the
    old setting's rounds beside the new ones. It reads the rounds its spec names."""
    stale = results / "finetune" / "short" / "mrpc" / "round7.summary.csv"
    stale.write_text((results / "finetune" / "short" / "mrpc" / "round1.summary.csv").read_text().replace("\n1,", "\n7,", 1))
    try:
        table, _ = draw(results, tmp_path, monkeypatch)
    finally:
        stale.unlink()
    assert sorted(table[(table.panel == "mrpc") & (table.run == "short")]["round"]) == [1, 2]
