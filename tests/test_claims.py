"""Claims logic on small fabricated metrics and results tables: each kind's number and verdict on the
paper's range and on a scaled one, what cannot be measured, and config/claims.yaml against the configs."""
import json
import math
import re
from argparse import Namespace
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lnrepro.analyses import check_claims, claims, verdicts
from lnrepro.args import RunFiles
from run_files import bleu_pairs, laid_out, metrics_pairs
from workflow_helpers import ROOT, refusal_before_any_job

DIVERGED = None  # a run that diverged in its first epoch: no value at all
NAN = float("nan")


def fake_run(root, run, valid_loss, bleu, diverged_at=None):
    """metrics.csv and bleu.csv of a run with these per-epoch values (a diverged epoch has no BLEU)."""
    (root / "train" / run).mkdir(parents=True)
    (root / "eval" / run).mkdir(parents=True)
    epochs = range(1, len(valid_loss) + 1)
    div = [int(e == diverged_at) for e in epochs]
    pd.DataFrame({"epoch": list(epochs), "updates": [10 * e for e in epochs], "valid_loss": valid_loss, "diverged": div,
                  "checkpoint": [None if d else f"checkpoints/epoch{e}.pt" for e, d in zip(epochs, div)]}).to_csv(
        root / "train" / run / "metrics.csv", index=False)
    pd.DataFrame({"epoch": [e for e, d in zip(epochs, div) if not d], "bleu": bleu}).to_csv(
        root / "eval" / run / "bleu.csv", index=False)


def write_runs(root, runs):
    for name, curves in runs.items():
        if curves is DIVERGED:
            fake_run(root, name, [NAN], [], diverged_at=1)
        else:
            fake_run(root, name, *curves)


def bleu(*values):
    """A run whose BLEU per epoch is what the claim reads."""
    return [5.0] * len(values), list(values)


def loss(*values):
    """A run whose validation loss per epoch is what the claim reads."""
    return list(values), [10.0] * len(values)


def fig3(**panels):
    """A fig3-like table: each panel's values at x = 1, 2, ... in its `mean` column."""
    return pd.DataFrame([{"panel": p, "x": x, "mean": v} for p, values in panels.items()
                         for x, v in enumerate(values, start=1)])


def grid(*statuses):
    """A liu_fig10-like table: one norm's cells and their outcome."""
    return pd.DataFrame([{"norm": "admin", "lr": i, "status": status} for i, status in enumerate(statuses)])


def cells(post, pre):
    """A liu_fig10-like table of BLEU per (lr, beta2) cell: Post-LN's converged cells, Pre-LN's every cell."""
    grid = [(lr, b2) for lr in (1e-4, 5e-4) for b2 in (0.99, 0.999)]
    return pd.DataFrame([{"norm": "post", "lr": lr, "beta2": b2, "status": "converged", "bleu": v}
                         for (lr, b2), v in zip(grid, post)] +
                        [{"norm": "pre", "lr": lr, "beta2": b2, "status": "converged", "bleu": v} for (lr, b2), v in zip(grid, pre)])


def theory(measured):
    return pd.DataFrame([{"check": "theorem1_pre", "quantity": "fitted_exponent", "measured": measured}])


GAP = {"kind": "gap", "metric": "bleu", "a": "warm", "b": "nowarm", "min": 10}
GAP_LOSS = {"kind": "gap", "metric": "valid_loss", "a": "nowarm", "b": "warm", "min": 0.5}
GAP_ABS = {"kind": "gap", "abs": True, "metric": "valid_loss", "a": "adam", "b": "radam", "max": 0.25}
GAP_BEST = {**GAP, "at": "best"}
GAP_EPOCH1 = {**GAP_LOSS, "a": "post", "b": "pre", "at": 1, "min": 0}  # Liu Fig 1: who starts faster
TWO_SIDED = {"kind": "gap", "metric": "bleu", "a": "pre", "b": "post", "min": -1, "max": 2}
SOONER = {"kind": "sooner", "metric": "valid_loss", "a": "pre", "b": "post", "max": 0.8}
LEVEL = {"kind": "level", "metric": "bleu", "at": "best", "a": "warm", "min": 33, "max": 35}
SOONER_AT = {**SOONER, "target": 4, "max": 0.6}  # Xiong Fig 4: Pre-LN's epoch at Post-LN's 4th-epoch value, / 4
SOONER_LEVEL = {**SOONER, "target": 4.5, "max": 0.8}  # Xiong Fig 5(a): the updates each needs to reach a loss
DOMINATES = {"kind": "dominates", "metric": "valid_loss", "a": "radam_post", "b": "radam_pre", "c": "adam_pre",
             "d": "radam_pre", "min": 1}
POST = loss(6.0, 5.0, 4.5, 4.25, 4.0)  # sooner's b: final 4.0 at epoch 5
# Liu et al.'s "diverges": Post-LN's run failed (diverged, or ended at or above converged_below) and Admin's trained
OUTCOME = {"kind": "outcome", "a": "post", "b": "admin", "converged_below": 7.0, "min": 1}
TRAINED = loss(7.5, 6.5, 6.3)
SLOW = loss(7.8, 7.2, 6.85)  # 0.55 bits above TRAINED at the end, yet converged: slower, not diverged


def stat(statistic, **bounds):
    return {"kind": "table", "source": "fig3", "select": {"panel": "p"}, "statistic": statistic, **bounds}


DIVIDED = {**stat("mean", max=0.5), "select": {"panel": "after"}, "divide_by": {"panel": "init"}}
MINUS = {**stat("mean", min=0), "select": {"panel": "pre"}, "minus": {"panel": "post"}}  # Fig 5(b,c)
CONVERGED = {"kind": "table", "source": "liu_fig10", "select": {"norm": "admin"}, "y": "status",
             "equals": "converged", "statistic": "mean", "min": 1}  # Liu Fig 10: share of converged cells
BEATS = {"kind": "table", "source": "liu_fig10", "select": {"norm": "post"}, "minus": {"norm": "pre"},
         "minus_covers": True, "x": ["lr", "beta2"], "y": "bleu", "statistic": "share_positive", "min": 0.75}
MONOTONE = {"kind": "table", "source": "liu_fig10", "select": {"norm": "post"}, "y": "status", "equals": "converged",
            "x": ["lr", "beta2"], "toward": [1, -1], "statistic": "monotone", "min": 1}  # Fig 10: fails toward large lr, small beta2


def statuses(*cells):
    """A liu_fig10-like table of Post-LN's 2 x 2 cells: (lr, beta2) -> status, row by row."""
    grid = [(lr, b2) for lr in (1e-4, 5e-4) for b2 in (0.99, 0.999)]
    return pd.DataFrame([{"norm": "post", "lr": lr, "beta2": b2, "status": st} for (lr, b2), st in zip(grid, cells)])


THEOREM1 = {"kind": "table", "source": "theory", "statistic": "value", "min": -0.6, "max": -0.4,
            "select": {"check": "theorem1_pre", "quantity": "fitted_exponent"}}

# (claim, its inputs, our number, verdict): every kind gets inputs that must pass and inputs that must fail
CASES = [
    pytest.param(GAP, {"runs": {"warm": bleu(20, 33), "nowarm": bleu(4, 8)}}, 25, "PASS", id="gap"),
    pytest.param(GAP, {"runs": {"warm": bleu(10, 12), "nowarm": bleu(4, 8)}}, 4, "FAIL", id="gap-too-small"),
    pytest.param(GAP, {"runs": {"warm": bleu(10, 18), "nowarm": bleu(4, 8)}}, 10, "PASS", id="gap-exactly-min"),
    pytest.param(GAP, {"runs": {"warm": bleu(20, 33), "nowarm": DIVERGED}}, 33, "PASS", id="gap-b-diverged-is-bleu-0"),
    pytest.param(GAP, {"runs": {"warm": DIVERGED, "nowarm": bleu(4, 8)}}, -8, "FAIL", id="gap-a-diverged-is-bleu-0"),
    pytest.param(GAP_LOSS, {"runs": {"warm": loss(5, 4), "nowarm": DIVERGED}}, math.inf, "PASS",
                 id="gap-diverged-loss-is-inf"),
    pytest.param(GAP_LOSS, {"runs": {"warm": DIVERGED, "nowarm": DIVERGED}}, NAN, "FAIL", id="gap-inf-minus-inf-is-nan"),
    pytest.param(GAP_ABS, {"runs": {"adam": loss(4, 3.75), "radam": loss(4, 3.875)}}, 0.125, "PASS", id="gap-abs"),
    pytest.param(GAP_ABS, {"runs": {"adam": loss(4, 3.5), "radam": loss(4, 4)}}, 0.5, "FAIL",
                 id="gap-abs-below-counts-as-above"),
    pytest.param(GAP_BEST, {"runs": {"warm": bleu(20, 33, 30), "nowarm": bleu(4, 8, 6)}}, 25, "PASS", id="gap-at-best"),
    pytest.param(GAP_BEST, {"runs": {"warm": bleu(12, 25), "nowarm": bleu(20, 8)}}, 5, "FAIL",
                 id="gap-at-best-not-final"),
    pytest.param(GAP, {"runs": {"warm": bleu(5, 9, 20, 33), "nowarm": bleu(4, 8)}}, 1, "FAIL",
                 id="gap-longer-run-read-where-the-shorter-ends"),
    pytest.param(GAP_BEST, {"runs": {"warm": bleu(12, 15, 10, 40), "nowarm": bleu(4, 8, 6)}}, 7, "FAIL",
                 id="gap-at-best-up-to-the-shorter-runs-end"),
    pytest.param(GAP, {"runs": {"warm": bleu(5, 9, 20, 33), "nowarm": DIVERGED}}, 33, "PASS",
                 id="gap-a-diverged-run-is-no-horizon"),
    pytest.param(GAP_EPOCH1, {"runs": {"post": loss(7, 5), "pre": loss(6.5, 5.5)}}, 0.5, "PASS", id="gap-at-epoch"),
    pytest.param(GAP_EPOCH1, {"runs": {"post": loss(6, 5), "pre": loss(6.5, 5.5)}}, -0.5, "FAIL",
                 id="gap-at-epoch-not-final"),
    pytest.param(GAP_EPOCH1, {"runs": {"post": DIVERGED, "pre": loss(6.5, 5.5)}}, math.inf, "PASS",
                 id="gap-at-epoch-diverged-before-is-inf"),
    pytest.param(DOMINATES, {"runs": {"radam_post": loss(5, 4, 3.45), "radam_pre": loss(4, 3.5), "adam_pre": loss(3.9, 3.25)}},
                 2, "PASS", id="dominates-read-where-the-shortest-ends"),
    pytest.param(TWO_SIDED, {"runs": {"pre": bleu(34), "post": bleu(33)}}, 1, "PASS", id="two-sided"),
    pytest.param(TWO_SIDED, {"runs": {"pre": bleu(35), "post": bleu(33)}}, 2, "PASS", id="two-sided-exactly-max"),
    pytest.param(TWO_SIDED, {"runs": {"pre": bleu(36), "post": bleu(33)}}, 3, "FAIL", id="two-sided-above-max"),
    pytest.param(TWO_SIDED, {"runs": {"pre": bleu(31), "post": bleu(33)}}, -2, "FAIL", id="two-sided-below-min"),
    pytest.param(SOONER, {"runs": {"pre": loss(5, 4.5, 4, 3.9, 3.8), "post": POST}}, 0.6, "PASS", id="sooner"),
    pytest.param(SOONER, {"runs": {"pre": loss(5, 4.5, 4.25, 4, 3.8), "post": POST}}, 0.8, "PASS",
                 id="sooner-exactly-max"),
    pytest.param(SOONER, {"runs": {"pre": loss(6, 5, 4.5, 4.2, 4), "post": POST}}, 1.0, "FAIL", id="sooner-not-sooner"),
    pytest.param(SOONER, {"runs": {"pre": loss(6, 5, 4.5, 4.2, 4.1), "post": POST}}, math.inf, "FAIL",
                 id="sooner-never-reaches"),
    pytest.param(SOONER, {"runs": {"pre": DIVERGED, "post": POST}}, math.inf, "FAIL", id="sooner-a-diverged"),
    pytest.param(SOONER, {"runs": {"pre": loss(5, 4), "post": DIVERGED}}, NAN, "FAIL", id="sooner-b-diverged-is-nan"),
    pytest.param(SOONER_AT, {"runs": {"pre": loss(5, 4.25, 4), "post": POST}}, 0.5, "PASS", id="sooner-at-epoch"),
    pytest.param(SOONER_AT, {"runs": {"pre": loss(5, 4.5, 4.3, 4.25), "post": POST}}, 1.0, "FAIL",
                 id="sooner-at-epoch-not-sooner"),
    pytest.param(SOONER_LEVEL, {"runs": {"pre": loss(5, 4.5, 4), "post": POST}}, 2 / 3, "PASS", id="sooner-to-a-level"),
    pytest.param(SOONER_LEVEL, {"runs": {"pre": loss(5, 4.75, 4.5), "post": POST}}, 1.0, "FAIL",
                 id="sooner-to-a-level-not-sooner"),
    pytest.param(SOONER_LEVEL, {"runs": {"pre": loss(4.5), "post": loss(5, 4.75)}}, 0.5, "PASS",
                 id="sooner-b-never-reaches-the-level-bounds-the-ratio"),
    pytest.param(SOONER_LEVEL, {"runs": {"pre": loss(5, 4.75), "post": POST}}, math.inf, "FAIL",
                 id="sooner-a-never-reaches-the-level"),
    pytest.param(LEVEL, {"runs": {"warm": bleu(30, 34.5, 34)}}, 34.5, "PASS", id="level"),
    pytest.param(LEVEL, {"runs": {"warm": bleu(20, 31)}}, 31, "FAIL", id="level-below"),
    pytest.param(LEVEL, {"runs": {"warm": DIVERGED}}, 0, "FAIL", id="level-diverged-is-bleu-0"),
    pytest.param(DOMINATES, {"runs": {"radam_post": loss(4.5), "radam_pre": loss(4), "adam_pre": loss(3.75)}}, 2, "PASS",
                 id="dominates"),
    pytest.param(DOMINATES, {"runs": {"radam_post": loss(4.125), "radam_pre": loss(4), "adam_pre": loss(3.5)}}, 0.25,
                 "FAIL", id="dominates-not"),
    pytest.param(DOMINATES, {"runs": {"radam_post": DIVERGED, "radam_pre": loss(4), "adam_pre": loss(3.75)}}, math.inf,
                 "PASS", id="dominates-diverged-post-ln"),
    pytest.param(OUTCOME, {"runs": {"post": DIVERGED, "admin": TRAINED}}, 1, "PASS", id="outcome-diverged"),
    pytest.param(OUTCOME, {"runs": {"post": loss(7.8, 7.6, 7.5), "admin": TRAINED}}, 1, "PASS",
                 id="outcome-stuck-above-the-threshold-failed"),
    pytest.param(OUTCOME, {"runs": {"post": SLOW, "admin": TRAINED}}, 0, "FAIL", id="outcome-slow-but-converged"),
    pytest.param(OUTCOME, {"runs": {"post": DIVERGED, "admin": loss(7.5, 7.2, 7.0)}}, 0, "FAIL",
                 id="outcome-the-other-run-failed-too"),
    pytest.param({**OUTCOME, "converged_below": None}, {"runs": {"post": loss(7.8, 7.6, 7.5), "admin": TRAINED}}, 0,
                 "FAIL", id="outcome-without-a-threshold-only-a-divergence-fails"),
    pytest.param({**OUTCOME, "b": None}, {"runs": {"post": DIVERGED}}, 1, "PASS", id="outcome-of-one-run"),
    pytest.param(stat("value", max=0.125), {"fig3": fig3(p=[0.05])}, 0.05, "PASS", id="value"),
    pytest.param(stat("value", max=0.125), {"fig3": fig3(p=[0.25])}, 0.25, "FAIL", id="value-above-max"),
    pytest.param(stat("value", max=0.125), {"fig3": fig3(p=[NAN])}, NAN, "FAIL", id="value-nan"),
    pytest.param(stat("value"), {"fig3": fig3(p=[NAN])}, NAN, "FAIL", id="value-nan-without-range"),
    pytest.param(stat("mean", min=2), {"fig3": fig3(p=[1, 2, 3])}, 2, "PASS", id="mean-exactly-min"),
    pytest.param(stat("mean", min=2), {"fig3": fig3(p=[1, 1, 1])}, 1, "FAIL", id="mean-below-min"),
    pytest.param(stat("last_over_first", min=1.5), {"fig3": fig3(p=[1, 2, 3])}, 3, "PASS", id="last_over_first"),
    pytest.param(stat("last_over_first", min=1.5), {"fig3": fig3(p=[1, 1, 1.25])}, 1.25, "FAIL",
                 id="last_over_first-flat"),
    pytest.param(stat("max_over_min", max=1.25), {"fig3": fig3(p=[1, 1.25, 1.125])}, 1.25, "PASS",
                 id="max_over_min-exactly-max"),
    pytest.param(stat("max_over_min", max=1.25), {"fig3": fig3(p=[1, 2, 1.5])}, 2, "FAIL", id="max_over_min-grows"),
    pytest.param(stat("cv", max=0.5), {"fig3": fig3(p=[1, 3])}, 0.5, "PASS", id="cv-exactly-max"),  # sd 1, mean 2
    pytest.param(stat("cv", max=0.5), {"fig3": fig3(p=[0, 2])}, 1, "FAIL", id="cv-unequal"),
    pytest.param(stat("fit_exponent", max=-0.2), {"fig3": fig3(p=[1, 2 ** -0.5])}, -0.5, "PASS", id="fit_exponent"),
    pytest.param(stat("fit_exponent", max=-0.2), {"fig3": fig3(p=[1, 1])}, 0, "FAIL", id="fit_exponent-flat"),
    pytest.param(DIVIDED, {"fig3": fig3(after=[0.25, 0.25], init=[1, 1])}, 0.25, "PASS", id="divide_by"),
    pytest.param(DIVIDED, {"fig3": fig3(after=[1, 1], init=[1, 1])}, 1, "FAIL", id="divide_by-no-drop"),
    pytest.param(DIVIDED, {"fig3": fig3(after=[1, 1], init=[0, 0])}, math.inf, "FAIL", id="divide_by-zero-is-inf"),
    pytest.param(DIVIDED, {"fig3": fig3(after=[0, 0], init=[0, 0])}, NAN, "FAIL", id="divide_by-zero-by-zero-is-nan"),
    pytest.param(stat("min", min=0), {"fig3": fig3(p=[0, 1])}, 0, "PASS", id="min-exactly-min"),
    pytest.param(stat("min", min=0), {"fig3": fig3(p=[1, -0.5])}, -0.5, "FAIL", id="min-below"),
    pytest.param(stat("max", max=1), {"fig3": fig3(p=[0, 1])}, 1, "PASS", id="max-exactly-max"),
    pytest.param(stat("max", max=1), {"fig3": fig3(p=[2, 0])}, 2, "FAIL", id="max-above"),
    pytest.param(MINUS, {"fig3": fig3(pre=[0.75, 0.75], post=[0.5, 0.75])}, 0.125, "PASS", id="minus"),
    pytest.param(MINUS, {"fig3": fig3(pre=[0.5, 0.75], post=[0.75, 0.75])}, -0.125, "FAIL", id="minus-below"),
    pytest.param(CONVERGED, {"liu_fig10": grid("converged", "converged")}, 1, "PASS", id="equals-all"),
    pytest.param(CONVERGED, {"liu_fig10": grid("converged", "not converged", "diverged", "converged")}, 0.5,
                 "FAIL", id="equals-some"),
    pytest.param(BEATS, {"liu_fig10": cells(post=[35, 35, 34], pre=[34, 34, 35, 33])}, 2 / 3, "FAIL",
                 id="share_positive-paired-on-two-columns"),
    pytest.param(BEATS, {"liu_fig10": cells(post=[35, 35, 36], pre=[34, 34, 35, 33])}, 1, "PASS",
                 id="share_positive-post-beats-pre-where-it-converged"),
    pytest.param(MONOTONE, {"liu_fig10": statuses("converged", "converged", "diverged", "converged")}, 1, "PASS",
                 id="monotone-fails-only-in-the-harsh-corner"),
    pytest.param(MONOTONE, {"liu_fig10": statuses("converged", "diverged", "converged", "converged")}, 0.4, "FAIL",
                 id="monotone-a-mild-cell-fails-where-harsher-ones-train"),  # 2 of its 5 ordered pairs hold
    pytest.param(THEOREM1, {"theory": theory(-0.5)}, -0.5, "PASS", id="theory-value"),
    pytest.param(THEOREM1, {"theory": theory(-0.25)}, -0.25, "FAIL", id="theory-value-outside"),
    pytest.param(THEOREM1, {"theory": theory(NAN)}, NAN, "FAIL", id="theory-value-nan"),
]


@pytest.mark.parametrize("spec, inputs, ours, result", CASES)
def test_each_kind_passes_and_fails_on_the_papers_range(tmp_path, spec, inputs, ours, result):
    write_runs(tmp_path, inputs.get("runs", {}))
    tables = {name: table for name, table in inputs.items() if name != "runs"}
    row = claims.evaluate({"c": {"paper": "p", **spec}}, laid_out(tmp_path), tables).iloc[0]
    assert row.ours == pytest.approx(ours, nan_ok=True)
    assert row.paper_result == row.scaled_result == result  # no scale: the paper's range at both


def test_an_outcome_reads_a_bert_runs_pretraining_status(tmp_path):
    """bert_postln_diverges_at_3e-4: a BERT run's status comes from its pre-training metrics.csv, given as its
    --metrics (the workflow gives results/pretrain/RUN/metrics.csv)."""
    write_runs(tmp_path, {"bert_3e-4": DIVERGED, "bert_1e-4": TRAINED})
    (tmp_path / "pretrain").mkdir()
    for run in ("bert_3e-4", "bert_1e-4"):
        (tmp_path / "train" / run).rename(tmp_path / "pretrain" / run)
    spec = {"kind": "outcome", "a": "bert_3e-4", "b": "bert_1e-4", "min": 1}
    row = claims.evaluate({"c": {"paper": "p", **spec}}, laid_out(tmp_path), {}).iloc[0]
    assert row.ours == 1 and row.paper_result == "PASS"
    assert "bert_3e-4 diverged" in row.detail and "bert_1e-4 converged" in row.detail


def unreachable(spec):
    """A paper range no number can meet: empty."""
    return {**spec, "min": 1, "max": 0}


@pytest.mark.parametrize("spec, inputs, ours, result", CASES)
def test_each_kind_passes_and_fails_on_a_scaled_range(tmp_path, spec, inputs, ours, result):
    """The same inputs judged on the case's range given as a scale: the scaled verdict is the case's, the
    paper verdict (an unreachable paper range) FAILS whatever the scaled one says."""
    write_runs(tmp_path, inputs.get("runs", {}))
    tables = {name: table for name, table in inputs.items() if name != "runs"}
    scale = {"scaled": "a smaller model", "min": spec.get("min"), "max": spec.get("max")}
    row = claims.evaluate({"c": {"paper": "p", **unreachable(spec), "scale": scale}}, laid_out(tmp_path), tables).iloc[0]
    assert row.scaled_ours == pytest.approx(ours, nan_ok=True)
    assert (row.paper_result, row.scaled_result) == ("FAIL", result)


def test_every_kind_and_statistic_has_a_pass_and_a_fail_case():
    seen = {}
    for case in CASES:
        spec, result = case.values[0], case.values[3]
        key = (spec["kind"], spec.get("statistic"), spec.get("abs"), spec.get("at"), "minus" in spec, "equals" in spec,
               spec.get("target"))
        seen.setdefault(key, set()).add(result)
    kinds = {key[0] for key in seen} | {key[1] for key in seen if key[1]}
    assert kinds == set(claims.KINDS) | {"value", "mean", "min", "max", "last_over_first", "max_over_min",
                                         "fit_exponent", "cv", "share_positive", "monotone"}
    assert {key[4] for key in seen} == {key[5] for key in seen} == {True, False}
    assert all(results == {"PASS", "FAIL"} for results in seen.values()), seen


@pytest.mark.parametrize("lo, hi, text", [(-0.6, -0.4, "in [-0.6, -0.4]"), (15, None, ">= 15"),
                                          (None, 0.9, "<= 0.9"), (None, None, "none")])
def test_range_text(lo, hi, text):
    assert claims.range_text(lo, hi, "none") == text


@pytest.mark.parametrize("spec, runs, tables, why", [
    pytest.param({**SOONER, "target": 15}, {"pre": loss(5, 4), "post": POST}, {}, "post has no valid_loss at epoch 15 (its last: 5)",
                 id="sooner-at-an-epoch-b-does-not-reach"),
    pytest.param({**LEVEL, "at": 27}, {"warm": bleu(30, 34)}, {}, "warm has no bleu at epoch 27 (its last: 2)",
                 id="level-at-an-epoch-the-run-does-not-reach"),
    pytest.param({**stat("mean"), "select": {"panel": "admin"}}, {}, {"fig3": fig3(p=[1])},
                 "no rows of fig3 match select {'panel': 'admin'}", id="table-rows-this-config-lacks"),
])
def test_what_this_config_cannot_measure_says_so_and_never_passes(tmp_path, spec, runs, tables, why):
    write_runs(tmp_path, runs)
    row = claims.evaluate({"c": {"paper": "p", **spec}}, laid_out(tmp_path), tables).iloc[0]
    assert (row.paper_result, row.detail) == ("NOT MEASURED", why) and math.isnan(row.ours)


def test_a_claim_on_runs_this_config_lacks_is_a_row_that_says_so(tmp_path):
    write_runs(tmp_path, {"warm": bleu(20, 33), "nowarm": bleu(4, 8)})
    spec = {"paper": "p", **GAP, "a": "big_warm", "paper_missing": "this config has no run big_warm",
            "scale": {"scaled": "the demo's runs", "a": "warm"}}
    row = claims.evaluate({"c": spec}, laid_out(tmp_path), {}).iloc[0]
    assert (row.paper_result, row.detail) == ("NOT CONFIGURED", "this config has no run big_warm")
    assert (row.scaled_result, row.scaled_ours) == ("PASS", 25)


def test_a_level_not_at_this_scale_has_only_the_paper_verdict(tmp_path):
    write_runs(tmp_path, {"warm": bleu(8, 9)})
    spec = {"paper": "p", **LEVEL, "scale": {"not_at_this_scale": "BLEU ~34 needs d=512"}}
    row = claims.evaluate({"c": spec}, laid_out(tmp_path), {}).iloc[0]
    assert (row.paper_result, row.ours, row.scaled_result) == ("FAIL", 9, "not at this scale")
    assert row.scaled == "BLEU ~34 needs d=512"


def test_minus_without_covers_needs_every_row_paired():
    spec = {"paper": "p", **BEATS}
    del spec["minus_covers"]
    with pytest.raises(SystemExit, match="claims.c: minus: the rows are not paired one to one"):
        claims.evaluate({"c": spec}, RunFiles("claims"), {"liu_fig10": cells(post=[35, 35, 36], pre=[34, 34, 35, 33])})


def test_curves_that_do_not_pair_up_name_the_claim():
    with pytest.raises(SystemExit, match="claims.unpaired: minus: the rows are not paired"):
        claims.evaluate({"unpaired": {"paper": "p", **MINUS}}, RunFiles("claims"), {"fig3": fig3(pre=[1, 2, 3], post=[1, 2])})


def test_a_selection_on_a_column_the_table_lacks_names_the_claim():
    spec = {"paper": "p", **stat("mean"), "select": {"norm": "admin"}}
    with pytest.raises(SystemExit, match="claims.broken: 'norm'"):
        claims.evaluate({"broken": spec}, RunFiles("claims"), {"fig3": fig3(p=[1])})


def run_command(tmp_path, spec, capped=False):
    """`lnrepro claims` on fabricated runs; the CSV and the markdown it writes."""
    write_runs(tmp_path, {"warm": bleu(20, 33), "nowarm": bleu(4, 8)})
    (tmp_path / "fig3.csv").write_text(fig3(p=[1, 2, 3]).to_csv(index=False))
    check_claims.run(Namespace(spec=json.dumps(spec), metrics=metrics_pairs(tmp_path), bleu=bleu_pairs(tmp_path),
                               tables=[f"fig3={tmp_path / 'fig3.csv'}"],
                         title="T", csv=str(tmp_path / "c.csv"), md=str(tmp_path / "c.md"), capped=capped,
                         matrix_csv=None, provenance_csv=str(tmp_path / "provenance.csv")))
    return pd.read_csv(tmp_path / "c.csv", keep_default_na=False), Path(tmp_path / "c.md").read_text()


WARMUP = {"paper": "warm-up | essential", "paper_value": 25.5, "figure": "fig2", "place": "Xiong §3.2, Fig 2",
          **GAP, "min": 30}
GROWS = {"paper": "grows", "figure": "fig3", "place": "Xiong §3.4, Fig 3", **stat("last_over_first", min=2)}


def test_command_writes_both_verdicts_grouped_by_figure(tmp_path):
    scaled = {**WARMUP, "min": 15, "scale": {"scaled": "d=64 models: the gap is smaller", "min": 5,
                                              "seed_spread": "25 / 24 / 26, sd 1"}}
    table, md = run_command(tmp_path, {"z_first": WARMUP, "a_second": GROWS, "y_scaled": scaled})
    assert list(table.columns) == claims.COLUMNS + ["capped"]
    assert list(table.claim) == ["y_scaled", "z_first", "a_second"]  # fig2 before fig3, then by name
    assert list(table.paper_result) == ["PASS", "FAIL", "PASS"]
    assert list(table.paper_range) == [">= 15", ">= 30", ">= 2"]
    assert list(table.scaled_range) == [">= 5", ">= 30", ">= 2"]
    assert list(table.scaled) == ["d=64 models: the gap is smaller", "", ""]
    assert "**2 of 3 claims reproduced as the paper states**" in md
    assert "**At this config's scale: 2 of 3 claims pass**, 1 of them on a scaled range" in md
    assert "warm-up \\| essential" in md and "**FAIL**" in md
    assert "| " + " | ".join(claims.HEADERS) + " |" in md
    assert ("| y_scaled | Xiong §3.2, Fig 2 | warm-up \\| essential | 25.5 | >= 15 | 25 | **PASS** | >= 5 | 25 | **PASS** | "
            "d=64 models: the gap is smaller (seed spread 25 / 24 / 26, sd 1) |") in md
    # led by one short line per claim, by figure; the full table after (12 columns, ~460 characters a row)
    summary = md[md.index("## By figure"):md.index(claims.TABLE_HEADING)].splitlines()
    assert summary == ["## By figure", "", "### Xiong §3.2, Fig 2", "",
                       "- y_scaled: ours 25 (paper 25.5, range >= 15): PASS; scaled >= 5: ours 25: PASS",
                       "- z_first: ours 25 (paper 25.5, range >= 30): FAIL", "", "### Xiong §3.4, Fig 3", "",
                       "- a_second: ours 3 (range >= 2): PASS", ""]
    assert md.index("| " + " | ".join(claims.HEADERS) + " |") > md.index(claims.TABLE_HEADING)


def test_a_pass_where_the_config_says_its_scale_cannot_compare_is_not_counted(tmp_path):
    """A level of another scale that lands in the paper's range is a coincidence: shown, not counted."""
    coincidence = {**GROWS, "scale": {"not_at_this_scale": "another scale of BLEU"}}
    table, md = run_command(tmp_path, {"a_second": GROWS, "b_level": coincidence})
    assert list(table.paper_result) == ["PASS", "PASS"]
    assert list(table.scaled_result) == ["PASS", claims.NOT_AT_THIS_SCALE]
    assert "**1 of 2 claims reproduced as the paper states** (each on the paper's range; 1 more land in it" in md
    assert "coincidences, not counted" in md
    lines = verdicts.doc_table(table).splitlines()
    assert lines[1].startswith("Of 2 claims, the demo reproduces 1 as the paper states (the paper's range; 1 more")


def test_a_capped_build_says_its_verdicts_are_no_results(tmp_path):
    table, md = run_command(tmp_path, {"z_first": WARMUP}, capped=True)
    assert md.splitlines()[2] == claims.CAPPED and list(table.capped) == [True]


def test_a_table_of_paper_ranges_says_so(tmp_path):
    _, md = run_command(tmp_path, {"z_first": WARMUP})
    assert "**0 of 1 claims reproduced as the paper states**" in md
    assert "Every claim is checked at the paper's range: this config has no scaled verdicts." in md


# ---- config/claims.yaml and the configs' scales -----------------------------------------------------
PAPER_CLAIMS = yaml.safe_load((ROOT / "config" / "claims.yaml").read_text())
DEMO = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())["claims"]


def test_the_paper_config_scales_no_claim():
    assert "claims" not in yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


@pytest.mark.parametrize("name", sorted(DEMO))
def test_a_demo_scale_names_a_paper_claim_and_changes_something_or_says_why_not(name):
    assert name in PAPER_CLAIMS["claims"]
    scale = DEMO[name]
    changes = set(scale) - {"scaled", "seed_spread", "note", "not_at_this_scale"}
    assert bool(changes) == ("scaled" in scale)
    assert not ("not_at_this_scale" in scale and changes)


def test_every_level_is_not_at_the_demos_scale():
    """A level (the paper's own BLEU or loss) cannot be compared to at d=64: no scaled verdict."""
    levels = [n for n, c in PAPER_CLAIMS["claims"].items() if c["kind"] == "level" or n.startswith("level_")]
    assert len(levels) >= 17
    assert all("not_at_this_scale" in DEMO.get(n, {}) for n in levels)


def test_identities_of_layer_norm_are_no_claims():
    """Lemma 3 holds for any input of F.layer_norm: a theory sanity check, not a claim on our code."""
    claims_ = list(PAPER_CLAIMS["claims"].values()) + list(DEMO.values())
    assert not [s for s in claims_ if (s.get("select") or {}).get("check") == "lemma3"]


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["claims"]["warmup_essential_adam_5e-4"].pop("scaled"),
     "claims.warmup_essential_adam_5e-4: min differ from config/claims.yaml's claim; say why in `scaled`"),
    (lambda c: c["claims"].update(warmup_esential_sgd={"note": "x"}),
     "claims.warmup_esential_sgd: not a claim of config/claims.yaml (did you mean 'warmup_essential_sgd'?)"),
    (lambda c: c["claims"]["level_preln_bleu"].update(min=1),
     "claims.level_preln_bleu: not_at_this_scale gives no scaled verdict"),
])
def test_a_scale_without_a_reason_or_of_no_claim_is_a_config_error(edit, message):
    cfg = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    edit(cfg)
    assert message in refusal_before_any_job(cfg)


def test_the_demo_docs_verdict_table_is_the_committed_verdicts():
    """docs/demo.md "What the demo does not reproduce" is written by `lnrepro verdicts --doc` from the
    demo's claims.csv; its claims are those tests/demo_verdicts.csv says FAIL at the demo's scale."""
    doc = (ROOT / "docs" / "demo.md").read_text()
    section = doc.split(verdicts.BEGIN)[1].split(verdicts.END)[0]
    committed = pd.read_csv(ROOT / "tests" / "demo_verdicts.csv", keep_default_na=False)
    failed = sorted(committed.claim[committed.scaled_result == "FAIL"])
    assert sorted(re.findall(r"^\| `([^`]+)` \|", section, flags=re.M)) == failed
    assert f"These {len(failed)} FAIL at its scale" in section
    for claim, note in zip(committed.claim, committed.note):
        if claim in failed:
            assert note and note in section, claim


def test_a_slow_but_converged_run_fails_the_status_claim_that_its_loss_gap_passes(tmp_path):
    """Issue 40's case: a deep Post-LN 0.55 bits behind Admin but under converged_below has not diverged.
    The outcome claim says so where the informative loss gap still passes."""
    write_runs(tmp_path, {"post": SLOW, "admin": TRAINED})
    table = claims.evaluate({"diverges": {"paper": "p", **OUTCOME}, "diverges_loss_gap": {"paper": "p", **GAP_LOSS,
                             "a": "post", "b": "admin"}}, laid_out(tmp_path), {}).set_index("claim")
    assert table.loc["diverges", "paper_result"] == "FAIL"
    assert table.loc["diverges_loss_gap", "paper_result"] == "PASS"
    assert "post converged (final valid loss 6.85 bits < converged_below 7; must have failed)" in \
        table.loc["diverges", "detail"]
