"""The per-epoch figure command: what it plots is what the runs' tables hold."""
import json

import pandas as pd
import pytest

from lnrepro.analyses import figure


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
    args = type("Args", (), {"spec": json.dumps(spec), "runs_dir": str(tmp_path), "pdf": str(tmp_path / "f.pdf"),
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
        figure.long_table(spec, tmp_path)
