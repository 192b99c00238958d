"""Sweeps (config `sweeps:`, issue 45): a run template x axes x seeds expands into named runs before any
check reads `runs:`, each cell a run with its own training job; a bad axis value is named at its place;
results/sweeps/NAME.csv holds every cell's status and loss, read from the files its rule declares."""
import contextlib
import copy
import io
import json

import pandas as pd
import pytest
import yaml

from lnrepro.analyses.sweep_phase import failed_words, phase_cells
from lnrepro.analyses.sweep_table import sweep_table
from lnrepro.cli import main
from workflow_helpers import ROOT, pipeline_of, refusal_before_any_job, snakemake, workflow_copy

DEMO = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
LAB = {"template": {"model": "liu_demo", "optimizer": "radam", "schedule": "inverse_sqrt", "lr": 1.0e-3, "epochs": 3},
       "axes": {"norm": ["post", "deepnorm"], "layers": [6, 18], "warmup": [0, 146]}, "seeds": [1, 2]}


def with_sweep(sweep=LAB, name="lab"):
    config = copy.deepcopy(DEMO)
    config["sweeps"] = {name: copy.deepcopy(sweep)}
    return config


def refusal(check):
    """What a check prints before it stops the workflow (exit status 1)."""
    printed = io.StringIO()
    with contextlib.redirect_stderr(printed), pytest.raises(SystemExit):
        check()
    return printed.getvalue()


def expanded(config):
    p = pipeline_of(config)
    p.validate()
    return p


def test_a_sweep_expands_into_named_runs_each_with_its_cells_settings():
    p = expanded(with_sweep())
    cells = p.sweeps.sweep_cells("lab")
    assert len(cells) == 2 * 2 * 2 * 2
    assert [run for run, _, _ in cells[:3]] == ["lab_post_6L_warmup0_s1", "lab_post_6L_warmup0_s2", "lab_post_6L_warmup146_s1"]
    assert cells[-1] == ("lab_deepnorm_18L_warmup146_s2", {"norm": "deepnorm", "layers": 18, "warmup": 146}, 2)
    s = p.runs.run_settings("lab_deepnorm_18L_warmup146_s2")
    assert (s["enc_norm"], s["dec_norm"], s["enc_layers"], s["dec_layers"], s["warmup"], s["seed"]) == \
        ("deepnorm", "deepnorm", 18, 18, 146, 2)
    assert (s["optimizer"], s["lr"], s["d_model"], s["epochs"]) == ("radam", 1e-3, 64, 3)  # template, model, run
    assert set(DEMO["runs"]) < set(p.config["runs"])  # the config's own runs stay as they are
    for run, _, _ in cells:
        assert "--seed" in p.train.train_flags(type("W", (), {"run": run})())


def test_axis_words_name_lrs_and_hybrids_readably():
    sweep = {**LAB, "axes": {"enc_norm": ["resi_dual"], "lr": [1.0e-3, 2.5e-4], "adam_beta2": [0.99]}, "seeds": [3]}
    runs = [run for run, _, _ in expanded(with_sweep(sweep, "g")).sweeps.sweep_cells("g")]
    assert runs == ["g_encresi_dual_lr1e-3_adam_beta20.99_s3", "g_encresi_dual_lr2.5e-4_adam_beta20.99_s3"]


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["axes"].update(norm=["post", "pree"]),
     "config: sweeps.lab.axes.norm[1]: 'pree' is not one of post, pre, admin, fixup, deepnorm, sandwich, tfixup, "
     "resi_dual (did you mean 'pre'?)"),
    (lambda s: s["axes"].update(lrr=[1.0]), "config: sweeps.lab.axes.lrr[0]: unknown key 'lrr' (did you mean 'lr'?)"),
    (lambda s: s["axes"].update(lr=["2e-3"]), "sweeps.lab.axes.lr[0]: '2e-3' is not of type number: YAML reads 2e-3 as text"),
    (lambda s: s["template"].update(seed=3), "config: sweeps.lab: a sweep's seeds are its `seeds:`"),
    (lambda s: s["template"].update(enc_layers=4), "config: sweeps.lab.axes.layers: sets enc_layers and dec_layers"),
    (lambda s: s["axes"].update(warmup=[0, 0]), "config: sweeps.lab.axes.warmup: a value given twice"),
    (lambda s: s["axes"].update(lr=[1e-4 * i for i in range(1, 201)], warmup=list(range(10))),
     "config: sweeps.lab: 16,000 runs (axes x seeds), over the 5,000"),
    (lambda s: s.pop("seeds"), "config: sweeps.lab: missing required key 'seeds'"),
    # config text is untrusted: a free-text axis would put its words into a path and a command
    (lambda s: s["axes"].update(description=["a b; rm -rf ~"]), "config: sweeps.lab: its cell's name 'lab_post_6L_warmup0_"
                                                                  "descriptiona b; rm -rf ~_s1' is not a usable run name"),
])
def test_a_bad_sweep_is_one_line_at_its_place(edit, message):
    sweep = copy.deepcopy(LAB)
    edit(sweep)
    assert message in refusal_before_any_job(with_sweep(sweep))


def test_a_cell_is_checked_as_any_run():
    sweep = {**LAB, "template": {**LAB["template"], "norm_fn": "rmsnorm"}, "axes": {"norm": ["pre", "admin"]}}
    assert "config: runs.lab_admin_s1.norm_fn: norm_fn='rmsnorm' with Admin" in refusal_before_any_job(with_sweep(sweep))


def test_a_cell_named_as_a_run_is_refused():
    config = with_sweep()
    config["runs"]["lab_post_6L_warmup0_s1"] = {"lr": 1.0e-3}
    assert refusal_before_any_job(config).startswith(
        "config: sweeps.lab: its cell lab_post_6L_warmup0_s1 is named as a run of runs:")


def metrics(rows):
    base = {"updates": 10, "train_loss": 5.0, "capped": 0}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_the_table_judges_each_cell_as_liu_et_al_s_tables_do(tmp_path):
    files = {}
    for run, rows in {"g_a_s1": [{"epoch": 1, "valid_loss": 7.0, "diverged": 0}, {"epoch": 2, "valid_loss": 6.0, "diverged": 0}],
                      "g_b_s1": [{"epoch": 1, "valid_loss": 7.9, "diverged": 0}, {"epoch": 2, "valid_loss": 7.5, "diverged": 0}],
                      "g_c_s1": [{"epoch": 1, "valid_loss": 7.0, "diverged": 0, "checkpoint": "checkpoints/epoch1.pt"},
                                 {"epoch": 2, "updates": 15, "valid_loss": float("nan"), "diverged": 1}]}.items():
        files[run] = tmp_path / f"{run}.csv"
        metrics(rows).to_csv(files[run], index=False)
    spec = {"sweep": "g", "axes": ["norm"], "converged_below": 7.0,
            "cells": [["g_a_s1", {"norm": "pre"}, 1], ["g_b_s1", {"norm": "post"}, 1], ["g_c_s1", {"norm": "sandwich"}, 1]]}
    table = sweep_table(spec, files).set_index("run")
    assert list(table.columns[:2]) == ["sweep", "norm"]
    assert list(table.status) == ["converged", "not converged", "diverged"]
    assert table.loc["g_a_s1", "final_valid_loss"] == 6.0 and table.loc["g_b_s1", "best_valid_loss"] == 7.5
    assert table.loc["g_c_s1", "final_valid_loss"] == 7.0 and "diverged" in table.loc["g_c_s1", "why"]
    with pytest.raises(SystemExit, match="sweep g: no metrics given for g_c_s1"):
        sweep_table(spec, {k: v for k, v in files.items() if k != "g_c_s1"})
    # the command, as the rule runs it: RUN=PATH pairs
    out = tmp_path / "g.csv"
    pairs = [f"{run}={path}" for run, path in files.items()]
    assert main(["sweep-table", "--spec", json.dumps(spec), "--metrics", *pairs, "--csv", str(out)]) == 0
    assert pd.read_csv(out).status.tolist() == ["converged", "not converged", "diverged"]


@pytest.mark.medium
def test_the_phase_diagram_plans_the_table_one_training_per_cell_and_nothing_else(tmp_path):
    workflow_copy(tmp_path)
    sweep = {**LAB, "axes": {"norm": ["pre", "sandwich", "tfixup"], "layers": [2]}, "seeds": [1]}
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(with_sweep(sweep), sort_keys=False))  # the axes' order names
    plan = snakemake(tmp_path, "results/figures/lab_phase.pdf", "-n", "-p", "--configfile", "lab.yaml").stdout
    trains = sorted(line for line in plan.splitlines() if "exec lnrepro train" in line)
    assert len(trains) == 3 and all("--enc-layers 2" in t and "--dec-layers 2" in t for t in trains)
    assert [t.split("--out results/train/")[1].split()[0] for t in trains] == ["lab_pre_2L_s1", "lab_sandwich_2L_s1",
                                                                              "lab_tfixup_2L_s1"]
    assert "lnrepro sweep-table" in plan and "lab_tfixup_2L_s1=results/train/lab_tfixup_2L_s1/metrics.csv" in plan
    assert "lnrepro sweep-phase --table results/sweeps/lab.csv" in plan and '"facet": null' in plan  # two axes
    assert "rule plot_figure" not in plan and "rule check_claims" not in plan
    claims = snakemake(tmp_path, "results/lab_claims.md", "-n", "-p", "--configfile", "lab.yaml").stdout
    assert "--tables lab=results/sweeps/lab.csv" in claims and "rule check_lab_claims" in claims
    assert "--matrix-csv results/lab_claims_matrix.csv" in claims  # the claims matrix beside the verdicts
    assert "exec lnrepro train" in claims and "rule check_claims:" not in claims  # the papers' claims table is not planned


def test_a_phase_cell_counts_its_failed_seeds_and_averages_their_losses():
    table = pd.DataFrame({"run": list("abcdef"), "norm": ["post"] * 4 + ["pre"] * 2, "layers": [6, 6, 18, 18, 18, 18],
                          "warmup": [0] * 6, "seed": [1, 2] * 3,
                          "status": ["converged", "converged", "diverged", "not converged", "converged", "converged"],
                          "final_valid_loss": [5.0, 6.0, 7.0, 7.6, 5.5, 5.7]})
    cells = phase_cells(table, "norm", "layers", "warmup").set_index(["norm", "layers"])
    assert cells.loc[("post", 18), ["seeds", "failed", "diverged", "failed_share"]].tolist() == [2, 2, 1, 1.0]
    assert cells.loc[("post", 18), "mean_final_valid_loss"] == pytest.approx(7.3)
    assert cells.loc[("post", 6), "failed_share"] == 0 and cells.loc[("post", 6), "statuses"] == "converged/converged"
    assert cells.loc[("pre", 18), "sd_final_valid_loss"] == pytest.approx(0.1414, abs=1e-4)
    assert phase_cells(table, None, "layers", "warmup").set_index("layers").loc[18, "failed"] == 2


def test_the_phase_diagram_takes_the_sweeps_axes_or_its_phase():
    p = expanded(with_sweep())
    assert p.sweeps.sweep_phase_axes("lab") == ("norm", "layers", "warmup")
    p = expanded(with_sweep({**LAB, "axes": {"layers": [2, 4], "lr": [1e-3]}}))
    assert p.sweeps.sweep_phase_axes("lab") == (None, "layers", "lr")
    sweep = {**LAB, "axes": {**LAB["axes"], "adam_beta2": [0.98]}, "phase": {"facet": "norm", "y": "layers", "x": "lr"}}
    assert "config: sweeps.lab.phase.x: 'lr' is not an axis of the sweep" in refusal_before_any_job(with_sweep(sweep))
    four = expanded(with_sweep({**LAB, "axes": {**LAB["axes"], "adam_beta2": [0.98]}}))
    assert "needs `phase: {facet, y, x}`" in refusal(lambda: four.sweeps.sweep_phase_axes("lab"))


def test_the_phase_diagram_says_what_failed_means_and_its_spec_carries_the_threshold():
    assert failed_words(7.0) == "diverged, or final valid loss >= 7 bits"
    assert failed_words(None).startswith("diverged (no converged_below")
    p = expanded(with_sweep())  # the demo's admin.converged_below, as the sweep sets none
    assert json.loads(p.sweeps.sweep_phase_spec(type("W", (), {"sweep": "lab"})()))["converged_below"] == 7.0


# ---- the lab's claims (config/claims.yaml's `lab` and `lab_fn`): their own table, results/lab_claims.md ----
def lab_table(losses, key="norm"):
    """A sweep table: {value: final valid loss} at every depth x warm-up x seed, status by 7.0 bits."""
    rows = [{"run": f"r_{v}_{layers}_{warmup}_{seed}", key: v, "layers": layers, "warmup": warmup, "seed": seed,
             "final_valid_loss": loss(layers, warmup), "status": "converged" if loss(layers, warmup) < 7.0 else "not converged"}
            for v, loss in losses.items() for layers in (6, 18) for warmup in (0, 146) for seed in (1, 2)]
    return pd.DataFrame(rows)


def test_the_lab_claims_are_judged_apart_from_the_papers_on_the_lab_tables():
    from lnrepro.analyses.claims import evaluate
    p = expanded(copy.deepcopy(DEMO))
    lab, papers = p.claims.measured_claims(lab=True), p.claims.measured_claims()
    assert set(lab) == {"lab_deepnorm_trains_deep", "lab_tfixup_trains_without_warmup", "lab_sandwich_converges_everywhere",
                        "lab_resi_dual_beats_preln_deep", "lab_fn_rmsnorm_comparable", "lab_fn_dyt_matches_layernorm"}
    assert not set(lab) & set(papers) and len(papers) == 117  # the papers' table, no lab claim in it
    assert not any("sweeps" in f for f in p.claims.claims_inputs(None))  # rule all's claims never train the lab
    assert p.claims.lab_claims_inputs(None) == ["results/sweeps/lab.csv", "results/sweeps/lab_fn.csv"]
    tables = {"lab": lab_table({"deepnorm": lambda d, w: 6.5 if d == 6 else 7.2, "tfixup": lambda d, w: 6.0,
                                "sandwich": lambda d, w: 6.6, "resi_dual": lambda d, w: 6.2, "pre": lambda d, w: 6.4}),
              "lab_fn": lab_table({"layernorm": lambda d, w: 6.40, "rmsnorm": lambda d, w: 6.45, "dyt": lambda d, w: 6.9},
                                  key="norm_fn")}
    table = evaluate(lab, "results", tables).set_index("claim")
    assert table.loc["lab_deepnorm_trains_deep", ["ours", "paper_result"]].tolist() == [0.0, "FAIL"]  # 18 layers fail
    assert table.loc["lab_tfixup_trains_without_warmup", "paper_result"] == "PASS"
    assert table.loc["lab_sandwich_converges_everywhere", "paper_result"] == "PASS"
    assert table.loc["lab_resi_dual_beats_preln_deep", "ours"] == pytest.approx(-0.2)
    assert table.loc["lab_fn_rmsnorm_comparable", ["paper_result"]].tolist() == ["PASS"]
    assert table.loc["lab_fn_rmsnorm_comparable", "ours"] == pytest.approx(0.05)
    assert table.loc["lab_fn_dyt_matches_layernorm", ["paper_result"]].tolist() == ["FAIL"]  # 0.5 bits worse
    paper = expanded(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))  # the lab's grids at the papers' scale
    assert not any(c["paper_missing"] for c in paper.claims.measured_claims(lab=True).values())
    assert paper.claims.lab_claims_inputs(None) == ["results/sweeps/lab.csv", "results/sweeps/lab_fn.csv"]
    without = copy.deepcopy(DEMO)
    del without["sweeps"]
    assert all(c["paper_missing"].startswith("this config has no sweeps.") for c in expanded(without).claims.measured_claims(lab=True).values())
