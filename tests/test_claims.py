"""Claims logic on small fabricated metrics and results tables: each kind's number and pass/fail."""
import json
import math
from argparse import Namespace
from pathlib import Path

import pandas as pd
import pytest

from lnrepro import claims


def fake_run(root, run, valid_loss, bleu, diverged_at=None):
    """metrics.csv and bleu.csv of a run with these per-epoch values (a diverged epoch has no BLEU)."""
    (root / "train" / run).mkdir(parents=True)
    (root / "eval" / run).mkdir(parents=True)
    epochs = range(1, len(valid_loss) + 1)
    div = [int(e == diverged_at) for e in epochs]
    pd.DataFrame({"epoch": list(epochs), "valid_loss": valid_loss, "diverged": div}).to_csv(
        root / "train" / run / "metrics.csv", index=False)
    pd.DataFrame({"epoch": [e for e, d in zip(epochs, div) if not d], "bleu": bleu}).to_csv(
        root / "eval" / run / "bleu.csv", index=False)


@pytest.fixture
def runs(tmp_path):
    fake_run(tmp_path, "post_warm", [6.0, 5.0, 4.5, 4.2, 4.0], [5, 15, 25, 30, 33])
    fake_run(tmp_path, "post_nowarm", [7.0, 6.8, 6.7, 6.6, 6.5], [1, 2, 4, 6, 8])
    fake_run(tmp_path, "pre", [5.0, 4.4, 4.0, 3.9, 3.8], [15, 28, 32, 33, 34])
    fake_run(tmp_path, "radam_pre", [5.1, 4.5, 4.1, 3.95, 3.85], [14, 27, 31, 33, 34])
    fake_run(tmp_path, "radam_post", [5.5, 4.9, 4.6, 4.4, 4.3], [10, 20, 26, 29, 30])
    fake_run(tmp_path, "diverged", [float("nan")], [], diverged_at=1)
    return tmp_path


@pytest.mark.parametrize("spec, ours, result", [
    # warm-up essential: BLEU 33 - 8
    ({"kind": "gap", "metric": "bleu", "a": "post_warm", "b": "post_nowarm", "min": 10}, 25, "PASS"),
    ({"kind": "gap", "metric": "bleu", "a": "post_warm", "b": "post_nowarm", "min": 30}, 25, "FAIL"),
    # comparable: 34 - 33 within [-1, 2]
    ({"kind": "gap", "metric": "bleu", "a": "pre", "b": "post_warm", "min": -1, "max": 2}, 1, "PASS"),
    ({"kind": "gap", "metric": "valid_loss", "a": "pre", "b": "radam_pre", "abs": True, "max": 0.1}, 0.05, "PASS"),
    ({"kind": "gap", "metric": "bleu", "a": "post_warm", "b": "post_nowarm", "at": "best", "min": 10}, 25, "PASS"),
    # a run diverged before any checkpoint counts as BLEU 0, loss inf
    ({"kind": "gap", "metric": "bleu", "a": "post_warm", "b": "diverged", "min": 30}, 33, "PASS"),
    ({"kind": "gap", "metric": "valid_loss", "a": "diverged", "b": "post_warm", "min": 1}, math.inf, "PASS"),
    # Pre-LN reaches Post-LN's final valid loss 4.0 at epoch 3 of 5
    ({"kind": "sooner", "metric": "valid_loss", "a": "pre", "b": "post_warm", "max": 0.8}, 0.6, "PASS"),
    ({"kind": "sooner", "metric": "bleu", "a": "pre", "b": "post_warm", "max": 0.5}, 0.8, "FAIL"),
    ({"kind": "sooner", "metric": "valid_loss", "a": "post_nowarm", "b": "post_warm", "max": 1}, math.inf, "FAIL"),
    # LN position (4.3 - 3.85 = 0.45) vs optimizer (|3.8 - 3.85| = 0.05)
    ({"kind": "dominates", "metric": "valid_loss", "a": "radam_post", "b": "radam_pre", "c": "pre", "d": "radam_pre",
      "min": 1}, 9.0, "PASS"),
])
def test_run_claims(runs, spec, ours, result):
    table = claims.evaluate({"c": {"paper": "p", **spec}}, runs, {})
    assert table.ours.iloc[0] == pytest.approx(ours)
    assert table.result.iloc[0] == result


@pytest.fixture
def fig3():
    rows = [{"panel": "ab", "state": "init", "norm": norm, "matrix": "W2", "x": i, "mean": m}
            for norm, f in (("post", lambda i: 0.1 * i), ("pre", lambda i: 0.5)) for i in range(1, 7) for m in [f(i)]]
    rows += [{"panel": "ab", "state": "after_warmup", "norm": "post", "matrix": "W2", "x": i, "mean": 0.01} for i in range(1, 7)]
    rows += [{"panel": "cd", "state": "init", "norm": "pre", "matrix": "W2", "x": L, "mean": 2 / math.sqrt(L)} for L in (4, 16)]
    rows += [{"panel": "concentration", "state": "init", "norm": "post", "matrix": "", "x": eps, "mean": d}
             for eps, d in ((0.1, 0.2), (0.3, 0.05))]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("spec, ours", [
    ({"select": {"panel": "ab", "norm": "post", "state": "init"}, "statistic": "last_over_first"}, 6.0),
    ({"select": {"panel": "ab", "norm": "pre", "state": "init"}, "statistic": "max_over_min"}, 1.0),
    ({"select": {"panel": "cd", "norm": "pre"}, "statistic": "fit_exponent"}, -0.5),
    ({"select": {"panel": "concentration", "norm": "post", "x": 0.3}, "statistic": "value"}, 0.05),
    ({"select": {"panel": "ab", "state": "after_warmup"}, "divide_by": {"panel": "ab", "state": "init", "norm": "post"},
      "statistic": "mean"}, 0.01 / 0.35),
])
def test_table_claims(fig3, spec, ours):
    table = claims.evaluate({"c": {"paper": "p", "kind": "table", "source": "fig3", **spec}}, ".", {"fig3": fig3})
    assert table.ours.iloc[0] == pytest.approx(ours)
    assert table.result.iloc[0] == "PASS" and table.tolerance.iloc[0] == "(reported only)"


def test_table_claim_on_theory_checks_reads_measured():
    checks = pd.DataFrame([{"check": "theorem1_pre", "quantity": "fitted_exponent", "measured": -0.48}])
    spec = {"paper": "p", "kind": "table", "source": "theory", "statistic": "value", "min": -0.6, "max": -0.4,
            "select": {"check": "theorem1_pre", "quantity": "fitted_exponent"}}
    row = claims.evaluate({"t1": spec}, ".", {"theory": checks}).iloc[0]
    assert (row.ours, row.result, row.tolerance) == (-0.48, "PASS", "in [-0.6, -0.4]")


def test_a_selection_with_no_rows_names_the_claim(fig3):
    spec = {"paper": "p", "kind": "table", "source": "fig3", "statistic": "mean", "select": {"norm": "admin"}}
    with pytest.raises(SystemExit, match="claims.broken"):
        claims.evaluate({"broken": spec}, ".", {"fig3": fig3})


def test_command_writes_csv_and_markdown_grouped_by_figure(runs, fig3, tmp_path):
    fig3.to_csv(tmp_path / "fig3.csv", index=False)
    spec = {"z_first": {"paper": "warm-up | essential", "paper_value": 25.5, "figure": "fig2", "kind": "gap",
                        "metric": "bleu", "a": "post_warm", "b": "post_nowarm", "min": 30},
            "a_second": {"paper": "grows", "figure": "fig3", "kind": "table", "source": "fig3", "statistic": "last_over_first",
                         "select": {"panel": "ab", "norm": "post", "state": "init"}, "min": 2}}
    claims.run(Namespace(spec=json.dumps(spec), runs_dir=str(runs), tables=[f"fig3={tmp_path / 'fig3.csv'}"],
                         title="T", csv=str(tmp_path / "c.csv"), md=str(tmp_path / "c.md")))
    table = pd.read_csv(tmp_path / "c.csv")
    assert list(table.claim) == ["z_first", "a_second"] and list(table.result) == ["FAIL", "PASS"]  # fig2 before fig3
    md = Path(tmp_path / "c.md").read_text()
    assert "1 of 2 claims pass" in md and "warm-up \\| essential" in md and "**FAIL**" in md
