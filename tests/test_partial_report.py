"""`snakemake --report` after a partial build (docs/papers.md, "Fig 3, the theory checks, the claims
table and the report"): without targets it reports on rule all and stops at the first figure not built;
naming the built targets reports on those, and a browser shows the figure's preview (its PNG: a PDF
there is blank). One cheap figure (the theory checks, ~10-30 s)."""
import subprocess
import sys

import pytest
import yaml
from docutils.core import publish_parts

import browser
from lnrepro.pipeline import rst_literal
from workflow_helpers import ROOT, report_captions, snakemake, workflow_copy

ON_DISK = "$(ls results/figures/*.pdf results/tables/*.csv results/claims.csv 2>/dev/null)"  # docs/papers.md's


@pytest.fixture(scope="module")
def theory_report(tmp_path_factory):
    """A build of the theory figure alone, and its report."""
    workdir = workflow_copy(tmp_path_factory.mktemp("partial"))
    snakemake(workdir, "results/figures/theory.pdf", "--cores", "2")
    everything = snakemake(workdir, "--report", "report.html", check=False)
    assert everything.returncode != 0 and not (workdir / "report.html").exists()
    assert "marked for report but does not exist" in everything.stdout + everything.stderr
    snakemake(workdir, "results/figures/theory.pdf", "--report", "report.html")
    return workdir


@pytest.mark.medium
def test_report_on_a_partial_build_names_its_targets(theory_report):
    workdir = theory_report
    html = (workdir / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "theory.png" in html and "theory_checks.csv" in html
    assert "fig2.png" not in html  # what was not built is not in it
    caption = report_captions(workdir / "report.html")["results/figures/theory.png"]  # no claims table yet
    assert "Verdicts of its claims" in caption and "not built yet" in caption
    # docs/papers.md's form: every figure, table and claims table on disk
    subprocess.run(f"{sys.executable} -m snakemake {ON_DISK} --report on_disk.html", shell=True, cwd=workdir,
                   check=True, capture_output=True)
    assert "theory_checks.csv" in (workdir / "on_disk.html").read_text(encoding="utf-8", errors="replace")


@pytest.mark.medium
def test_the_reports_figure_preview_shows_in_headless_chromium(theory_report, tmp_path):
    previews = browser.report_previews(theory_report / "report.html", tmp_path)
    shown = previews["results/figures/theory.png"]
    assert shown["mime"] == "image/png" and shown["width"] > 400 and shown["shown_width"] > 0, shown
    assert shown["drawn"] > 0.01, shown  # drawn, not blank
    assert set(previews) == {"results/figures/theory.png"}  # the tables are downloaded, not previewed


@pytest.mark.medium
def test_config_text_reaches_a_report_caption_as_literal_text(tmp_path):
    """A figure's `paper:` text is the user's, not the report's markup (issue 42): `.. raw:: html` put a
    <script> into report.html and `.. include::` a file's content. Each caption now shows the text as
    written (lnrepro.pipeline.rst_literal, as Snakemake renders captions: docutils' HTML)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT-71\n")
    hostile = (f"MARKER-42 |W_2 - W_1| *not bold* `code`_\n\n.. raw:: html\n\n   <script>alert(1)</script>\n\n"
               f".. include:: {secret}\n")
    body = publish_parts(f"**The paper reports:** {rst_literal(hostile)}", writer_name="html")["body"]
    assert "<script>" not in body and "SECRET-CONTENT-71" not in body and "system-message" not in body, body
    assert "MARKER-42 |W_2 - W_1| *not bold* `code`_ .. raw:: html &lt;script&gt;alert(1)&lt;/script&gt;" in body
    # and through Snakemake's report of a real build
    (tmp_path / "work").mkdir()
    workdir = workflow_copy(tmp_path / "work")
    cfg = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    cfg["theory"]["paper"] = hostile
    (workdir / "hostile.yaml").write_text(yaml.safe_dump(cfg))
    snakemake(workdir, "results/figures/theory.pdf", "--cores", "2", "--configfile", "hostile.yaml")
    snakemake(workdir, "results/figures/theory.pdf", "--report", "report.html", "--configfile", "hostile.yaml")
    html = (workdir / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "MARKER-42" in html and "SECRET-CONTENT-71" not in html and "alert(1)</script>" not in html
