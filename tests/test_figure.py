"""The per-epoch figure command: what it plots is what the runs' tables hold."""
import json

import pandas as pd
import pytest

from lnrepro.analyses import figure
from run_files import laid_out, metrics_pairs


def fake_run(root, run, valid_nll, diverged=None):
    (root / "train" / run).mkdir(parents=True)
    (root / "eval" / run).mkdir(parents=True)
    epochs = list(range(1, len(valid_nll) + 1))
    diverged = diverged or [0] * len(epochs)
    pd.DataFrame({"epoch": epochs, "updates": [10 * e for e in epochs], "valid_loss": [v + 0.5 for v in valid_nll],
                  "valid_nll": valid_nll, "diverged": diverged, "capped": 0,
                  "checkpoint": ["" if d else f"checkpoints/epoch{e}.pt" for e, d in zip(epochs, diverged)]}
                 ).to_csv(root / "train" / run / "metrics.csv", index=False)
    pd.DataFrame({"epoch": epochs, "bleu": [1.0] * len(epochs)}).to_csv(root / "eval" / run / "bleu.csv", index=False)


def test_perplexity_is_two_to_the_nll_in_bits(tmp_path):
    fake_run(tmp_path, "pre", [7.0, 6.0])
    fake_run(tmp_path, "post", [8.0, 10.0], diverged=[0, 1])
    spec = {"title": "Liu Fig 1", "run_settings": {"pre": {"norm": "pre"}, "post": {}},
            "panels": [{"title": "dev perplexity", "metric": "valid_ppl", "runs": ["pre", "post"]}]}
    args = type("Args", (), {"spec": json.dumps(spec), "metrics": metrics_pairs(tmp_path), "bleu": [],
                             "pdf": str(tmp_path / "f.pdf"),
                             "csv": str(tmp_path / "f.csv"), "summary": str(tmp_path / "f_final.csv"),
                             "scale_note": None})
    assert figure.run(args) == 0
    table = pd.read_csv(tmp_path / "f.csv")
    assert list(table[table.run == "pre"].value) == [128.0, 64.0]
    assert list(table[table.run == "post"].value) == [256.0, 1024.0]
    final = pd.read_csv(tmp_path / "f_final.csv").set_index("run")
    assert final.loc["pre", "final"] == 64.0 and final.loc["pre", "best"] == 64.0
    assert final.loc["post", "diverged"] == 1
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"


def test_an_unknown_metric_is_named(tmp_path):
    fake_run(tmp_path, "pre", [7.0])
    spec = {"title": "t", "run_settings": {}, "panels": [{"title": "p", "metric": "valid_acc", "runs": ["pre"]}]}
    with pytest.raises(KeyError, match="valid_acc"):
        figure.long_table(spec, laid_out(tmp_path))


# ---- what a reader sees (issue 44): colours, BLEU axes, the epochs all runs share ---------------------
def drawn(monkeypatch, spec, table):
    """The matplotlib figure draw() makes, kept instead of saved."""
    kept = []
    monkeypatch.setattr(figure, "save_figure", lambda fig, *a, **k: kept.append(fig))
    figure.draw(spec, table, "unused.pdf")
    return kept[0]


def curves(runs):
    """A long table: run -> (panel, label, values per epoch)."""
    rows = [{"panel": panel, "panel_title": "p", "run": run, "label": label, "epoch": e + 1, "metric": metric,
             "value": v, "diverged": 0, "capped": 0, "note": "", "valid_pairs": 10, "valid_sets_differ": 0}
            for run, (panel, metric, label, values) in runs.items() for e, v in enumerate(values)]
    return pd.DataFrame(rows)


def line_colours(ax):
    return {line.get_label(): line.get_color() for line in ax.get_lines() if not line.get_label().startswith("_")}


def test_a_colour_means_one_training_in_every_panel(monkeypatch):
    """Fig 2's first Adam run and first SGD run were both blue; Liu's Fig 9 keeps one colour per norm."""
    spec = {"title": "t", "panels": [{"title": "a", "metric": "valid_loss", "runs": ["a1", "a2"]},
                                     {"title": "b", "metric": "valid_loss", "runs": ["s1", "s2"]},
                                     {"title": "c", "metric": "valid_loss", "runs": ["p6", "p18"]}]}
    table = curves({"a1": (0, "valid_loss", "Adam 1", [3, 2]), "a2": (0, "valid_loss", "Adam 2", [3, 1]),
                    "s1": (1, "valid_loss", "SGD 1", [3, 2]), "s2": (1, "valid_loss", "SGD 2", [3, 1]),
                    "p6": (2, "valid_loss", "Post-LN", [3, 2]), "p18": (2, "valid_loss", "Post-LN", [3, 3])})
    axes = drawn(monkeypatch, spec, table).axes
    a, b = line_colours(axes[0]), line_colours(axes[1])
    assert len(set(a.values()) | set(b.values())) == 4  # four trainings, four colours
    c = [line.get_color() for line in axes[2].get_lines()]
    assert c[0] == c[1]  # the same label at two depths: one colour


def test_a_bleu_axis_spans_at_least_0_to_1(monkeypatch):
    """SGD's BLEU of 0.02-0.07 autoscaled into a shape that was noise."""
    spec = {"title": "t", "panels": [{"title": "SGD", "metric": "bleu", "runs": ["s"]}]}
    ax = drawn(monkeypatch, spec, curves({"s": (0, "bleu", "SGD", [0.02, 0.07, 0.04])})).axes[0]
    assert ax.get_ylim() == (0.0, 1.0)
    ax = drawn(monkeypatch, spec, curves({"s": (0, "bleu", "SGD", [2.0, 30.0])})).axes[0]
    assert ax.get_ylim()[0] == 0.0 and ax.get_ylim()[1] > 30


def test_runs_of_different_lengths_get_an_inset_of_the_epochs_they_share(monkeypatch):
    """A 20-epoch run at BLEU 77 squashed the 8-epoch runs into 0-5: an inset shows epochs 1-8."""
    long, short = [e ** 1.5 for e in range(1, 21)], [0.1 * e for e in range(1, 9)]
    spec = {"title": "t", "panels": [{"title": "BLEU", "metric": "bleu", "runs": ["long", "short"]}]}
    ax = drawn(monkeypatch, spec, curves({"long": (0, "bleu", "L", long), "short": (0, "bleu", "S", short)})).axes[0]
    insets = [child for child in ax.child_axes]
    assert len(insets) == 1 and insets[0].get_title() == "epochs 1-8, zoomed"
    assert max(max(line.get_xdata()) for line in insets[0].get_lines()) == 8
    same = {"a": (0, "bleu", "A", long), "b": (0, "bleu", "B", [v / 2 for v in long])}
    assert drawn(monkeypatch, {**spec, "panels": [{**spec["panels"][0], "runs": ["a", "b"]}]}, curves(same)).axes[0].child_axes == []
