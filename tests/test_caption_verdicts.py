"""A report caption's verdicts (lnrepro.pipeline.caption_verdicts): the figure's claims from
results/claims.csv, one line each as claims.md's "By figure" prints them, read when the report renders;
none from a claims table older than the figure, and a caption that says why there are none."""
import os

import pandas as pd
import pytest
import yaml
from docutils.core import publish_parts

from lnrepro.analyses.claims import COLUMNS
from lnrepro.pipeline.caption_verdicts import CaptionVerdicts
from workflow_helpers import ROOT, pipeline_of


def claim(name, figure, ours, result, capped=False):
    row = dict.fromkeys(COLUMNS, "")
    return {**row, "claim": name, "figure": figure, "ours": ours, "paper_value": 2.5, "paper_range": "<= |W| 3",
            "paper_result": result, "scaled_result": "", "capped": capped}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "figures").mkdir(parents=True)
    (tmp_path / "results" / "figures" / "fig9.csv").write_bytes(b"png")
    return tmp_path


def write_claims(rows):
    pd.DataFrame(rows, columns=[*COLUMNS, "capped"]).to_csv("results/claims.csv", index=False)
    later = os.path.getmtime("results/figures/fig9.csv") + 10
    os.utime("results/claims.csv", (later, later))


def html(verdicts):
    body = publish_parts(str(verdicts), writer_name="html")["body"]
    assert "system-message" not in body, body
    return body


def test_a_figures_claims_are_its_verdict_lines_and_no_other_figures(workdir):
    write_claims([claim("a_claim", "fig9", 1.23456, "PASS"), claim("b_claim", "§3.9", 7.0, "FAIL"),
                  claim("other", "fig1", 0.5, "FAIL")])
    body = html(CaptionVerdicts(["fig9", "§3.9"], ["results/figures/fig9.csv"]))
    assert "- a_claim: ours 1.23 (paper 2.5, range &lt;= |W| 3): PASS" in body  # |W| as text, not markup
    assert "- b_claim: ours 7 (paper 2.5, range &lt;= |W| 3): FAIL" in body
    assert "other" not in body and "CAPPED" not in body
    assert repr(CaptionVerdicts(["fig9"], [])) == "CaptionVerdicts(fig9)"  # no file read: not a params trigger


def test_a_capped_build_says_its_verdicts_are_not_results(workdir):
    write_claims([claim("a_claim", "fig9", 1.0, "PASS", capped=True)])
    assert "CAPPED build (training_cap)" in html(CaptionVerdicts(["fig9"], ["results/figures/fig9.csv"]))


def test_no_verdicts_from_a_claims_table_older_than_the_figure(workdir):
    write_claims([claim("a_claim", "fig9", 1.0, "PASS")])
    os.utime("results/figures/fig9.csv")  # the figure's numbers made again after the claims were judged
    os.utime("results/claims.csv", (1, 1))
    body = html(CaptionVerdicts(["fig9"], ["results/figures/fig9.csv"]))
    assert "a_claim" not in body and "is older than" in body and "results/figures/fig9.csv" in body


def test_a_caption_says_why_it_has_no_verdicts(workdir):
    assert "not built yet" in html(CaptionVerdicts(["fig9"], ["results/figures/fig9.csv"]))
    write_claims([claim("other", "fig1", 0.5, "FAIL")])
    assert "no claim of" in html(CaptionVerdicts(["fig9"], ["results/figures/fig9.csv"]))


def test_the_labs_figures_read_the_labs_claims_table(workdir):
    write_claims([claim("papers", "fig9", 1.0, "PASS")])
    lab = pd.read_csv("results/claims.csv").assign(claim="lab_claim")
    lab.to_csv("results/lab_claims.csv", index=False)
    body = html(CaptionVerdicts(["fig9"], [], claims_csv="results/lab_claims.csv"))
    assert "- lab_claim: ours 1" in body and "papers" not in body and "results/lab_claims.md" in body


class Wildcards(dict):  # as a job's wildcards: by attribute and .items()
    __getattr__ = dict.__getitem__


def test_only_the_files_the_claims_read_can_make_them_stale():
    """fig4 plots the BLEU of runs no claim reads: a fresh build may decode them after the claims table
    is made, and its verdicts still judge fig4's claims' numbers (a CI run showed none for fig4)."""
    p = pipeline_of(yaml.safe_load((ROOT / "config" / "demo.yaml").read_text()))
    p.validate()
    wildcards = Wildcards(fig="fig4")
    inputs = p.figures.figure_inputs(wildcards)
    files = [f for v in inputs.values() for f in ([v] if isinstance(v, str) else v)]
    judged = set(p.claims.claims_inputs(wildcards))
    unread = [f for f in files if f not in judged]
    assert "results/eval/wmt_preln_7e-4_nowarm/bleu.csv" in unread  # fig4 shows it; no claim reads it
    verdicts = p.claims.caption_verdicts("{fig}")(wildcards, files, ["results/figures/fig4.pdf", "results/figures/fig4.csv"])
    assert verdicts.figures == ("fig4",) and verdicts.claims_csv == "results/claims.csv"
    assert set(verdicts.made) == set(files) & judged and verdicts.made and not set(verdicts.made) & set(unread)
    lab = p.claims.caption_verdicts("{sweep}", lab=True)(Wildcards(sweep="lab"), ["results/sweeps/lab.csv"], [])
    assert lab.claims_csv == "results/lab_claims.csv" and lab.made == ("results/sweeps/lab.csv",)
