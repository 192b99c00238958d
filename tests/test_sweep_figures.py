"""The lab's figures from a phase diagram's cells (issue 45 (b) and (d)): the minimum warm-up or the
critical lr that trains against depth (lnrepro sweep-thresholds), the mean excess loss over an lr grid
(lnrepro sweep-lr-sensitivity); and sweeps sharing the cells they both train."""
import copy
import json
import math

import pandas as pd
import pytest
import yaml

from lnrepro.analyses.sweep_sensitivity import sensitivity_rows
from lnrepro.analyses.sweep_thresholds import threshold_rows
from lnrepro.args import RunFiles
from lnrepro.cli import main
from test_sweeps import DEMO, LAB, expanded, refusal, with_sweep
from workflow_helpers import snakemake, workflow_copy


def cells(x, failed, losses=None):
    """Phase cells of one scheme: {depth: [failed seeds per x value]} over the x grid."""
    grid = sorted({v for row in failed.values() for v in row})
    rows = []
    for depth, by_value in failed.items():
        for value in grid:
            loss = (losses or {}).get((depth, value), 6.0)
            rows.append({"norm": "post", "layers": depth, x: value, "seeds": 2, "failed": by_value[value],
                         "mean_final_valid_loss": loss})
    return pd.DataFrame(rows)


def test_the_minimum_warmup_is_the_smallest_that_trains_and_says_what_bound_it_is():
    table = cells("warmup", {6: {0: 1, 146: 0, 290: 0}, 12: {0: 0, 146: 0, 290: 0}, 18: {0: 2, 146: 2, 290: 2},
                             24: {0: 2, 146: 0, 290: 1}})
    rows = threshold_rows(table, "norm", "layers", "warmup").set_index("layers")
    assert rows.loc[6, ["threshold", "bound", "contiguous"]].tolist() == [146, "edge", True]
    assert rows.loc[12, ["threshold", "bound"]].tolist() == [0, "grid end"]  # trains without warm-up: the grid ends there
    assert math.isnan(rows.loc[18, "threshold"]) and rows.loc[18, "bound"] == "none trains"
    assert rows.loc[24, ["threshold", "contiguous", "trained", "failed_values"]].tolist() == [146, False, "146", "0 290"]


def test_the_critical_lr_is_the_largest_that_trains():
    table = cells("lr", {6: {1e-3: 0, 2e-3: 0, 4e-3: 2}, 18: {1e-3: 0, 2e-3: 0, 4e-3: 0}, 24: {1e-3: 1, 2e-3: 2, 4e-3: 2}})
    rows = threshold_rows(table, "norm", "layers", "lr").set_index("layers")
    assert rows.loc[6, ["threshold", "bound"]].tolist() == [2e-3, "edge"]
    assert rows.loc[18, ["threshold", "bound"]].tolist() == [4e-3, "grid end"]  # every lr trains: a lower bound
    assert rows.loc[24, "bound"] == "none trains"


def test_lr_sensitivity_is_the_mean_excess_over_the_schemes_best_lr():
    losses = {(6, 1e-3): 6.0, (6, 2e-3): 5.5, (6, 4e-3): 7.0, (18, 1e-3): math.nan, (18, 2e-3): 7.6, (18, 4e-3): 7.7}
    table = cells("lr", {6: {1e-3: 0, 2e-3: 0, 4e-3: 2}, 18: {1e-3: 2, 2e-3: 2, 4e-3: 2}}, losses)
    rows = sensitivity_rows(table, "norm", "layers").set_index("layers")
    assert rows.loc[6, "mean_excess_loss"] == pytest.approx((0.5 + 0 + 1.5) / 3)
    assert rows.loc[6, ["max_excess_loss", "best_lr", "best_loss", "failed_cells"]].tolist() == [1.5, 2e-3, 5.5, 1]
    # a cell without a loss (diverged before an epoch ended) is counted beside the mean, not in it
    assert rows.loc[18, "mean_excess_loss"] == pytest.approx(0.05) and rows.loc[18, ["lrs", "lrs_without_loss"]].tolist() == [2, 1]


@pytest.mark.parametrize("command, x, column", [("sweep-thresholds", "lr", "threshold"),
                                                ("sweep-lr-sensitivity", "lr", "mean_excess_loss")])
def test_the_commands_draw_the_figure_and_its_table_from_the_cells(tmp_path, command, x, column):
    path = tmp_path / "cells.csv"
    cells(x, {6: {1e-3: 0, 2e-3: 1}, 18: {1e-3: 2, 2e-3: 2}}, {(6, 1e-3): 6.0, (6, 2e-3): 6.5}).to_csv(path, index=False)
    spec = json.dumps({"title": "t", "facet": "norm", "y": "layers", "x": x})
    out = tmp_path / "out"
    assert main([command, "--cells", str(path), "--spec", spec, "--pdf", str(out / "f.pdf"), "--csv", str(out / "f.csv")]) == 0
    assert (out / "f.pdf").stat().st_size > 0 and (out / "f.png").stat().st_size > 0
    assert len(pd.read_csv(out / "f.csv")[column]) == 2
    with pytest.raises(SystemExit, match="no column depth"):
        main([command, "--cells", str(path), "--spec", spec.replace('"layers"', '"depth"'), "--pdf", str(out / "g.pdf"),
              "--csv", str(out / "g.csv")])


def test_a_figure_needs_the_axis_it_reads_before_any_job():
    p = expanded(with_sweep())  # x: warm-up
    assert json.loads(p.sweeps.sweep_thresholds_spec(type("W", (), {"sweep": "lab"})()))["x"] == "warmup"
    message = refusal(lambda: p.sweeps.sweep_lr_sensitivity_spec(type("W", (), {"sweep": "lab"})()))
    assert "config: sweeps.lab: its lr-sensitivity figure reads the phase diagram's cells along lr; its x axis is 'warmup'" in message


def test_a_cell_a_run_or_an_earlier_sweep_trains_is_that_run():
    """The demo's lab_lr at lr 1e-3 is lab at warm-up 146; lab_fn's LayerNorm is lab's Pre-LN (norm_fn
    layernorm is the trainer's default): those cells train once."""
    p = expanded(copy.deepcopy(DEMO))
    lr_cells = dict(((values["norm"], values["layers"], values["lr"], seed), run) for run, values, seed in p.sweeps.sweep_cells("lab_lr"))
    assert lr_cells[("post", 18, 1e-3, 2)] == "lab_post_18L_warmup146_s2"
    assert lr_cells[("post", 18, 2e-3, 2)] == "lab_lr_post_18L_lr2e-3_s2" and "lab_lr_post_18L_lr1e-3_s2" not in p.config["runs"]
    fn_runs = [run for run, values, _ in p.sweeps.sweep_cells("lab_fn") if values["norm_fn"] == "layernorm"]
    assert fn_runs[0] == "lab_pre_6L_warmup0_s1" and all(r.startswith("lab_pre_") for r in fn_runs)
    assert len(set(p.sweeps.sweep_runs("lab")) | set(p.sweeps.sweep_runs("lab_fn")) | set(p.sweeps.sweep_runs("lab_lr"))) == 48 + 16 + 48
    # a run of runs: that trains as a cell is that cell's run
    mine = with_sweep()
    mine["runs"]["mine"] = {**LAB["template"], "norm": "post", "enc_layers": 6, "dec_layers": 6, "warmup": 146, "seed": 2}
    cells = {run for run, _, _ in expanded(mine).sweeps.sweep_cells("lab")}
    assert "mine" in cells and "lab_post_6L_warmup146_s2" not in cells and len(cells) == 16
    # one setting apart (the seed, a warm-up) is another run
    other = with_sweep()
    other["sweeps"]["again"] = {**copy.deepcopy(LAB), "template": {**LAB["template"], "lr": 1.1e-3}}
    assert not any(run.startswith("lab_") for run, _, _ in expanded(other).sweeps.sweep_cells("again"))


@pytest.mark.medium
def test_the_lab_figures_plan_from_the_phase_cells(tmp_path):
    workflow_copy(tmp_path)
    sweep = {**LAB, "axes": {"norm": ["pre", "tfixup"], "layers": [2, 4], "lr": [1e-3, 2e-3]}, "seeds": [1]}
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(with_sweep(sweep), sort_keys=False))
    plan = snakemake(tmp_path, "results/figures/lab_thresholds.pdf", "results/figures/lab_sensitivity.pdf", "-n", "-p",
                     "--configfile", "lab.yaml").stdout
    assert plan.count("exec lnrepro train") == 8
    assert "lnrepro sweep-thresholds --cells results/figures/lab_phase.csv" in plan
    assert "lnrepro sweep-lr-sensitivity --cells results/figures/lab_phase.csv" in plan and '"x": "lr"' in plan


# ---- the lab's claims matrix: each claim measured for every scheme of its table ----
def test_the_claims_matrix_measures_each_claim_for_every_scheme_and_marks_its_own():
    from lnrepro.analyses.claims_matrix import markdown, matrix
    from test_sweeps import lab_table
    lab = expanded(copy.deepcopy(DEMO)).claims.measured_claims(lab=True)
    tables = {"lab": lab_table({"post": lambda d, w: 6.8 if d == 6 else 7.7, "pre": lambda d, w: 6.4,
                                "deepnorm": lambda d, w: 6.5 if d == 6 else 7.2, "tfixup": lambda d, w: 6.0,
                                "sandwich": lambda d, w: 6.6, "resi_dual": lambda d, w: 6.2}),
              "lab_fn": lab_table({"layernorm": lambda d, w: 6.40, "rmsnorm": lambda d, w: 6.45, "dyt": lambda d, w: 6.9},
                                  key="norm_fn")}
    grid = matrix(lab, RunFiles("claims"), tables).set_index(["claim", "scheme"])
    deep = grid.loc["lab_deepnorm_trains_deep"]
    assert deep.ours.to_dict() == {"post": 0.0, "pre": 1.0, "deepnorm": 0.0, "sandwich": 1.0, "tfixup": 1.0, "resi_dual": 1.0}
    assert deep.own.to_dict()["deepnorm"] and deep.own.sum() == 1 and deep.loc["pre", "result"] == "PASS"
    resi = grid.loc["lab_resi_dual_beats_preln_deep"]
    assert resi.loc["pre", "reference"] and resi.loc["pre", "detail"] == "the claim's reference"
    assert resi.loc["resi_dual", "ours"] == pytest.approx(-0.2) and resi.loc["tfixup", "ours"] == pytest.approx(-0.4)
    assert resi.loc["post", "ours"] == pytest.approx(1.3) and resi.loc["post", "result"] == "FAIL"
    fn = grid.loc["lab_fn_dyt_matches_layernorm"]
    assert list(fn.index) == ["layernorm", "rmsnorm", "dyt"] and fn.loc["layernorm", "reference"]
    md = markdown(matrix(lab, RunFiles("claims"), tables))
    assert "| claim (norm) | range | post | pre | deepnorm | tfixup | sandwich | resi_dual |" in md  # the table's order
    assert "| lab_deepnorm_trains_deep | >= 1 | 0 ✗ | 1 ✓ | **0 ✗** | 1 ✓ | 1 ✓ | 1 ✓ |" in md
    assert "| lab_resi_dual_beats_preln_deep | <= 0 | 1.3 ✗ | (reference) | 0.8 ✗ | -0.4 ✓ | 0.2 ✗ | **-0.2 ✓** |" in md
    assert "| claim (norm_fn) | range | layernorm | rmsnorm | dyt |" in md


def test_a_phase_cell_shows_the_seeds_mean_and_spread(tmp_path):
    from lnrepro.analyses.sweep_phase import draw, phase_cells
    table = pd.DataFrame({"run": list("abc"), "norm": ["pre"] * 3, "layers": [6, 6, 18], "warmup": [0] * 3,
                          "seed": [1, 2, 1], "status": ["converged"] * 3, "final_valid_loss": [6.4, 6.6, 6.0]})
    fig = draw(phase_cells(table, "norm", "layers", "warmup"), "norm", "layers", "warmup", "t", tmp_path / "p.pdf")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "6.50 ± 0.14\n0/2 failed" in texts and "6.00\n0/1 failed" in texts  # one seed: no spread to show
