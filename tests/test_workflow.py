"""The Snakemake workflow: config validation, lint, and the whole demo DAG end to end.

The end-to-end test runs the demo exactly as the README's quick start does (in a scratch copy
of the workflow) and asserts the papers' effects on the pipeline's own numbers.
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def workflow_copy(dest):
    """Snakefile, workflow/, config/ and envs/ (rules name their conda env) in a scratch directory."""
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    for d in ("workflow", "config", "envs"):
        shutil.copytree(ROOT / d, dest / d)
    return dest


def snakemake(workdir, *args, check=True):
    proc = subprocess.run(SNAKEMAKE + list(args), cwd=workdir, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def demo_config():
    return yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())


def write_config(workdir, cfg, name="edited.yaml"):
    path = workdir / name
    path.write_text(yaml.safe_dump(cfg))
    return name


def planned_jobs(dry_run_output):
    """{rule: [wildcards line, ...]} of the jobs a dry run plans."""
    jobs = {}
    for block in re.split(r"\n(?=\[[^\n]*\]\nrule |rule )", dry_run_output):
        m = re.search(r"^(?:\[[^\n]*\]\n)?rule (\w+):", block, re.M)
        if m:
            wc = re.search(r"wildcards: (.*)", block)
            jobs.setdefault(m.group(1), []).append(wc.group(1) if wc else "")
    return jobs


# ---- config validation: fails before any job, naming the key ------------------------------------
@pytest.mark.parametrize("edit, expected", [
    (lambda c: c["runs"]["adam_5e-4_nowarm"].update(lrr=1e-3), "lrr"),
    (lambda c: c["runs"]["preln_5e-4_nowarm"].update(norm="preln"), "preln"),
    (lambda c: c["runs"]["adam_5e-4_nowarm"].update(lr="fast"), "fast"),
    (lambda c: c["runs"]["adam_5e-4_nowarm"].update(corpus="iwslt"), "runs.adam_5e-4_nowarm.corpus"),
    (lambda c: c["figures"]["fig2"]["panels"][0]["runs"].append("no_such_run"), "no_such_run"),
    (lambda c: c["corpora"]["deen"].update(bpe_merges="many"), "many"),
])
def test_config_error_names_the_key_before_any_job(tmp_path, edit, expected):
    workflow_copy(tmp_path)
    cfg = demo_config()
    edit(cfg)
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", write_config(tmp_path, cfg), check=False)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_lint_is_clean():
    proc = snakemake(ROOT, "--lint", check=False)
    assert "Lints for" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_paper_config_validates_against_the_schema():
    from snakemake.utils import validate
    validate(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()),
             str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))


# ---- the demo end to end ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    workdir = workflow_copy(tmp_path_factory.mktemp("demo"))
    snakemake(workdir, "--cores", "2")
    return workdir


def final(workdir, run, column):
    if column == "bleu":
        table = pd.read_csv(workdir / "results" / "eval" / run / "bleu.csv")
    else:
        table = pd.read_csv(workdir / "results" / "train" / run / "metrics.csv")
    return table[column].dropna().iloc[-1]


@pytest.mark.slow
def test_demo_builds_every_figure_with_its_table(demo):
    cfg = demo_config()
    for fig, spec in cfg["figures"].items():
        pdf = demo / "results" / "figures" / f"{fig}.pdf"
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000
        table = pd.read_csv(demo / "results" / "figures" / f"{fig}.csv")
        for panel in spec["panels"]:
            assert set(panel["runs"]) <= set(table.run)
    for run, settings in cfg["runs"].items():
        bleu = pd.read_csv(demo / "results" / "eval" / run / "bleu.csv")
        metrics = pd.read_csv(demo / "results" / "train" / run / "metrics.csv")
        assert list(bleu.epoch) == list(metrics.epoch[metrics.diverged == 0])
        assert bleu.signature.str.contains("tok:none").all()
        assert (demo / "logs" / "train" / f"{run}.log").stat().st_size > 0


@pytest.mark.slow
def test_demo_shows_post_ln_needs_warmup(demo):
    """Xiong et al. Fig 2(a): without warm-up, Post-LN at the large lr ends clearly worse."""
    no_warm = final(demo, "adam_1e-3_nowarm", "bleu")
    warm = final(demo, "adam_1e-3_warm4000", "bleu")
    assert warm - no_warm >= 10, (no_warm, warm)
    assert final(demo, "adam_1e-3_nowarm", "valid_loss") - final(demo, "adam_1e-3_warm4000", "valid_loss") >= 1.0


@pytest.mark.slow
def test_demo_shows_pre_ln_without_warmup_matches_post_ln_sooner(demo):
    """Xiong et al. Fig 4(a,b): Pre-LN without warm-up ends at least as well, and gets there sooner."""
    post = pd.read_csv(demo / "results" / "train" / "adam_5e-4_warm4000" / "metrics.csv")
    pre = pd.read_csv(demo / "results" / "train" / "preln_5e-4_nowarm" / "metrics.csv")
    assert final(demo, "preln_5e-4_nowarm", "bleu") >= final(demo, "adam_5e-4_warm4000", "bleu")
    assert pre.valid_loss.iloc[-1] <= post.valid_loss.iloc[-1]
    reached = pre.epoch[pre.valid_loss <= post.valid_loss.iloc[-1]].min()
    assert reached < post.epoch.iloc[-1], (reached, post.epoch.iloc[-1])


@pytest.mark.slow
def test_demo_shows_sgd_below_adam(demo):
    best_sgd = max(final(demo, r, "bleu") for r in ("sgd_5e-3_warm4000", "sgd_5e-3_nowarm", "sgd_1e-3_warm4000"))
    assert final(demo, "adam_5e-4_warm4000", "bleu") - best_sgd >= 10


@pytest.mark.slow
def test_editing_one_runs_lr_plans_only_that_run(demo):
    cfg = demo_config()
    cfg["runs"]["adam_5e-4_warm500"]["lr"] = 6e-4
    out = snakemake(demo, "-n", "--cores", "2", "--configfile", write_config(demo, cfg)).stdout
    jobs = planned_jobs(out)
    assert jobs.get("train") == ["run=adam_5e-4_warm500"]
    assert jobs.get("evaluate") == ["run=adam_5e-4_warm500"]
    assert jobs.get("plot_figure") == ["fig=fig2"]
    assert not {"tokenize", "bpe_learn", "binarize"} & set(jobs)


@pytest.mark.slow
def test_editing_the_beam_reruns_evaluation_not_training(demo):
    cfg = demo_config()
    cfg["corpora"]["deen"]["decode"]["beam"] = 3
    out = snakemake(demo, "-n", "--cores", "2", "--configfile", write_config(demo, cfg)).stdout
    jobs = planned_jobs(out)
    deen_runs = {f"run={r}" for r, s in cfg["runs"].items() if s.get("corpus", "deen") == "deen"}
    assert "train" not in jobs
    assert set(jobs["evaluate"]) == deen_runs
    assert sorted(jobs["plot_figure"]) == ["fig=fig2", "fig=fig4", "fig=figS1"]


@pytest.mark.slow
def test_nothing_to_do_after_the_demo(demo):
    out = snakemake(demo, "-n", "--cores", "2").stdout
    assert "Nothing to be done" in out
