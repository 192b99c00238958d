"""One checkout, two configs (issue 44): a run of one config never overwrites the results another
config's run wrote there; it stops before any job, naming them and the way out
(lnrepro.pipeline.ownership)."""
import hashlib
import json

import pytest
import yaml

from lnrepro.pipeline import ownership
from workflow_helpers import ROOT, snakemake, workflow_copy

THEORY = "results/figures/theory.pdf"


# ---- the ledger, without Snakemake ----------------------------------------------------------------
def test_a_config_is_named_by_its_first_configfile_relative_to_the_working_directory(tmp_path):
    assert ownership.config_name([], tmp_path) == "config/demo.yaml"
    assert ownership.config_name([str(tmp_path / "config" / "config.yaml"), "edits.yaml"], tmp_path) == \
        "config/config.yaml"


def test_only_another_configs_output_that_holds_something_conflicts(tmp_path):
    (tmp_path / "results/figures").mkdir(parents=True)
    (tmp_path / "results/figures/fig4.pdf").write_text("demo's")
    (tmp_path / "results/train/run_b/checkpoints").mkdir(parents=True)  # a training stopped before its metrics
    ledger = {"results/figures/fig4.pdf": "config/demo.yaml", "results/figures/fig2.pdf": "config/demo.yaml",
              "results/train/run_b/metrics.csv": "config/demo.yaml", "results/claims.csv": "config/config.yaml"}
    planned = [("plot_figure", "results/figures/fig4.pdf"), ("plot_figure", "results/figures/fig2.pdf"),
               ("train", "results/train/run_b/metrics.csv"), ("claims", "results/claims.csv"),
               ("plot_figure", "results/figures/new.pdf")]
    # fig2's file is gone (nothing to lose), claims.csv is its own, new.pdf nobody's
    assert ownership.conflicts(planned, "config/config.yaml", ledger, tmp_path) == [
        ("results/figures/fig4.pdf", "config/demo.yaml"), ("results/train/run_b/metrics.csv", "config/demo.yaml")]
    assert ownership.conflicts(planned, "config/demo.yaml", ledger, tmp_path) == []


def test_a_refused_claim_records_nothing_and_an_accepted_one_records_every_output(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    ownership.claim([("r", "a.txt")], [], tmp_path)
    with pytest.raises(ownership.OtherConfigsResults, match=r"(?s)would overwrite 1 result\(s\).*a.txt"):
        ownership.claim([("r", "a.txt"), ("r", "b.txt")], ["other.yaml"], tmp_path)
    assert ownership.read_ledger(tmp_path) == {"a.txt": "config/demo.yaml"}
    ownership.claim([("r", "b.txt")], ["other.yaml"], tmp_path)
    assert ownership.read_ledger(tmp_path) == {"a.txt": "config/demo.yaml", "b.txt": "other.yaml"}


def test_an_unreadable_ledger_stops_the_run_instead_of_protecting_nothing(tmp_path):
    (tmp_path / ownership.LEDGER).parent.mkdir(parents=True)
    (tmp_path / ownership.LEDGER).write_text("{not json")
    with pytest.raises(ownership.OtherConfigsResults, match="owners.json: unreadable"):
        ownership.claim([("r", "a.txt")], [], tmp_path)


# ---- two configs in one checkout, for real ----------------------------------------------------------
def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def theory_config(path, seeds):
    cfg = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    cfg["theory"].update(seeds=seeds, depths=[2, 4], sequences=4, positions=4)
    path.write_text(yaml.safe_dump(cfg))
    return path.name


@pytest.mark.medium
def test_a_second_config_cannot_overwrite_the_firsts_results_in_one_checkout(tmp_path):
    """The first config builds its theory figure; a second config (another file) planning the same
    paths is refused before any job, the first's figure byte for byte intact; the first config edited
    and rerun replaces its own; once those results are deleted, the second builds."""
    workflow_copy(tmp_path)
    first, second = theory_config(tmp_path / "first.yaml", 2), theory_config(tmp_path / "second.yaml", 3)
    snakemake(tmp_path, THEORY, "--cores", "1", "--configfile", first)
    before = digest(tmp_path / THEORY)

    proc = snakemake(tmp_path, THEORY, "--cores", "1", "--configfile", second, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "this run (second.yaml) would overwrite 4 result(s) of another config (first.yaml)" in out
    assert f"{THEORY} (written by first.yaml)" in out and "git worktree add" in out
    assert "Traceback" not in out and "rule check_theory:" not in out  # no job started
    assert digest(tmp_path / THEORY) == before

    theory_config(tmp_path / "first.yaml", 3)  # an edit of the first config: its own results, rerun
    snakemake(tmp_path, THEORY, "--cores", "1", "--configfile", first)
    assert digest(tmp_path / THEORY) != before

    for path in (tmp_path / "results" / "figures").glob("theory*"):
        path.unlink()
    snakemake(tmp_path, THEORY, "--cores", "1", "--configfile", second)
    ledger = json.loads((tmp_path / ownership.LEDGER).read_text())
    assert ledger[THEORY] == "second.yaml"
