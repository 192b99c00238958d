"""`snakemake --report` after a partial build (README "Fig 3, the theory checks, the claims table
and the report"): without targets it reports on rule all and stops at the first figure not built;
naming the built targets reports on those. One cheap figure (the theory checks, ~10-30 s)."""
import subprocess
import sys

from workflow_helpers import snakemake, workflow_copy

ON_DISK = "$(ls results/figures/*.pdf results/tables/*.csv results/claims.csv 2>/dev/null)"  # the README's


def test_report_on_a_partial_build_names_its_targets(tmp_path):
    workdir = workflow_copy(tmp_path)
    snakemake(workdir, "results/figures/theory.pdf", "--cores", "2")
    everything = snakemake(workdir, "--report", "report.html", check=False)
    assert everything.returncode != 0 and not (workdir / "report.html").exists()
    assert "marked for report but does not exist" in everything.stdout + everything.stderr
    snakemake(workdir, "results/figures/theory.pdf", "--report", "report.html")
    html = (workdir / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "theory.pdf" in html and "theory_checks.csv" in html
    assert "fig2.pdf" not in html  # what was not built is not in it
    # the README's form: every figure, table and claims table on disk
    subprocess.run(f"{sys.executable} -m snakemake {ON_DISK} --report on_disk.html", shell=True, cwd=workdir,
                   check=True, capture_output=True)
    assert "theory_checks.csv" in (workdir / "on_disk.html").read_text(encoding="utf-8", errors="replace")
